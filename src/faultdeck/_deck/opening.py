"""How a deck's run opens its cassette as its mode says, and how it closes it.

``replay`` reads the cassette (shared by the decks of one process: ``load_shared``);
``record``, ``fork`` and a first ``once`` start a fresh file; ``append`` and ``resume``
continue the file they find (or the partial file a run left beside it). Either way the end
line names the rules the file's calls were keyed under, when every call's args key as
stored under them (``Recording.rules``). ``close`` ends the file; ``abandon`` leaves it as
a killed process would. ``Run`` is the rest of the run (``run.py``).
"""

from __future__ import annotations

import logging
import os
import threading
from collections import deque
from collections.abc import Mapping
from typing import Any

from .._base import config as _config
from .._base.errors import CassetteWarning, HarnessChanged, warn
from .._cassette import store
from .._cassette.format import Intent, Recording
from .._cassette.reader import interrupted_warning, load, load_shared
from .._cassette.session import CassetteSession, make_header
from .._keys.normalize import Normalizer
from ..faults import FaultRun
from .fork import ForkPoint, start_fork
from .index import ReplayIndex
from .outage import outage_line

log = logging.getLogger("faultdeck")


class Opening:
    """``Run``'s opening and closing of its cassette (see the module)."""

    lock: threading.RLock
    path: str
    configured: str
    mode: str
    opened: bool
    clean: bool
    asis: bool
    records_plain: bool
    file: CassetteSession
    index: ReplayIndex
    normalizer: Normalizer
    _closed: bool
    _copy: Any
    _durability: str
    _replace: bool
    _fork: ForkPoint | None
    _root: str
    _match: str
    _environ: Mapping[str, str]
    _recording: Recording | None
    _faulted: bool
    _fault_run: FaultRun | None
    _in_flight: dict[str, deque[Intent]]
    unanswered: list[str]
    _begun: int
    _unseen: int
    _on_harness_change: str
    _harness_changed: tuple[str, str] | None

    def open(self) -> None:
        """Load and lock the cassette as the mode needs; see ``Deck.open``."""
        with self.lock:
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
                self.clean = not self._faulted
                self.asis = self.clean and recording.rules == self.normalizer.fingerprint
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
            self.records_plain = mode == "record" and self._fault_run is None
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
            header = make_header(
                match=self._match,
                root=self._root,
                environ=self._environ,
                volatile=self.normalizer.output_volatile,
                parent=parent,
            )
            rules = self.normalizer.fingerprint
            self.file.start(
                header,
                beside=exists,
                entries=shared.entries if shared else (),
                rules=rules if shared is None or shared.rules == rules else None,
            )

    def _continue(self, recording: Recording) -> None:
        self._use(recording)
        if self.mode == "resume":
            for intent in recording.in_flight():
                self._in_flight.setdefault(intent.key, deque()).append(intent)
            self._begun = recording.begun
            self._unseen = recording.unseen
        rules = self.normalizer.fingerprint
        self.file.extend(recording, rules=rules if recording.rules == rules else None)

    def _use(self, recording: Recording) -> None:
        self._recording = recording
        self.index.load(recording.entries)
        self._faulted = any(e.fault is not None for e in recording.entries)
        if recording.interrupted and self.mode != "resume":
            warn(interrupted_warning(recording.path), CassetteWarning)
        recorded_sha = recording.header.harness.get("git_sha")
        current_sha = _config.harness(self._root).get("git_sha")
        if recorded_sha and current_sha and recorded_sha != current_sha:
            self._harness_changed = (str(recorded_sha), str(current_sha))
            if self._on_harness_change == "warn":
                warn(
                    f"{self.path} was recorded at commit {recorded_sha}, replaying at "
                    f"{current_sha}; misses may come from code changes since",
                    HarnessChanged,
                )

    def close(self, status: str) -> None:
        """Write the end line (when writing) and release the cassette; once. A run in which
        live calls got no answer keeps the cassette it records over and says so
        (``outage.py``)."""
        with self.lock:
            if self._closed:
                return
            self._closed = True
            writing = self.file.writing
            outage = writing and status == "ok" and bool(self.unanswered)
            self.file.close(status, keep=outage)
            if self._copy is not None:
                working = self.file.working if writing else None
                # Kept local, as for a caller that decides later: the store keeps its cassette.
                replace = self._replace and not outage
                self._copy.finish(working, ok=status == "ok", replace=replace)
            if outage and self._replace:
                log.warning("%s", self.outage())

    def outage(self) -> str | None:
        """The line that says which live calls got no answer and what was kept
        (``outage_line``), or ``None`` when every live call was answered."""
        if not self.unanswered:
            return None
        return outage_line(
            mode=self.mode,
            stored=self.file.stored,
            used=self.index.served,
            unanswered=self.unanswered,
            cassette=self.path,
            kept=(self._copy.kept if self._copy else None) or self.file.kept,
        )

    def abandon(self) -> None:
        """Release the cassette without an end line; once."""
        with self.lock:
            if self._closed:
                return
            self._closed = True
            self.file.abandon()
            if self._copy is not None:
                self._copy.drop()
