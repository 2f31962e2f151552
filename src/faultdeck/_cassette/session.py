"""A deck's hold on the cassette it writes: the lock, the working file, the intents, the end.

The deck decides what a mode opens; this module does it. It takes ``<cassette>.lock`` on
the cassette's resolved path (so a second writer through a symlink is refused too), and
writes into a working file: a fresh recording over an existing cassette goes to
``<name>.partial.jsonl`` beside it and replaces it only when the run closes cleanly, so a
run that fails, or is killed, leaves the old cassette as it was and the new one beside it
for ``resume``; a first recording, with nothing to protect, is written in place; ``append``
and ``resume`` continue the file they found. Each live call gets a ``begin``
line before it runs (its intent), each finished call its line; ``close`` ends the file,
``abandon`` leaves it as a killed process would. A write the disk refuses stops the session
and lets go of the lock.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import logging
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from .._base import config as _config
from .._base import terms
from .._base.errors import CassetteLocked, CassetteWriteError, FaultdeckError
from . import store
from .format import Entry, Header, Recording
from .lock import Held, LockFile
from .reader import load, parse
from .writer import Writer, finish, partial_path

# Environment variables whose values change how a recorded run behaves; hashed in the header.
_HEADER_ENV = ("LANG", "TZ", "PYTHONHASHSEED")

log = logging.getLogger("faultdeck")


def hash_value(value: str) -> str:
    """A short, stable stand-in for a value that must not be stored in clear."""
    return "sha256:" + hashlib.sha256(value.encode()).hexdigest()[:16]


def make_header(
    *,
    match: str,
    root: str,
    environ: Mapping[str, str],
    volatile: Iterable[str],
    parent: Mapping[str, Any] | None = None,
) -> Header:
    """The header of a new cassette.

    Args:
        match: the deck's matching, ``keyed`` or ``strict``.
        root: the project root whose git commit is recorded.
        environ: where ``LANG``, ``TZ`` and ``PYTHONHASHSEED`` are read (and hashed).
        volatile: the field names whose values the answers store as placeholders
            (``Normalizer.output_volatile``); diffs ignore them.
        parent: a fork's ``{"path", "at", "sha256"}``: the cassette it replayed its first
            calls from, up to which seq, and the sha256 of that file's bytes.
    """
    env = {name: hash_value(environ[name]) for name in _HEADER_ENV if name in environ}
    return Header(
        match=match,
        harness=_config.harness(root),
        env=env,
        volatile=tuple(sorted(volatile)),
        extra={"parent": dict(parent)} if parent is not None else {},
    )


def load_hashed(path: str) -> tuple[Recording, str]:
    """Read a cassette and the sha256 (hex) of the very bytes it was read from: a fork
    names its parent by both, so a parent rewritten since is told apart.

    Raises:
        The errors of ``reader.load``.
    """
    try:
        data = store.read_bytes(path) if store.is_url(path) else Path(path).read_bytes()
    except OSError:
        load(path)  # raises the error load names (no such cassette, a directory…)
        raise
    return parse(data, path), hashlib.sha256(data).hexdigest()


def file_sha256(path: str) -> str | None:
    """The sha256 (hex) of a cassette's bytes, or ``None`` when it cannot be read."""
    try:
        data = store.read_bytes(path) if store.is_url(path) else Path(path).read_bytes()
    except (OSError, FaultdeckError):
        return None
    return hashlib.sha256(data).hexdigest()


class CassetteSession:
    """The lock and the working file of one cassette, from opening to the end line.

    Not thread-safe on its own: the deck calls it under its lock.

    Args:
        path: the cassette file, as the caller named it (for messages).
        durability: ``flush`` or ``fsync`` each line before the call returns.
        replace: on a clean close, move a fresh recording over the cassette; ``False``
            leaves it finished in its partial file, for a caller that decides later (the
            command line, once it knows the program's exit status).

    Attributes:
        path: the cassette file, as given.
        real: its resolved path, where the lock and the files are.
        working: the file being written, once started.
        kept: the partial file left beside the cassette after a run that did not close
            cleanly, if any.
    """

    def __init__(self, path: str, *, durability: str, replace: bool = True) -> None:
        self.path = path
        # Resolved when first needed (a replay never is): against the folder it names now.
        self._absolute = os.path.abspath(path)
        self.working: str | None = None
        self.kept: str | None = None
        self._durability = durability
        self._replace = replace
        self._writer: Writer | None = None
        self._file_lock: LockFile | None = None
        self._file_calls = 0
        self._first_call = 0  # the file's lines before this run's first call
        self._rules: str | None = None
        self._compact = False
        self._failed: CassetteWriteError | None = None

    @functools.cached_property
    def real(self) -> str:
        """The cassette's resolved path, where the lock and the files are."""
        return os.path.realpath(self._absolute)

    @property
    def writing(self) -> bool:
        """Whether a call's line goes to the file (the cassette was started or continued)."""
        return self._writer is not None

    @property
    def stored(self) -> int:
        """The calls this run wrote (a fork's copied calls and a continued file's own are
        not counted)."""
        return self._file_calls - self._first_call

    @property
    def partial(self) -> str:
        """Where a fresh recording of this cassette is written until it closes cleanly."""
        return partial_path(self.real)

    def lock(self) -> None:
        """Take ``<cassette>.lock``; hold it until ``close``, ``abandon`` or ``release``.

        Raises:
            CassetteLocked: another writer holds it.
            CassetteWriteError: the lock file cannot be created.
        """
        lock = LockFile(self.real + ".lock")
        try:
            lock.acquire()
        except Held:
            raise CassetteLocked(
                self.path,
                None,
                f"another process is writing it (lock {self.real}.lock is held)",
                "wait for that run to finish; the lock goes away when its process ends",
            ) from None
        except OSError as exc:
            raise CassetteWriteError(
                self.path,
                None,
                f"cannot take its lock {self.real}.lock ({exc.strerror or exc})",
                "the folder is not writable: check its permissions, or record elsewhere",
            ) from None
        self._file_lock = lock

    def start(
        self,
        header: Header,
        *,
        beside: bool,
        entries: Iterable[Entry] = (),
        rules: str | None = None,
    ) -> None:
        """Start a fresh recording with ``header``: in the cassette's place when there is
        none yet, else (``beside``) in the partial file, which replaces it on a clean close.
        ``entries`` are its first lines (a fork's calls copied from its parent). ``rules``:
        the normalization rules its calls are keyed under with their args as stored, for
        its end line (``Recording.rules``), unless a call written says otherwise.

        Raises:
            CassetteWriteError: the disk refused; the session stops and lets go of the lock.
        """
        self.working = self.partial if beside else self.real
        self._writer = Writer(self.working, header=header, durability=self._durability)
        self._rules = rules
        for entry in entries:
            self.write(entry.to_json())
        self._first_call = self._file_calls

    def extend(self, recording: Recording, *, rules: str | None = None) -> None:
        """Continue ``recording``'s file after its last whole line; ``rules`` as ``start``
        takes them (``None`` unless the file's calls so far were keyed so under them)."""
        self._rules = rules
        self.working = os.path.realpath(recording.path)
        self._file_calls = self._first_call = len(recording.entries)
        # Intents and aborts are dropped on a clean close.
        self._compact = bool(recording.intents or recording.aborted)
        keep = recording.valid_bytes if recording.truncated_line else None
        self._writer = Writer(
            self.working, header=None, keep_bytes=keep, durability=self._durability
        )

    def write(
        self, obj: dict[str, Any], *, in_doubt: str | None = None, rekey: bool = False
    ) -> None:
        """Append one call's line; nothing when the session does not write.

        Args:
            obj: the call's line object (``Entry.to_json``, ``entry_line``).
            in_doubt: how ``resume`` resolved a call in doubt without running it
                (``skipped``), written beside it.
            rekey: a replay must normalize args like the call's again to key them (see
                ``Recording.rules``): the end line then names no rules.

        Raises:
            CassetteWriteError: the disk refused; the session stops and lets go of the lock.
        """
        if rekey:
            self._rules = None
        if in_doubt is not None:
            obj["in_doubt"] = in_doubt
        # ``_put``, a frame less: every call's line comes this way.
        writer = self._writer
        if writer is not None:
            try:
                writer.write(obj)
            except CassetteWriteError as exc:
                self._stop(exc)
                raise
        elif self._failed is not None:
            raise self._failed
        self._file_calls += 1

    def intent(self, obj: dict[str, Any], *, sync: bool = False) -> None:
        """Append a ``begin`` or ``abort`` line. With ``fsync`` durability only ``sync``
        lines (the intent of a side effect) are synced at once: the others matter only
        after a kill, which loses nothing the OS was given."""
        self._compact = True
        self._put(obj, sync=sync)

    def _put(self, obj: Any, *, sync: bool | None = None) -> None:
        if self._failed is not None:
            raise self._failed
        if self._writer is None:
            return
        try:
            self._writer.write(obj, sync=sync)
        except CassetteWriteError as exc:
            self._stop(exc)
            raise

    def _stop(self, exc: CassetteWriteError) -> None:
        self._failed = exc
        writer, self._writer = self._writer, None
        if writer is not None:
            # The file is refused already; the first error says why.
            with contextlib.suppress(CassetteWriteError):
                writer.close()
        self.release()

    def close(self, status: str, *, keep: bool = False) -> None:
        """End the file and release the lock; a fresh recording replaces the cassette only
        when ``status`` is ``ok``, else it stays in its partial file beside it. With
        ``keep`` (live calls got no answer) a fresh recording ends ``ok`` but stays beside
        the cassette all the same, in ``kept``; the caller says why.

        Raises:
            CassetteWriteError: the disk refused the end; the cassette is as it was.
        """
        writer, self._writer = self._writer, None
        try:
            if writer is None or self.working is None:
                return
            end: dict[str, Any] = {"calls": self._file_calls, "status": status}
            if self._rules is not None:
                end["rules"] = self._rules
            if status != "ok":
                try:
                    writer.write({"end": end})
                finally:
                    writer.close()
                    self._keep()
                return
            writer.close()
            fresh = self.working != self.real
            target = self.real if (self._replace and not keep) or not fresh else self.working
            try:
                finish(self.working, target, end, compact=self._compact)
            except CassetteWriteError as exc:
                self._failed = exc
                self._keep()
                raise
            if fresh and target == self.working:
                self.kept = self.working
            self.working = target
        finally:
            self.release()

    def abandon(self) -> None:
        """Close the file without an end line, as a killed process would, and release it."""
        writer, self._writer = self._writer, None
        try:
            if writer is not None:
                writer.close()
                self._keep()
        except CassetteWriteError:
            pass  # abandoning anyway
        finally:
            self.release()

    def _keep(self) -> None:
        if self.working is None or self.working == self.real:
            return
        self.kept = self.working
        old = "left as it was" if os.path.exists(self.real) else "not written"
        log.warning(
            "%s: the run did not finish cleanly, so the cassette was %s; the new recording "
            "is in %s (finish it with %s, or delete it)",
            self.path,
            old,
            self.working,
            terms.current().about(self.path).resume,
        )

    def release(self) -> None:
        """Let go of the lock, if held."""
        if self._file_lock is not None:
            self._file_lock.release()
            self._file_lock = None
