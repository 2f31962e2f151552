"""A deck's hold on the cassette it writes: the lock, the header, one line per call, the end.

The deck decides what a mode opens (``record`` starts a file, ``append`` and ``resume``
continue one); this module does it: it takes ``<cassette>.lock`` so that no second writer
gets in, starts or continues the file, writes each call's line, and ends with the end line
(``close``) or without it, as a killed process would (``abandon``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping

from . import _config
from ._cassette import Durability, Entry, Header, Recording, Writer
from ._errors import CassetteLocked
from ._lockfile import Held, LockFile

# Environment variables whose values change how a recorded run behaves; hashed in the header.
_HEADER_ENV = ("LANG", "TZ", "PYTHONHASHSEED")


def hash_value(value: str) -> str:
    """A short, stable stand-in for a value that must not be stored in clear."""
    return "sha256:" + hashlib.sha256(value.encode()).hexdigest()[:16]


def make_header(
    *, match: str, root: str, environ: Mapping[str, str], volatile: Iterable[str]
) -> Header:
    """The header of a new cassette.

    Args:
        match: the deck's matching, ``keyed`` or ``strict``.
        root: the project root whose git commit is recorded.
        environ: where ``LANG``, ``TZ`` and ``PYTHONHASHSEED`` are read (and hashed).
        volatile: the fields normalized away before keys are made.
    """
    env = {name: hash_value(environ[name]) for name in _HEADER_ENV if name in environ}
    return Header(
        match=match,
        harness=_config.harness(root),
        env=env,
        volatile=tuple(sorted(volatile)),
    )


class CassetteSession:
    """The lock and the writer of one cassette, from opening to the end line.

    Not thread-safe on its own: the deck calls it under its lock.

    Args:
        path: the cassette file.
        durability: ``flush`` or ``fsync`` each line before the call returns.
    """

    __slots__ = ("_durability", "_file_calls", "_file_lock", "_writer", "path")

    def __init__(self, path: str, *, durability: Durability) -> None:
        self.path = path
        self._durability: Durability = durability
        self._writer: Writer | None = None
        self._file_lock: LockFile | None = None
        self._file_calls = 0

    @property
    def writing(self) -> bool:
        """Whether a call's line goes to the file (the cassette was started or continued)."""
        return self._writer is not None

    def lock(self) -> None:
        """Take ``<cassette>.lock``; hold it until ``close``, ``abandon`` or ``release``.

        Raises:
            CassetteLocked: another writer holds it.
        """
        lock = LockFile(self.path + ".lock")
        try:
            lock.acquire()
        except Held:
            raise CassetteLocked(
                self.path,
                None,
                f"another process is writing it (lock {self.path}.lock is held)",
                "wait for that run to finish; the lock goes away when its process ends",
            ) from None
        self._file_lock = lock

    def start(self, header: Header) -> None:
        """Start the file afresh with ``header``, replacing whatever was there."""
        self._writer = Writer(self.path, header=header, durability=self._durability)

    def extend(self, recording: Recording) -> None:
        """Continue the file after ``recording``, dropping a truncated last line."""
        self._file_calls = len(recording.entries)
        keep = recording.valid_bytes if recording.truncated_line else None
        self._writer = Writer(self.path, header=None, keep_bytes=keep, durability=self._durability)

    def write(self, entry: Entry) -> None:
        """Append one call's line; nothing when the session does not write."""
        if self._writer is None:
            return
        self._writer.write(entry.to_json())
        self._file_calls += 1

    def close(self, status: str) -> None:
        """Write the end line (when writing), close the file and release the lock."""
        if self._writer is not None:
            self._writer.write({"end": {"calls": self._file_calls, "status": status}})
            self._writer.close()
        self.release()

    def abandon(self) -> None:
        """Close the file without an end line, as a killed process would, and release it."""
        if self._writer is not None:
            self._writer.close()
        self.release()

    def release(self) -> None:
        """Let go of the lock, if held."""
        if self._file_lock is not None:
            self._file_lock.release()
            self._file_lock = None
