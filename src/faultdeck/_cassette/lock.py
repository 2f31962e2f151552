"""A lock file that stops two writers of one cassette, and leaves nothing behind.

On POSIX the lock is an ``flock`` on ``<cassette>.lock``; the kernel drops it when the
process dies, so a killed run never leaves a stale lock. The file is removed on release;
an acquirer that locked a file someone had just removed sees the inode change and tries
again, so removal cannot let two writers in. Elsewhere ``filelock`` does the work (and
keeps its file).
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import TYPE_CHECKING

if sys.platform != "win32":
    import fcntl
if TYPE_CHECKING:
    import filelock


class Held(Exception):
    """The lock is held by another writer."""


class LockFile:
    """An exclusive, non-blocking lock on ``path``."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._fd: int | None = None
        self._fallback: filelock.BaseFileLock | None = None

    def acquire(self) -> None:
        """Take the lock now or raise ``Held``."""
        if sys.platform == "win32":  # pragma: no cover - not POSIX
            import filelock

            lock = filelock.FileLock(self.path, timeout=0)
            try:
                lock.acquire()
            except filelock.Timeout:
                raise Held(self.path) from None
            self._fallback = lock
            return
        # The first recording into a new folder locks before the cassette is written.
        os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                raise Held(self.path) from None
            try:
                same = os.stat(self.path).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if same:
                self._fd = fd
                return
            os.close(fd)  # locked a file its holder had just removed; take the new one

    def release(self) -> None:
        """Remove the lock file and drop the lock."""
        if self._fallback is not None:  # pragma: no cover - not POSIX
            self._fallback.release()
            self._fallback = None
        if self._fd is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)
            os.close(self._fd)
            self._fd = None
