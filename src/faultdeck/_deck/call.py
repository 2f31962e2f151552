"""The call seam: one boundary call, from the deck's decision to the traces it leaves.

``deck.begin(kind, name, args)`` decides a call (its seq, its key, the recorded answer or a
live run, the fault to apply) and hands back a ``Call``. Whoever makes the call (the deck's
own ``call``, the HTTP transport, a server, an MCP adapter) then finishes it through the
call's methods: ``replay()`` answers it from the cassette, ``inject()`` raises its fault,
``runner()`` gives what to run live, ``result()`` and ``fail()`` record how it ended, and
``complete()``, ``answered()`` and ``stream()`` record an answer the caller assembled
itself. Whatever happens, the log gets one record; a call that runs live while recording
also gets its intent and its line in the cassette, made of values already redacted.

A ``Call`` is a context manager: an exception out of its block that it did not record
already is recorded with ``fail()``.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Any, TypeVar

from .._base.config import OnInDoubt
from .._base.errors import (
    ArgumentError,
    CassetteCorrupt,
    ConfigError,
    ProcessKilled,
    SideEffectBlocked,
)
from .._cassette.errorjson import error_from_json, error_to_json
from .._cassette.format import Entry
from .._cassette.lines import RESTORE, http_answer_problem
from .._keys.fields import ABSENT
from .._keys.outputs import check_json
from .._keys.stored import NotJSON
from ..faults import Fault
from ..faults import from_json as fault_from_json
from .answering import Answering, number
from .miss import in_doubt
from .outage import no_answer
from .report import CallRecord, Source

T = TypeVar("T")


@dataclass(slots=True, eq=False)
class Call(Answering):
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
        write: whether it runs live and is recorded.
        started: the clock's reading when the call began.
        fault: the fault to apply at it, if any.
        fault_applied: the recorded answer already carries ``fault`` (the call was recorded
            under it): shape nothing again.
        resumes: the intent of the call, in flight at a kill, that this call runs again.
        in_doubt: ``resumes`` had side effects: the call may have run already.
        skipped: an in-doubt call that was not run again (``on_in_doubt="skip"``).
        idempotency_key: the key a side-effecting call runs with, once it starts.
        intent: whether its intent was written.
        finished: whether its end was recorded.
        rekey: a replay must normalize args like these again to key them (a path under
            the project root in them, or a project rule): the cassette's end line then
            names no rules (``Recording.rules``).
        behind: resumed ahead of the recorded calls before it, it waits for them before
            it runs (``Deck.abegin`` awaits ``Run.catch_up``; see ``resuming.py``).
    """

    def __enter__(self) -> Call:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if isinstance(exc, Exception) and not self.finished:
            self.fail(exc)

    # -- what to apply ---------------------------------------------------------------------

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
        run = self._run
        with run.lock:
            self._log(
                "fault",
                error=type(exc).__name__,
                retry_after=number(getattr(exc, "retry_after", None)),
                code=getattr(exc, "code", None),
            )
            if self.write and not isinstance(exc, ProcessKilled):
                self._put("error", error_to_json(exc), 0.0, fault=fault.to_json())
        try:
            raise exc
        finally:
            # Its traceback holds this frame and its callers': kept as a local, the error
            # would make them a cycle that only the garbage collector frees.
            del exc

    # -- answering from the recording ------------------------------------------------------

    def replay(self) -> Any:
        """The recorded answer: a fresh copy of its value, or its error raised."""
        entry = self.recorded
        if entry is None:
            raise ValueError(f"seq {self.seq}: {self.kind} {self.name} has no recorded answer")
        run = self._run
        with run.lock:
            run.index.serve(entry)
            if entry.result == "error":
                error = entry.value
                code = error.get("code")
                self._log(
                    "replay",
                    entry.seq,
                    entry.ms,
                    error.get("type"),
                    retry_after=number(error.get("retry_after")),
                    code=code if isinstance(code, str) else None,
                )
            else:
                self._log("replay", entry.seq, entry.ms)
                if entry.result == "out":
                    if entry.ids is not None:  # the line lists them: no walk, no parse
                        run.ids.learn_stored(entry.ids, run.normalizer.output_ids)
                    else:
                        run.ids.defer(entry.value)
        if entry.result == "error":
            raise error_from_json(entry.value)
        return entry.fresh_value()

    # -- running live -------------------------------------------------------------------------

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
            CallInDoubt: the call was in flight at a kill, may have run, and nothing says
                whether to run it again.
        """
        run = self._run
        if self.in_doubt:
            if on_in_doubt == "skip":
                self.skipped = True
                self.start(side_effect=True)
                return lambda: None
            if on_in_doubt != "rerun":
                self._end("blocked")
                raise in_doubt(self, run.where, self.resumes.line if self.resumes else 0)
        chosen: Callable[[], T | None] = fn
        if side_effect and run.mode != "off" and not run.allow_side_effects:
            if dry_run is None:
                self._end("blocked")
                raise SideEffectBlocked(
                    f"seq {self.seq}: {self.kind} {self.name} has side effects and mode is "
                    f"{run.mode!r}, so it would run for real; pass allow_side_effects=True "
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
            old = self.resumes.idempotency_key if self.resumes is not None else None
            self.idempotency_key = old or uuid.uuid4().hex
        if not self.write or self.kind == "env":
            return
        intent: dict[str, Any] = {"begin": self.seq, "kind": self.kind, "name": self.name}
        intent["key"] = self.key
        if side_effect:
            intent["side_effect"] = True
            intent["idempotency_key"] = self.idempotency_key
        if self.resumes is not None:
            intent["resumes"] = self.resumes.seq
        run = self._run
        with run.lock:
            if run.file.writing:
                run.file.intent(intent, sync=side_effect)
                self.intent = True

    def result(self, value: Any, *, stored: Any = ABSENT) -> None:
        """Log a live call that returned ``value``, and record it when recording.

        Args:
            value: what the call returned.
            stored: what to write instead (already in stored form, see ``store``).

        Raises:
            ArgumentError: the value is not JSON, or an ``http`` call's is not an HTTP answer.
        """
        run = self._run
        ms = round((run.clock.now() - self.started) * 1000, 3)
        if not self.write:
            with run.lock:
                self._log("live", ms=ms)
            return
        found = None
        if stored is ABSENT:
            # An answer the cassette cannot hold ends the call: not logged, not written.
            self.finished = True
            # As ``store("out", value)`` stores it, and its ids, in one walk that checks it too.
            try:
                stored, found = run.store_output(value, self.seq)
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
        with run.lock:
            # The caller holds this very object and may change it: learn its ids now (after
            # any earlier outputs still waiting, to keep their order).
            ids = self._learn_written(stored, found)
            # ``_log("live", ms=ms)``, a frame less: every live call comes this way.
            self.finished = True
            run.log.append((self, "live", None, ms, None, None, None, False))
            self._put("out", stored, ms, ids=ids)

    def fail(self, exc: BaseException) -> None:
        """Log a live call that raised ``exc``, and record the error when recording; an
        error that means the call got no answer (no connection, nothing back in time) is
        not recorded but counted (``outage.py``): the run then keeps the cassette it
        records over."""
        run = self._run
        ms = round((run.clock.now() - self.started) * 1000, 3)
        code = getattr(exc, "code", None)
        with run.lock:
            self._log(
                "live",
                ms=ms,
                error=type(exc).__name__,
                retry_after=number(getattr(exc, "retry_after", None)),
                code=code if isinstance(code, str) else None,
            )
            if not self.write:
                return
            if no_answer(exc):
                run.unanswered.append(type(exc).__name__)
                if self.intent:
                    run.file.intent({"abort": self.seq, "key": self.key})
                return
            self._put("error", self.store("error", error_to_json(exc)), ms)


Logged = (
    tuple[Call, Source, "int | None", float, "str | None", "float | None", "str | None", bool]
    | tuple[int, str, str, str, Any, float, "Entry | float"]
)
"""A log line as the deck keeps it while calls run: a call and how it ended; a clean
replay's (seq, kind, name, key, step, started, the entry that answered it); or a clean live
call's (seq, kind, name, key, step, started, its ms: ``live.py``)."""


def as_record(logged: Logged) -> CallRecord:
    """The ``CallRecord`` of a log line."""
    if len(logged) == 7:
        seq, kind, name, key, step, started, entry = logged
        if isinstance(entry, Entry):  # a clean replay (``clean.py``): a recorded value
            return CallRecord(
                seq, kind, name, key, "replay", entry.seq, entry.ms, None, None, step, started
            )
        # a clean live call (``live.py``): recorded, with its ms (an int on a clock of ints)
        return CallRecord(seq, kind, name, key, "live", None, entry, None, None, step, started)
    call, source, recorded_seq, ms, error, retry_after, code, partial = logged
    return CallRecord(
        call.seq,
        call.kind,
        call.name,
        call.key,
        source,
        recorded_seq,
        ms,
        error,
        call.fault.kind if call.fault is not None else None,
        call.step,
        call.started,
        retry_after,
        code,
        partial,
        # Streamed (live, or as recorded): what a rehearsal reads to place the stream faults.
        call.streamed or (call.recorded is not None and call.recorded.result == "stream"),
    )


def recorded_fault(entry: Entry, where: str) -> Fault:
    """The fault a recorded call carries, read from its line in ``where``."""
    try:
        return fault_from_json(entry.fault, where=f"seq {entry.seq}: fault")
    except ConfigError as exc:
        raise CassetteCorrupt(where, entry.line or None, str(exc), RESTORE) from None
