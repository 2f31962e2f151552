"""How a deck's run opens its cassette as its mode says, and how it closes it.

``replay`` reads the cassette (shared by the decks of one process: ``load_shared``);
``record``, ``fork`` and a first ``once`` start a fresh file; ``append`` and ``resume``
continue the file they find (or the partial file a run left beside it). Either way the end
line names the rules the file's calls were keyed under, when every call's args key as
stored under them (``Recording.rules``). ``close`` ends the file; ``abandon`` leaves it as
a killed process would. The ``Run`` (``run.py``) owns one ``Cassette``.
"""

from __future__ import annotations

import logging
import os
import threading
from collections import deque
from collections.abc import Mapping
from typing import Any

from .._base import config as _config
from .._base.config import Durability
from .._base.errors import CassetteWarning, HarnessChanged, warn
from .._cassette import store
from .._cassette.format import Intent, Recording
from .._cassette.reader import interrupted_warning, load, load_shared
from .._cassette.session import CassetteSession, make_header
from .._keys.normalize import Normalizer
from .fork import ForkPoint, left, start_fork
from .index import ReplayIndex
from .outage import outage_line
from .retarget import Retarget, retarget_of

log = logging.getLogger("faultdeck")


class Cassette:
    """A run's cassette: opened as its mode says, written through ``file``, closed once.

    Args:
        path: the cassette file (or a store URL: the run then writes a local copy).
        mode: the deck's mode, as configured (``once`` is decided on opening).
        lock: the run's lock, under which it opens and closes.
        index: the replay index it loads the recorded calls into.
        normalizer: whose rules the file's end line names (``Recording.rules``).
        durability, replace, fork, root, match, environ, on_harness_change: the deck's.

    Attributes:
        mode: the mode decided on opening.
        opened, closed: whether ``open`` and ``close`` (or ``abandon``) ran.
        file: the working file and its lock (``CassetteSession``).
        recording: the cassette as it was read on opening, if it was.
        faulted: a recorded call carries a fault.
        in_flight: resuming, the intents of the calls in flight at the kill, by key.
        begun: resuming, the last seq the old run began.
        unseen: of those seqs, how many left no line (numbered, never written).
        harness_changed: ``(recorded, current)`` git SHAs when they differ.
        retarget: the calls sent to another model than they ask for (a fork's ``model``,
            from its options or, when it is read, its header).
    """

    def __init__(  # noqa: PLR0913 - keyword-only: the deck's options about its file
        self,
        path: str,
        mode: str,
        *,
        lock: threading.RLock,
        index: ReplayIndex,
        normalizer: Normalizer,
        durability: Durability,
        replace: bool,
        fork: ForkPoint | None,
        root: str,
        match: str,
        environ: Mapping[str, str],
        on_harness_change: str,
    ) -> None:
        self.path = path
        self.configured = self.mode = mode
        self.opened = self.closed = False
        self.file = CassetteSession(path, durability=durability, replace=replace)
        self.recording: Recording | None = None
        self.faulted = False
        self.in_flight: dict[str, deque[Intent]] = {}
        self.begun = self.unseen = 0
        self.harness_changed: tuple[str, str] | None = None
        self.retarget: Retarget | None = None
        self._lock, self._index, self._normalizer = lock, index, normalizer
        self._copy = store.WorkingCopy(path) if store.is_url(path) else None
        self._durability, self._replace, self._fork = durability, replace, fork
        self._root, self._match, self._environ = root, match, environ
        self._on_harness_change = on_harness_change
        # A fork without ``at``, until it leaves its parent's path: what it starts with.
        self._unforked: tuple[Recording, dict[str, Any], bool] | None = None

    @property
    def kept(self) -> str | None:
        """Where a fresh recording was left beside the cassette, if it was."""
        return (self._copy.kept if self._copy else None) or self.file.kept

    def open(self) -> None:
        """Load and lock the cassette as the mode needs; see ``Deck.open``."""
        with self._lock:
            if self.opened:
                return
            mode = self.configured
            exists = store.exists(self.path) if self._copy else os.path.exists(self.path)
            if mode == "once":
                mode = "replay" if exists else "record"
            self.mode = mode
            if mode == "replay":
                recording = load_shared(self.path)  # a rehearsal reads it once
                self._use(recording)
            elif mode in ("record", "append", "resume", "fork"):
                if self._copy is not None:  # the run writes a local copy; the lock is on it
                    local = self._copy.make(fetch=exists and mode in ("append", "resume"))
                    self.file = CassetteSession(local, durability=self._durability)
                    exists = os.path.exists(local)
                self.file.lock()
                try:
                    self._open_for_writing(mode, exists)
                except BaseException:
                    self.file.release()
                    if self._copy is not None:
                        self._copy.drop()
                    raise
            self.opened = True

    def _open_for_writing(self, mode: str, exists: bool) -> None:
        if mode == "resume" and os.path.exists(self.file.partial):
            # The newest run recorded there and did not replace the cassette: go on with it.
            self._continue(load(self.file.partial))
        elif mode in ("append", "resume") and exists:
            self._continue(load(self.file.path))
        else:
            shared, parent = start_fork(self._fork, root=self._root) if self._fork else (None, None)
            if shared is not None:
                self._use(shared)  # the fork replays these and starts its cassette with them
            if shared is not None and parent is not None and parent["at"] is None:
                self._unforked = (shared, parent, exists)  # started when the run leaves it
                return
            self._start(shared, parent, exists)

    def _start(self, shared: Recording | None, parent: dict[str, Any] | None, exists: bool) -> None:
        header = make_header(
            match=self._match,
            root=self._root,
            environ=self._environ,
            volatile=self._normalizer.output_volatile,
            parent=parent,
        )
        if parent is not None:  # (the shared calls' header is the parent's own)
            self.retarget = retarget_of(parent, self.path)
        rules = self._normalizer.fingerprint
        self.file.start(
            header,
            beside=exists,
            entries=shared.entries if shared else (),
            rules=rules if shared is None or shared.rules == rules else None,
        )

    def leave(self, at: int) -> bool:
        """A fork without ``at`` leaves its parent's path after seq ``at``: its cassette
        starts now, with the parent's calls up to ``at``. ``False`` if it has left already
        or is no such fork."""
        if self._unforked is None:
            return False
        shared, parent, exists = self._unforked
        self._unforked = None
        self._index.forget_after(at)
        self.recording, told = left(shared, parent, at)
        self._start(self.recording, told, exists)
        return True

    def _continue(self, recording: Recording) -> None:
        self._use(recording)
        if self.mode == "resume":
            for intent in recording.in_flight():
                self.in_flight.setdefault(intent.key, deque()).append(intent)
            self.begun = recording.begun
            self.unseen = recording.unseen
        rules = self._normalizer.fingerprint
        self.file.extend(recording, rules=rules if recording.rules == rules else None)

    def _use(self, recording: Recording) -> None:
        self.recording = recording
        self.retarget = retarget_of(recording.header.extra.get("parent"), recording.path)
        self._index.load(recording.entries)
        self.faulted = any(e.fault is not None for e in recording.entries)
        if recording.interrupted and self.mode != "resume":
            warn(interrupted_warning(recording.path), CassetteWarning)
        recorded_sha = recording.header.harness.get("git_sha")
        current_sha = _config.harness(self._root).get("git_sha")
        if recorded_sha and current_sha and recorded_sha != current_sha:
            self.harness_changed = (str(recorded_sha), str(current_sha))
            if self._on_harness_change == "warn":
                warn(
                    f"{self.path} was recorded at commit {recorded_sha}, replaying at "
                    f"{current_sha}; misses may come from code changes since",
                    HarnessChanged,
                )

    def close(self, status: str, unanswered: list[str]) -> None:
        """Write the end line (when writing) and release the cassette; once. A run in which
        live calls got no answer (``unanswered``) keeps the cassette it records over and
        says so (``outage.py``)."""
        with self._lock:
            if self.closed:
                return
            self.closed = True
            writing = self.file.writing
            outage = writing and status == "ok" and bool(unanswered)
            self.file.close(status, keep=outage)
            if self._copy is not None:
                working = self.file.working if writing else None
                # Kept local, as for a caller that decides later: the store keeps its cassette.
                replace = self._replace and not outage
                self._copy.finish(working, ok=status == "ok", replace=replace)
            if outage and self._replace:
                line = outage_line(
                    mode=self.mode,
                    stored=self.file.stored,
                    used=self._index.served,
                    unanswered=unanswered,
                    cassette=self.path,
                    kept=self.kept,
                )
                log.warning("%s", line)

    def abandon(self) -> None:
        """Release the cassette without an end line; once."""
        with self._lock:
            if self.closed:
                return
            self.closed = True
            self.file.abandon()
            if self._copy is not None:
                self._copy.drop()
