"""What a call's caller may record itself, and what a call needs of its run.

``Answering`` holds the traces every call leaves (its log record, its cassette line) and
the ``Call`` methods for answers the caller assembled (the HTTP transport builds its own
responses and streams): ``store`` puts a value in stored form, ``complete`` records a live
or stand-in answer, ``stream`` a live stream, ``answered`` a recorded answer it served
itself. ``Ledger`` is what every call reads of its deck's run.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Protocol

from .._base.clock import Clock
from .._cassette.errorjson import error_to_json
from .._cassette.format import Entry, Intent, Result, entry_line
from .._cassette.session import CassetteSession
from .._keys.fields import ABSENT
from .._keys.ids import IdMap
from .._keys.normalize import Normalizer
from .._keys.redact import Redactor
from .._keys.stored import Store
from ..faults import Fault
from .index import ReplayIndex
from .report import Source


class Ledger(Protocol):
    """What a call reads and writes of its deck's run (``Run``), under the run's lock."""

    lock: threading.RLock
    clock: Clock
    mode: str
    allow_side_effects: bool
    index: ReplayIndex
    ids: IdMap
    log: list[Any]
    normalizer: Normalizer
    redactor: Redactor
    store_output: Store
    file: CassetteSession
    unanswered: list[str]

    @property
    def where(self) -> str:
        """The file the recording was read from (for messages)."""
        ...


@dataclass(slots=True, eq=False)
class Answering:
    """A call's traces, and the ``Call`` methods for answers its caller assembled; see
    ``Call``."""

    _run: Ledger
    seq: int
    kind: str
    name: str
    key: str
    args: Any
    schema: str
    step: Any
    meta: Any
    recorded: Entry | None
    write: bool
    started: float = 0.0
    fault: Fault | None = None
    fault_applied: bool = False
    resumes: Intent | None = None
    in_doubt: bool = False
    skipped: bool = False
    idempotency_key: str | None = None
    intent: bool = False
    finished: bool = False
    streamed: bool = False
    rekey: bool = False
    behind: bool = False

    # -- the traces ----------------------------------------------------------------------------

    def _end(self, source: Source) -> None:
        with self._run.lock:
            self._log(source)

    def _log(
        self,
        source: Source,
        recorded_seq: int | None = None,
        ms: float = 0.0,
        error: str | None = None,
        *,
        retry_after: float | None = None,
        code: str | None = None,
        partial: bool = False,
    ) -> None:
        # A plain tuple, cheap on the hot path; as_record makes the CallRecord when read.
        self.finished = True
        self._run.log.append((self, source, recorded_seq, ms, error, retry_after, code, partial))

    def _put(
        self, result: str, value: Any, ms: float, *, fault: Any = None, ids: Any = None
    ) -> None:
        file = self._run.file
        if not file.writing:
            return
        if fault is None and self.fault is not None:
            fault = self.fault.to_json()
        step = self.step if isinstance(self.step, (str, int, float)) else None
        meta = self._run.redactor.redact(self.meta) if self.meta is not None else None
        line = entry_line(
            self.seq,
            self.kind,
            self.name,
            self.key,
            self.args,
            result,  # type: ignore[arg-type]
            value,
            ms,
            step,
            self.schema,
            meta,
            fault,
            ids=ids,
        )
        file.write(line, in_doubt="skipped" if self.skipped else None, rekey=self.rekey)

    def _learn_recorded(self, entry: Entry, value: Any, *, as_recorded: bool) -> None:
        """Learn the ids a replayed answer hands out (under the run's lock): the ones its
        line lists, found when it was recorded, if the answer goes out as recorded (no fault
        changed it); else those found in ``value`` when a later call may need them."""
        run = self._run
        if as_recorded and entry.ids is not None:
            run.ids.learn_stored(entry.ids, run.normalizer.output_ids)
        else:
            run.ids.defer(value)

    def _learn_written(self, learn: Any, found: list[str] | None = None) -> Any:
        """Learn the ids of a live answer about to be written (under the run's lock), and
        return them for its line (``None`` when ids are not renamed): a replay of the line
        learns them from there without walking the answer. ``found``: the ids already
        found in ``learn``, if they were."""
        run = self._run
        normalizer, ids = run.normalizer, run.ids
        if found is None:
            found = normalizer.output_ids(learn)
        if found or ids.pending:  # else there is nothing to learn
            ids.learn_stored(found, normalizer.output_ids)
        return found if normalizer.config.ids else None

    def answered(
        self,
        *,
        learn: Any = ABSENT,
        as_recorded: bool = False,
        error: str | None = None,
        retry_after: float | None = None,
        code: str | None = None,
        partial: bool = False,
    ) -> None:
        """Log that the caller answered from ``recorded`` itself (see ``complete``);
        ``as_recorded``: ``learn`` is what the line's call learned when it was recorded (no
        fault changed the answer), so the ids its line lists stand for it."""
        entry = self.recorded
        if entry is None:
            raise ValueError(f"seq {self.seq} has no recorded answer")
        run = self._run
        with run.lock:
            run.index.serve(entry)
            if learn is not ABSENT:
                self._learn_recorded(entry, learn, as_recorded=as_recorded)
            self._log(
                "replay",
                entry.seq,
                entry.ms,
                error,
                retry_after=retry_after,
                code=code,
                partial=partial,
            )

    # -- answers the caller assembled ------------------------------------------------------

    def store(self, result: Result, value: Any) -> Any:
        """``value`` as the cassette stores it: volatile fields made placeholders (outputs
        and streams), then redacted (a stream on the text its deltas join into)."""
        redactor = self._run.redactor
        if result == "error":
            return redactor.redact(value)
        scrubbed = self._run.normalizer.scrub_output(value, self.seq)
        if result == "stream":
            return redactor.redact_stream(scrubbed)
        return redactor.redact(scrubbed)

    def complete(  # noqa: PLR0913 - the options are the log record's fields, each by keyword
        self,
        result: Result,
        stored: Any,
        *,
        ms: float,
        source: Source = "live",
        learn: Any = ABSENT,
        error: str | None = None,
        retry_after: float | None = None,
        code: str | None = None,
        partial: bool = False,
    ) -> None:
        """Log a call whose answer the caller assembled itself (the HTTP transport), and
        record it when recording.

        Args:
            result: ``out``, ``error`` or ``stream``.
            stored: what to write, in stored form (see ``store``).
            ms: how long it took.
            source: ``live`` or ``fault`` (a provider-shaped answer stood in for the call).
            learn: an output (as stored) whose ids later calls may send again.
            error, retry_after, code: how the call failed, as a loop would see it.
            partial: it failed after part of its output had reached the caller.
        """
        run = self._run
        with run.lock:
            ids = None
            if learn is not ABSENT:
                if self.write and run.file.writing:
                    ids = self._learn_written(learn)
                else:
                    run.ids.defer(learn)
            self._log(
                source, ms=ms, error=error, retry_after=retry_after, code=code, partial=partial
            )
            if self.write:
                self._put(result, stored, ms, ids=ids)

    def stream(
        self,
        status: int,
        headers: dict[str, Any],
        events: list[dict[str, Any]],
        *,
        error: BaseException | None = None,
        partial: bool = False,
    ) -> None:
        """Record a live stream that ended (with ``error`` if it broke off)."""
        self.streamed = True
        value: dict[str, Any] = {"status": status, "headers": headers, "events": events}
        if error is not None:
            value["error"] = error_to_json(error)
        stored = self.store("stream", value)
        ms = round((self._run.clock.now() - self.started) * 1000, 3)
        self.complete(
            "stream",
            stored,
            ms=ms,
            learn=[e.get("data") for e in stored["events"]],
            error=type(error).__name__ if error is not None else None,
            partial=partial,
        )


def number(value: Any) -> float | None:
    """``value`` as a float when it is a number (not a bool), else ``None``."""
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
