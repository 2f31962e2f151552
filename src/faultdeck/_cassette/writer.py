"""Writing cassettes: one unbuffered write per line, compaction, and an atomic replace.

A run writes into a working file: the cassette itself when it continues one in place
(``append``, ``resume``), or a partial file beside it when it records afresh, so that a run
that fails never destroys a good cassette. On a clean close the working file is compacted
(its ``begin`` and ``abort`` lines dropped, every other line kept as it was, the end line
put last) into a temporary file that one ``os.replace`` moves over the cassette: a reader sees
the old cassette or the new one, never half of either.

Every failure of the disk (full, over the file size limit, not writable) is raised as
``CassetteWriteError``, naming the file and what to do.
"""

from __future__ import annotations

import contextlib
import errno
import os
import tempfile
import threading
from typing import Any

import orjson

from .._base.errors import CassetteWriteError
from .format import Header

_DROPPED = (b'{"begin":', b'{"abort":')


def dumps_line(obj: Any) -> bytes:
    """One cassette line: compact JSON and a newline."""
    return orjson.dumps(obj, option=orjson.OPT_APPEND_NEWLINE)


def partial_path(path: str) -> str:
    """Where a fresh recording of ``path`` is written until it closes cleanly:
    ``runs/base.jsonl`` → ``runs/base.partial.jsonl``."""
    root, ext = os.path.splitext(path)
    return f"{root}.partial{ext}"


def write_error(path: str, exc: OSError) -> CassetteWriteError:
    """The ``CassetteWriteError`` for an ``OSError`` met writing ``path``."""
    code = exc.errno
    if code in (errno.ENOSPC, errno.EDQUOT):
        hint = "the disk is full: free some space, then record again"
    elif code == errno.EFBIG:
        hint = "the file size limit was reached (ulimit -f): raise it, then record again"
    elif code in (errno.EACCES, errno.EPERM, errno.EROFS):
        hint = "the folder is not writable: check its permissions, or record elsewhere"
    else:
        hint = "check the disk, then record again"
    detail = exc.strerror or str(exc)
    return CassetteWriteError(path, None, f"cannot be written ({detail})", hint)


class Writer:
    """Appends whole lines to a cassette, one unbuffered write per line.

    Args:
        path: the file.
        header: written first when starting a fresh file; ``None`` to append to an
            existing one.
        keep_bytes: when appending, the file is cut to this length first (dropping a
            truncated last line); ``None`` keeps it whole.
        durability: ``flush`` writes each line through to the OS; ``fsync`` also syncs
            it to the disk before the call returns.

    Raises:
        CassetteWriteError: the file cannot be created or opened for writing.
    """

    def __init__(
        self,
        path: str,
        *,
        header: Header | None,
        keep_bytes: int | None = None,
        durability: str = "flush",
    ) -> None:
        self.path = path
        self._fsync = durability == "fsync"
        self._lock = threading.Lock()
        try:
            parent = os.path.dirname(path)
            if parent:
                os.makedirs(parent, exist_ok=True)
            if header is not None:
                self._file = _created(path, dumps_line(header.to_json()))
            else:
                self._file = open(path, "r+b", buffering=0)  # noqa: SIM115 - closed by close()
                if keep_bytes is not None:
                    self._file.truncate(keep_bytes)
                self._file.seek(0, os.SEEK_END)
        except OSError as exc:
            raise write_error(path, exc) from None

    def write(self, obj: Any, *, sync: bool | None = None) -> None:
        """Append one line holding ``obj``; synced to the disk as the durability says, or
        as ``sync`` says when it is given (only with ``fsync`` durability: an intent that
        must be on the disk before a side effect runs, and the others that need not)."""
        line = orjson.dumps(obj, option=orjson.OPT_APPEND_NEWLINE)  # dumps_line, a frame less
        with self._lock:
            try:
                written = self._file.write(line)
                if written != len(line):  # a short write (a signal, a full pipe): the rest
                    view = memoryview(line)[written or 0 :]
                    while view:
                        written = self._file.write(view)
                        view = view[written or 0 :]
                if self._fsync and sync is not False:
                    os.fsync(self._file.fileno())
            except OSError as exc:
                raise write_error(self.path, exc) from None

    def close(self, *, sync: bool = False) -> None:
        """Close the file (syncing it first when asked); later writes fail."""
        with self._lock:
            try:
                if sync and not self._file.closed:
                    os.fsync(self._file.fileno())
            except OSError as exc:
                raise write_error(self.path, exc) from None
            finally:
                self._file.close()


def _created(path: str, header: bytes) -> Any:
    """``path`` created with its header line already in it, opened for appending: the file
    appears whole, so a kill never leaves a cassette without its header."""
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path) or ".", prefix=".faultdeck-")
    try:
        os.write(fd, header)
        os.fchmod(fd, 0o644)
        os.replace(tmp, path)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return os.fdopen(fd, "ab", buffering=0)


def finish(working: str, target: str, end: dict[str, Any], *, compact: bool) -> None:
    """Put the finished run in ``working`` at ``target`` with its end line, atomically.

    Args:
        working: the file the run wrote (its end line not yet written).
        target: the cassette; may be ``working`` itself.
        end: the end line's object.
        compact: drop ``begin`` and ``abort`` lines first.

    Raises:
        CassetteWriteError: the disk refused; ``target`` is then as it was.
    """
    folder = os.path.dirname(target) or "."
    try:
        if not compact and working != target:
            with open(working, "ab", buffering=0) as fh:
                fh.write(dumps_line({"end": end}))
                os.fsync(fh.fileno())
            os.replace(working, target)
        else:
            _rewrite(working, target, end, folder)
        _sync_folder(folder)
    except OSError as exc:
        raise write_error(target, exc) from None


def _rewrite(working: str, target: str, end: dict[str, Any], folder: str) -> None:
    with open(working, "rb") as fh:
        lines = fh.read().split(b"\n")
    kept = [line for line in lines[1:] if line and not line.startswith(_DROPPED)]
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".faultdeck-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(lines[0] + b"\n")
            for line in kept:
                out.write(line + b"\n")
            out.write(dumps_line({"end": end}))
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    if working != target:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(working)


def _sync_folder(folder: str) -> None:
    # The rename itself reaches the disk only when the folder is synced (POSIX).
    if not hasattr(os, "O_DIRECTORY"):  # pragma: no cover - not POSIX
        return
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
