"""What a deck saw: one record per call, and the report built from them. Pure data."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal, NamedTuple

from .._base.words import plural
from .outage import outage_line

Source = Literal["replay", "live", "miss", "blocked", "fault"]


class CallRecord(NamedTuple):
    """One call as the deck handled it: the deck's log holds one per call, made as the call
    ends (a named tuple: as immutable as a frozen dataclass, and built at a sixth of its
    cost, on every call's path). ``record._asdict()`` gives its fields by name;
    ``Report.to_dict()`` gives the whole report as JSON-ready data.

    Attributes:
        seq: the call's position in this run.
        kind: the boundary kind.
        name: the call's name.
        key: the call's key.
        source: ``replay`` (answered from the cassette), ``live`` (ran for real),
            ``miss`` (no answer; raised ``ReplayMiss``), ``blocked`` (a side effect refused)
            or ``fault`` (an injected fault raised instead of any answer).
        recorded_seq: the seq of the recorded call that answered it, when replayed.
        ms: the call's duration (recorded, when replayed).
        error: the type name of the error it raised, if any.
        fault: the kind of fault injected at it, if any.
        step: the loop's step label, if given (``fd.step`` or ``step=``).
        started: the clock's reading when the call started.
        retry_after: the Retry-After, in seconds, of the error it raised, if any.
        code: the provider's error code of the error it raised, if any.
        partial: the call failed after part of its output (a stream's first event)
            had reached the loop.
        streamed: its answer is a stream of events (server-sent events at the HTTP
            boundary), so the stream faults can happen at it.
        side_effect: the call changes the world (``side_effect=True``, a tool made with
            ``@deck.tool(side_effect=True)``): ``injection_contained`` watches for it.
    """

    seq: int
    kind: str
    name: str
    key: str
    source: Source
    recorded_seq: int | None = None
    ms: float = 0.0
    error: str | None = None
    fault: str | None = None
    step: Any = None
    started: float = 0.0
    retry_after: float | None = None
    code: str | None = None
    partial: bool = False
    streamed: bool = False
    side_effect: bool = False


@dataclass(frozen=True, slots=True)
class CallRef:
    """A recorded call named in a report: where it is and what it was."""

    seq: int
    kind: str
    name: str
    key: str
    line: int


@dataclass(frozen=True, slots=True)
class Repeat:
    """A key asked more often than it was recorded: a retry storm, or a loop that changed."""

    key: str
    kind: str
    name: str
    recorded: int
    asked: int


@dataclass(frozen=True, slots=True)
class Report:
    """A deck's account of one run.

    Attributes:
        cassette: the cassette's path.
        mode: the mode the deck ran in (``once`` shows what it became).
        entries: recorded calls available to answer from.
        used: recorded calls that answered a call.
        live: calls that ran for real.
        unused: recorded calls never asked for.
        repeats: keys asked more often than recorded.
        misses: calls that had no answer.
        order_changes: times a call was answered by a recorded call from earlier in the
            recording than the one answered just before it.
        faults: calls at which a fault was injected.
        waited: seconds the run spent waiting on the deck's clock (backoffs, Retry-After).
        sleeps: each wait, when the clock is virtual (it keeps them).
        harness_changed: ``(recorded, current)`` git SHAs when they differ.
        interrupted: the cassette's recorded run did not close cleanly.
        calls: every call, in the order they started.
        kept: where a fresh recording was left, beside the cassette, because the run did
            not close cleanly or live calls got no answer (the cassette itself is as it
            was); ``None`` otherwise.
        stored: the calls this run wrote to its cassette (recording modes; ``0`` otherwise).
        unanswered: the error type of each live call that got no answer (connection
            refused, a name that does not resolve, nothing back in time): raised to the
            program, never written.
        remote_tools: the tools that said they reach a service (``Deck.remote_tools``).
    """

    cassette: str
    mode: str
    entries: int
    used: int
    live: int
    unused: tuple[CallRef, ...]
    repeats: tuple[Repeat, ...]
    misses: tuple[CallRecord, ...]
    order_changes: int
    faults: int
    waited: float
    sleeps: tuple[float, ...]
    harness_changed: tuple[str, str] | None
    interrupted: bool
    calls: tuple[CallRecord, ...]
    kept: str | None = None
    stored: int = 0
    unanswered: tuple[str, ...] = ()
    remote_tools: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """No misses, no repeats and nothing left unused."""
        return not (self.misses or self.repeats or self.unused)

    def outage(self) -> str | None:
        """The line that says which live calls got no answer and what the run kept
        (``recorded 0 of 6 calls: 6 got no answer (ConnectError); runs/base.jsonl kept,
        …``), or ``None`` when every live call was answered."""
        if not self.unanswered:
            return None
        return outage_line(
            mode=self.mode,
            stored=self.stored,
            used=self.used,
            unanswered=self.unanswered,
            cassette=self.cassette,
            kept=self.kept,
        )

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-ready data."""
        data = asdict(self)
        data["calls"] = [call._asdict() for call in self.calls]
        data["misses"] = [call._asdict() for call in self.misses]
        data["ok"] = self.ok
        return data

    def __str__(self) -> str:
        lines = [
            f"cassette {self.cassette} ({self.mode}): {self.entries} recorded, "
            f"{self.used} used, {self.live} live, {len(self.unused)} unused, "
            f"{len(self.repeats)} repeated, {len(self.misses)} missed, "
            f"{self.order_changes} order changes"
        ]
        if self.interrupted:
            lines.append("  the recorded run was interrupted (no end line)")
        if self.unanswered:
            types = ", ".join(sorted(set(self.unanswered)))
            calls = plural(len(self.unanswered), "live call")
            lines.append(f"  {calls} got no answer ({types}), not written")
        if self.kept:
            lines.append(f"  the new recording was kept in {self.kept}; the cassette is as it was")
        if self.faults:
            lines.append(f"  faults injected: {self.faults}")
        if self.harness_changed:
            recorded, current = self.harness_changed
            lines.append(f"  recorded at commit {recorded}, replayed at {current}")
        for miss in self.misses:
            lines.append(f"  miss: seq {miss.seq} {miss.kind} {miss.name} ({miss.key})")
        for rep in self.repeats:
            lines.append(
                f"  repeat: {rep.kind} {rep.name} ({rep.key}) recorded {rep.recorded}x, "
                f"asked {rep.asked}x"
            )
        for ref in self.unused[:20]:
            lines.append(
                f"  unused: seq {ref.seq} {ref.kind} {ref.name} ({ref.key}), line {ref.line}"
            )
        if len(self.unused) > 20:
            lines.append(f"  … and {len(self.unused) - 20} more unused")
        return "\n".join(lines)
