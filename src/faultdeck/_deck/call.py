"""The call seam: one boundary call, from the deck's decision to the traces it leaves.

``deck.begin(kind, name, args)`` decides a call (its seq, its key, the recorded answer or a
live run, the fault to apply) and hands back a ``Call``. Whoever makes the call (the deck's
own ``call``, the HTTP transport, a server, an MCP adapter) finishes it through its methods:
``replay()`` answers it from the cassette, ``inject()`` raises its fault, ``runner()`` gives
what to run live, ``result()`` and ``fail()`` record how it ended, and ``complete()`` and
``answered()`` record an answer the caller assembled itself. Whatever happens, the log gets
one ``CallRecord``; a call that runs live while recording also gets its intent and its line
in the cassette, made of values already redacted, through the run's ``Ledger``. A ``Call``
is a context manager: an exception out of its block that it did not record already is
recorded with ``fail()``.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

from .._base.config import OnInDoubt
from .._base.errors import ArgumentError, ProcessKilled, SideEffectBlocked
from .._cassette.errorjson import error_from_json, error_to_json, number
from .._cassette.format import Entry, Intent, Result
from .._cassette.lines import http_answer_problem
from .._keys.fields import ABSENT
from .._keys.outputs import check_json
from .._keys.stored import NotJSON
from ..faults import Fault
from .miss import in_doubt
from .outage import no_answer
from .report import CallRecord, Source

if TYPE_CHECKING:
    from .ledger import Ledger

T = TypeVar("T")
_record = tuple.__new__


class Call:
    """One boundary call, as the deck decided it; finish it with its methods.

    Attributes:
        seq: the call's position in this run.
        kind: the boundary kind.
        name: the call's name (redacted).
        key: the call's key (empty in mode ``off``).
        args: the call's arguments, normalized and redacted unless the mode is ``off``.
        schema: the tool's schema version.
        step: the loop's step label, if any.
        meta: free-form data stored with the call.
        recorded: the recorded call that answers it, when it is answered from the cassette.
        records: it runs live and its end is written to the cassette.
        started: the clock's reading when the call began.
        fault: the fault to apply at it, if any.
        fault_applied: the recorded answer already carries ``fault`` (the call was recorded
            under it): shape nothing again.
        idempotency_key: the key a side-effecting call runs with, once it starts.
        model: the model the caller sends the call to instead of the one its args asked
            for (a fork's ``model``; ``Deck.begin(…, retarget=True)``), else ``None``.
        side_effect: the call changes the world (its record says so), as its caller says.
    """

    __slots__ = (
        "_behind", "_finished", "_intent", "_ledger", "_rekey", "_resumes", "_skipped",
        "_streamed", "args", "fault", "fault_applied", "idempotency_key", "key", "kind", "meta",
        "model", "name", "recorded", "records", "schema", "seq", "side_effect", "started",
        "step",
    )  # fmt: skip

    # fmt: off
    def __init__(  # noqa: PLR0913 - the decision's parts, positional: made on every call's path
        self, ledger: Ledger, seq: int, kind: str, name: str, key: str, args: Any, schema: str,
        step: Any, meta: Any, records: bool, started: float,
    ) -> None:
        # fmt: on
        self._ledger = ledger
        self.seq, self.kind, self.name, self.key, self.args = seq, kind, name, key, args
        self.schema, self.step, self.meta = schema, step, meta
        self.recorded: Entry | None = None
        self.records = records
        self.started = started
        self.fault: Fault | None = None
        self.fault_applied = False
        self.idempotency_key: str | None = None
        self.model: str | None = None
        self.side_effect = False
        # The intent, in flight at a kill, that this call runs again (with side effects,
        # it may have run already: in doubt), and whether it was then skipped.
        self._resumes: Intent | None = None
        self._skipped = False
        self._intent = False  # its intent was written
        self._finished = False  # its record is in the log
        self._streamed = False
        # A replay must normalize args like these again to key them (a path under the
        # project root in them, or a project rule): the cassette's end line names no rules.
        self._rekey = False
        # Resumed ahead of the recorded calls before it, it waits for them (``Deck.abegin``).
        self._behind = False

    def __repr__(self) -> str:
        return f"<Call seq={self.seq} {self.kind} {self.name} key={self.key}>"

    def __enter__(self) -> Call:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if isinstance(exc, Exception) and not self._finished:
            self.fail(exc)

    @property
    def delay(self) -> float:
        """Seconds of injected delay before the answer (or its first event)."""
        return self.fault.delay_ms / 1000 if self.fault is not None else 0.0

    def inject(self) -> None:
        """Raise the fault's in-process error, if it raises and the recording does not
        answer already; recorded as injected when recording."""
        fault = self.fault
        if fault is None or not fault.raises or self.recorded is not None:
            return
        exc = fault.error()
        with self._ledger.lock:
            self._log(
                "fault",
                error=type(exc).__name__,
                retry_after=number(getattr(exc, "retry_after", None)),
                code=getattr(exc, "code", None),
            )
            if self.records and not isinstance(exc, ProcessKilled):
                self._put("error", error_to_json(exc), 0.0, fault=fault.to_json())
        try:
            raise exc
        finally:
            # Its traceback holds this frame and its callers': kept as a local, the error
            # would make them a cycle that only the garbage collector frees.
            del exc

    def replay(self) -> Any:
        """The recorded answer: a fresh copy of its value, or its error raised."""
        entry = self.recorded
        if entry is None:
            raise ValueError(f"seq {self.seq}: {self.kind} {self.name} has no recorded answer")
        ledger = self._ledger
        result = entry.result
        if result == "error":
            error = entry.value
            code = error.get("code")
            with ledger.lock:
                self._log(
                    "replay",
                    entry.seq,
                    entry.ms,
                    error.get("type"),
                    retry_after=number(error.get("retry_after")),
                    code=code if isinstance(code, str) else None,
                )
            raise error_from_json(error)
        listed = entry.ids
        if result == "out" and (listed is None or listed or ledger.ids.pending):
            with ledger.lock:
                self._log("replay", entry.seq, entry.ms)
                ledger.learn_recorded(entry, as_recorded=True)
        else:  # nothing to learn: the record alone, appended (a list append is atomic)
            self._log("replay", entry.seq, entry.ms)
        return entry.fresh_value()

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
        """Log that the caller answered from ``recorded`` itself (see ``complete``):
        ``learn`` is the part of the answer whose ids later calls may send back;
        ``as_recorded``: no fault changed it, so the ids its line lists stand for it."""
        entry = self.recorded
        if entry is None:
            raise ValueError(f"seq {self.seq} has no recorded answer")
        ledger = self._ledger
        with ledger.lock:
            if learn is not ABSENT:
                ledger.learn_recorded(entry, learn, as_recorded=as_recorded)
            self._log(
                "replay", entry.seq, entry.ms, error, retry_after=retry_after, code=code,
                partial=partial,
            )  # fmt: skip

    def runner(
        self,
        fn: Callable[[], T],
        *,
        side_effect: bool = False,
        dry_run: Callable[[], T] | None = None,
        on_in_doubt: OnInDoubt = "raise",
    ) -> Callable[[], T | None]:
        """What runs live: ``fn``, ``dry_run`` for a side effect that may not run, or
        nothing for an in-doubt call resolved by skipping it; its intent is written.

        Raises:
            SideEffectBlocked: a side effect may not run and has no stand-in.
            CallInDoubt: the call was in flight at a kill (it may have run), and nothing
                says whether to run it again."""
        ledger = self._ledger
        if self._resumes is not None and self._resumes.side_effect:  # in doubt
            if on_in_doubt == "skip":
                self._skipped = True
                self.start(side_effect=True)
                return lambda: None
            if on_in_doubt != "rerun":
                self._blocked()
                raise in_doubt(self, ledger.where, self._resumes.line)
        chosen: Callable[[], T | None] = fn
        if side_effect and ledger.mode != "off" and not ledger.allow_side_effects:
            if dry_run is None:
                self._blocked()
                raise SideEffectBlocked(
                    f"seq {self.seq}: {self.kind} {self.name} has side effects and mode is "
                    f"{ledger.mode!r}, so it would run for real; pass allow_side_effects=True "
                    "to let it, or give it a stand-in: @deck.tool(side_effect=True, "
                    "dry_run=stub)"
                )
            chosen = dry_run
        self.start(side_effect=side_effect)
        return chosen

    def start(self, *, side_effect: bool = False) -> None:
        """The call is about to run live: write its intent, so that after a kill ``resume``
        knows it was in flight; a side-effecting call gets its idempotency key."""
        if side_effect:
            old = self._resumes.idempotency_key if self._resumes is not None else None
            self.idempotency_key = old or uuid.uuid4().hex
        if not self.records or self.kind == "env":
            return
        intent: dict[str, Any] = {"begin": self.seq, "kind": self.kind, "name": self.name}
        intent["key"] = self.key
        if side_effect:
            intent["side_effect"] = True
            intent["idempotency_key"] = self.idempotency_key
        if self._resumes is not None:
            intent["resumes"] = self._resumes.seq
        ledger = self._ledger
        with ledger.lock:
            if ledger.file.writing:
                ledger.file.intent(intent, sync=side_effect)
                self._intent = True

    def result(self, value: Any, *, stored: Any = ABSENT) -> None:
        """Log a live call that returned ``value``, and record it when recording.

        Args:
            value: what the call returned.
            stored: what to write instead (already in stored form, see ``store``).

        Raises:
            ArgumentError: the value is not JSON, or an ``http`` call's is not an HTTP answer.
        """
        ledger = self._ledger
        ms = round((ledger.clock.now() - self.started) * 1000, 3)
        if not self.records:
            with ledger.lock:
                self._log("live", ms=ms)
            return
        found = None
        if stored is ABSENT:
            # An answer the cassette cannot hold ends the call: not logged, not written.
            self._finished = True
            try:  # stored as ``store("out", value)`` stores it, its ids found in the same walk
                stored, found = ledger.store_output(value, self.seq)
            except NotJSON:
                check_json(value, f"out of {self.kind} {self.name} at seq {self.seq}")
                raise  # check_json names the value; it never gets here
            if self.kind == "http":
                problem = http_answer_problem(stored, body=True)
                if problem is not None:
                    raise ArgumentError(
                        f"out of http {self.name} at seq {self.seq}",
                        f"{problem}; kind 'http' holds what fd.http.Transport records, "
                        "use kind 'tool' for other calls",
                    )
        with ledger.lock:  # (its ids learned now: the caller holds this object, may change it)
            ids = ledger.learn_written(stored, found)
            self._log("live", ms=ms)
            fault = self.fault.to_json() if self.fault is not None else None
            ledger.write_line(self, "out", stored, ms, fault, ids, self._skipped, self._rekey)

    def fail(self, exc: BaseException) -> None:
        """Log a live call that raised ``exc``, and record the error when recording; an
        error that means the call got no answer (no connection, nothing back in time) is
        not recorded but counted (``outage.py``): the run then keeps the cassette it
        records over."""
        ledger = self._ledger
        ms = round((ledger.clock.now() - self.started) * 1000, 3)
        code = getattr(exc, "code", None)
        with ledger.lock:
            self._log(
                "live",
                ms=ms,
                error=type(exc).__name__,
                retry_after=number(getattr(exc, "retry_after", None)),
                code=code if isinstance(code, str) else None,
            )
            if not self.records:
                return
            if no_answer(exc):
                ledger.unanswered.append(type(exc).__name__)
                if self._intent:
                    ledger.file.intent({"abort": self.seq, "key": self.key})
                return
            self._put("error", self.store("error", error_to_json(exc)), ms)

    def store(self, result: Result, value: Any) -> Any:
        """``value`` as the cassette stores it: volatile fields made placeholders (outputs
        and streams), then redacted (a stream on the text its deltas join into)."""
        redactor = self._ledger.redactor
        if result == "error":
            return redactor.redact(value)
        scrubbed = self._ledger.normalizer.scrub_output(value, self.seq)
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
        """Log a call whose answer the caller assembled itself (the HTTP transport): its
        ``result`` (``out``, ``error`` or ``stream``) as ``stored`` (see ``store``), which
        took ``ms``; and record it when recording. ``source``: ``live``, or ``fault`` (a
        provider-shaped answer stood in for the call). ``learn``: an output (as stored)
        whose ids later calls may send again. ``error``, ``retry_after``, ``code``: how the
        call failed, as a loop would see it; ``partial``: after part of its output had
        reached the caller."""
        ledger = self._ledger
        self._streamed = result == "stream"
        with ledger.lock:
            ids = None
            if learn is not ABSENT:
                if self.records and ledger.file.writing:
                    ids = ledger.learn_written(learn)
                else:
                    ledger.ids.defer(learn)
            self._log(
                source, ms=ms, error=error, retry_after=retry_after, code=code, partial=partial
            )
            if self.records:
                self._put(result, stored, ms, ids=ids)

    # fmt: off
    def _log(
        self, source: Source, recorded_seq: int | None = None, ms: float = 0.0,
        error: str | None = None, *, retry_after: float | None = None, code: str | None = None,
        partial: bool = False,
    ) -> None:
        # fmt: on
        """Put the call's record in the run's log (under the run's lock)."""
        self._finished = True
        fault, recorded = self.fault, self.recorded
        self._ledger.log.append(
            _record(  # a CallRecord, its fields in order (its own constructor is a frame more)
                CallRecord,
                (
                    self.seq, self.kind, self.name, self.key, source, recorded_seq, ms, error,
                    fault.kind if fault is not None else None, self.step, self.started,
                    retry_after, code, partial,
                    # Streamed (live, or as recorded): a rehearsal places stream faults by it.
                    self._streamed or (recorded is not None and recorded.result == "stream"),
                    self.side_effect,
                ),
            )
        )  # fmt: skip

    def _blocked(self) -> None:
        with self._ledger.lock:
            self._log("blocked")

    def _put(
        self, result: str, value: Any, ms: float, *, fault: Any = None, ids: Any = None
    ) -> None:
        """Write the call's line (under the run's lock), when the run writes."""
        if fault is None and self.fault is not None:
            fault = self.fault.to_json()
        self._ledger.write_line(self, result, value, ms, fault, ids, self._skipped, self._rekey)
