"""One call's plan, and the two traces it leaves: a record in the log, a line in the cassette.

The deck decides a plan as a call begins (its seq, its key, the answer from the recording
or a live run, the fault injected) and fills it in as the call goes on. Whatever happens,
the log gets a ``CallRecord``; a call that runs live while recording also gets an
``Entry`` for the cassette, made of values already redacted.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .._cassette.format import Entry, Intent
from ..faults._fault import Fault
from .report import CallRecord, Source


@dataclass(slots=True)
class CallPlan:
    """What the deck decided for one call.

    Attributes:
        seq: the call's position in this run.
        kind: the boundary kind.
        name: the call's name.
        key: the call's key (empty in mode ``off``).
        args: the call's arguments, normalized unless the mode is ``off``.
        schema: the tool's schema version.
        step: the loop's step label, if any.
        meta: free-form data stored with the call.
        entry: the recorded call that answers it, when it is answered from the cassette.
        write: whether it runs live and is recorded.
        started: the clock's reading when the call began.
        fault: the fault injected at it, if any.
        fault_applied: the answer from the recording already carries ``fault`` (the call
            was recorded under it), so it is not applied again.
        resumes: the intent of the call, in flight at a kill, that this call runs again.
        in_doubt: ``resumes`` had side effects: the call may have run already.
        skipped: an in-doubt call that was not run again (``on_in_doubt="skip"``).
        idempotency_key: the key a side-effecting call runs with, once it starts.
        intent: whether its ``begin`` line was written.
    """

    seq: int
    kind: str
    name: str
    key: str
    args: Any
    schema: str
    step: Any
    meta: Any
    entry: Entry | None
    write: bool
    started: float = 0.0
    fault: Fault | None = None
    fault_applied: bool = False
    resumes: Intent | None = None
    in_doubt: bool = False
    skipped: bool = False
    idempotency_key: str | None = None
    intent: bool = False

    def record(
        self,
        source: Source,
        recorded_seq: int | None = None,
        ms: float = 0.0,
        error: str | None = None,
        *,
        retry_after: float | None = None,
        code: str | None = None,
        partial: bool = False,
    ) -> Logged:
        """This call as the log keeps it: where its answer came from and how it ended.

        A plain tuple, cheap on the hot path; ``as_record`` makes the ``CallRecord``
        when someone reads the log.
        """
        return (self, source, recorded_seq, ms, error, retry_after, code, partial)

    def to_entry(
        self,
        result: str,
        value: Any,
        ms: float,
        redact: Callable[[Any], Any],
        *,
        fault: Any = None,
    ) -> Entry:
        """This call as the cassette stores it.

        Args:
            result: ``out``, ``error`` or ``stream``.
            value: what the call returned, or its error as JSON, already redacted.
            ms: how long it took.
            redact: masks secrets in ``meta`` (args were redacted as they were keyed).
            fault: the injected fault as JSON; by default the plan's own fault, if any.
        """
        if fault is None and self.fault is not None:
            fault = self.fault.to_json()
        step = self.step if isinstance(self.step, (str, int, float)) else None
        return Entry(
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
            redact(self.meta) if self.meta is not None else None,
            fault,
        )


def number(value: Any) -> float | None:
    """``value`` as a float when it is a number (not a bool), else ``None``."""
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


Logged = tuple[
    CallPlan, Source, "int | None", float, "str | None", "float | None", "str | None", bool
]
"""A log line as the deck keeps it while calls run."""


def as_record(logged: Logged) -> CallRecord:
    """The ``CallRecord`` of a log line."""
    plan, source, recorded_seq, ms, error, retry_after, code, partial = logged
    return CallRecord(
        plan.seq,
        plan.kind,
        plan.name,
        plan.key,
        source,
        recorded_seq,
        ms,
        error,
        plan.fault.kind if plan.fault is not None else None,
        plan.step,
        plan.started,
        retry_after,
        code,
        partial,
    )
