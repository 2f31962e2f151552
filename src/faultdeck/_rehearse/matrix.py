"""The fault matrix as data: its rows, its cells, the tasks that fill it.

A matrix replays one golden cassette under each fault at each call position (or under
named plans) and judges each run; ``inprocess`` and ``command`` fill it, ``render`` shows
it. The rows come from the fault kinds' table (``faultdeck.faults.KINDS``), and each row
runs only at the calls its kind can happen at (``FaultKind.applies``: no quota error at an
environment read or at a tool that reaches no service, no stream cut where nothing
streamed); the other cells are not run.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast

from .._base.clock import VirtualClock
from .._base.errors import ConfigError
from .._base.loading import load_attr
from .._cassette.format import Recording
from .._cassette.reader import load
from .._deck.deck import Deck
from .._deck.report import CallRecord
from .._judge.invariants import Violation
from .._judge.policy import Outcome, Policy
from ..faults import KINDS, Fault, FaultPlan
from ..faults._kinds import Judged
from ..faults._results import lands_on
from ..faults._shapes import TOOL_CALL_KINDS, silent_about, without_tool_calls

Status = Literal["held", "broke", "miss", "raised", "killed", "not fired"]
FINDINGS: frozenset[str] = frozenset({"broke", "miss", "raised"})
"""The statuses that are findings: an invariant broke, the loop left the recorded path, or
it let an exception out. A crash the restart recovered from (``killed``) is not one."""
Entrypoint = Callable[[Deck, VirtualClock], Sequence[Outcome]]

Executor = Literal["local", "ray"]
"""Where the cells run: here (threads or processes) or as tasks on a Ray cluster."""
EXECUTORS: tuple[str, ...] = ("local", "ray")

GIVEN = "the policy given"
"""What a rehearsal says of a policy its caller passed (the command line names its
``--policy`` instead)."""


REPLAY_ROW = "replay (x2)"
"""The row that replays the clean run twice and checks it (replay determinism included)."""


def _row(kind: str, params: Callable[[Judged], dict[str, Any]]) -> Callable[[Policy], Fault]:
    return lambda policy: Fault(kind, tuple(params(policy).items()))


# Each kind says which rows it brings, built from the policy so that each fault bites: a
# Retry-After the policy may honour, a first token slower than the policy's threshold.
FAULT_MENU: dict[str, Callable[[Policy], Fault]] = {
    label: _row(kind.name, params) for kind in KINDS.values() for label, params in kind.rehearse
}
"""The rows of the full matrix, by label: each makes its fault from the judging policy."""


@dataclass(frozen=True, slots=True)
class Cell:
    """One rehearsal: a fault (or plan) at a call position, and how the loop took it.

    Attributes:
        label: the row: a ``FAULT_MENU`` label, a plan's name or ``REPLAY_ROW``.
        seq: the call position the fault was placed at; ``None`` for a whole plan.
        status: ``held`` (every invariant held), ``broke`` (one did not), ``miss`` (the
            fault took the loop off the recorded path, so the cassette cannot judge it),
            ``raised`` (the loop let an exception out, breaking no invariant), ``killed``
            (a crash, after which a fresh run finished as the clean run did) or
            ``not fired`` (the fault never landed: the loop never reached its call, or
            a result fault found nothing to change there; nothing was judged, and it is
            counted apart, never as held). ``broke``, ``miss`` and ``raised`` are
            findings.
        violations: what broke.
        detail: one line: the outcomes in short, the miss, the exception or the restart.
        outcomes: what the loop returned.
    """

    label: str
    seq: int | None
    status: Status
    violations: tuple[Violation, ...] = ()
    detail: str = ""
    outcomes: tuple[Outcome, ...] = ()


@dataclass(frozen=True, slots=True)
class Matrix:
    """A rehearsal's result: every cell, in row order, then position order.

    Attributes:
        cassette: the cassette replayed.
        entrypoint: the entrypoint, as ``module:function``.
        positions: ``(seq, "kind name")`` of each call the clean replay makes, in order.
        rows: the row labels, in order; ``REPLAY_ROW`` first.
        cells: the cells, row by row; a fault row has none at the calls its kind does not
            apply to (not run, not counted).
        baseline: the clean replay's outcomes.
        policy: which policy judged the runs, and where it came from (``--policy``, the
            entrypoint module's ``POLICY``, or the default, named as such).
    """

    cassette: str
    entrypoint: str
    positions: tuple[tuple[int, str], ...]
    rows: tuple[str, ...]
    cells: tuple[Cell, ...]
    baseline: tuple[Outcome, ...]
    policy: str = GIVEN

    @property
    def broken(self) -> tuple[Cell, ...]:
        """The cells where an invariant did not hold."""
        return tuple(c for c in self.cells if c.status == "broke")

    @property
    def findings(self) -> tuple[Cell, ...]:
        """The cells that broke, missed or raised (a kill the restart recovered from is not
        a finding)."""
        return tuple(c for c in self.cells if c.status in FINDINGS)

    @property
    def ok(self) -> bool:
        """No finding: no cell broke, went off the recorded path or raised."""
        return not self.findings


def load_entrypoint(spec: str) -> Entrypoint:
    """Import the entrypoint named ``"package.module:function"``.

    Raises:
        ConfigError: the spec is malformed, the module does not import, or the name is
            missing or not callable; one line saying what to write.
    """
    found = load_attr(spec, what="entrypoint", kind="function")
    if not callable(found):
        raise ConfigError(f"{spec!r} is not callable; name a function taking (deck, clock)")
    entry: Entrypoint = found
    return entry


def entry_of(entrypoint: object, *, where: str | None = None) -> tuple[str, Entrypoint]:
    """The entrypoint given as ``"package.module:function"`` or as the function itself,
    and its spec (``module:qualname`` for a function); ``where`` names another process it
    is to run in (``on Ray``), which needs the spec.

    Raises:
        ConfigError: neither, a spec that does not load, or a function for ``where``.
    """
    if isinstance(entrypoint, str):
        return entrypoint, load_entrypoint(entrypoint)
    if not callable(entrypoint):
        raise ConfigError(f"entrypoint must be 'package.module:function', got {entrypoint!r}")
    if where is not None:
        raise ConfigError(f"pass the entrypoint as 'module:function' to run it {where}")
    name = getattr(entrypoint, "__qualname__", type(entrypoint).__qualname__)
    return f"{getattr(entrypoint, '__module__', '?')}:{name}", entrypoint


def difference(outcomes: Sequence[Outcome], baseline: Sequence[Outcome]) -> tuple[Any, str] | None:
    """The first of the baseline's ops whose outcome differs (timing aside), and how."""

    got = [dataclasses.replace(o, elapsed_ms=0.0) for o in outcomes]
    want = [dataclasses.replace(o, elapsed_ms=0.0) for o in baseline]
    if got == want:
        return None
    pairs = enumerate(zip(got, want, strict=False))
    i = next((i for i, (x, y) in pairs if x != y), min(len(got), len(want)))
    now = brief(outcomes[i : i + 1]) or "no outcome"
    then = brief(baseline[i : i + 1]) or "no outcome"
    return (baseline[i] if i < len(baseline) else outcomes[i]).op, f"{now} instead of {then}"


# -- the cells to run --------------------------------------------------------------------------

Task = tuple[str, int | None, FaultPlan]
"""A cell to run: its row, its call position (None for a named plan), its plan."""


def positions_of(calls: Sequence[CallRecord]) -> tuple[tuple[int, str], ...]:
    """``(seq, "kind name")`` of each call of the clean run."""
    return tuple((c.seq, f"{c.kind} {c.name}") for c in calls)


_MCP_REQUEST = "mcp:"
"""How an MCP session's own requests are named (``mcp:tools/list``, ``faultdeck.mcp``): a
listing or a read, no tool result, so no result fault (``injection``) is placed there."""


def plan_cells(
    plans: Mapping[str, FaultPlan] | None,
    policy: Policy,
    calls: Sequence[CallRecord],
    remote: Collection[str] = frozenset(),
    answers: Mapping[int, Any] | None = None,
) -> list[Task]:
    """The cells to run: each menu fault at each call of the clean run it applies to (a
    network fault at a tool only when the tool is in ``remote``; a fault that changes a
    tool's result, ``injection``, at each tool result that holds what it changes, by the
    clean run's ``answers`` (``answers_of``), and not at an MCP session's listings), or one
    whole-run cell per named plan."""
    if plans is None:
        tasks: list[Task] = []
        for label, make in FAULT_MENU.items():
            fault = make(policy)
            tasks += [
                (label, c.seq, FaultPlan([fault.at(seq=c.seq)]))
                for c in calls
                if fault.spec.applies(c.kind, streamed=c.streamed, remote=c.name in remote)
                and _changes(fault, c, answers)
            ]
        return tasks
    if not plans:
        raise ConfigError("no fault plans given; pass None for the full matrix")
    tasks = []
    for name, plan in plans.items():
        if name == REPLAY_ROW:
            raise ConfigError(f"plan name {name!r} is taken by the clean replay's row; rename it")
        if not isinstance(plan, FaultPlan):
            raise ConfigError(f"plan {name!r}: expected a FaultPlan, got {short(plan)}")
        tasks.append((name, None, plan))
    return tasks


def _changes(fault: Fault, call: CallRecord, answers: Mapping[int, Any] | None) -> bool:
    """Whether ``fault`` has something to change at ``call``: a fault that breaks a
    model's answer where the answer can show it; any other fault that does not change a
    result; a result fault at a tool result (no MCP listing) that holds what it changes, as
    far as ``answers`` say."""
    spec = fault.spec
    if spec.answer is not None and silent_about(call.name) is not None:
        return False  # a call whose answers show no misbehaviour (an embedding): not run
    if spec.name in TOOL_CALL_KINDS and without_tool_calls(call.name) is not None:
        return False  # a call whose answers hold no tool call (Ollama's generate): not run
    if spec.alter is None:
        return True
    if call.name.startswith(_MCP_REQUEST):
        return False
    return (
        answers is None
        or call.seq not in answers
        or lands_on(spec, fault.values, answers[call.seq])
    )


def answers_of(calls: Sequence[CallRecord], recording: Recording | str | None) -> dict[int, Any]:
    """The answer each of the clean run's ``calls`` got from ``recording`` (or the cassette
    at that path), by seq."""
    if recording is None:
        return {}
    if isinstance(recording, str):
        recording = load(recording)
    by_seq = {entry.seq: entry for entry in recording.entries}
    found = {}
    for call in calls:
        entry = by_seq.get(call.recorded_seq) if call.recorded_seq is not None else None
        if entry is not None and entry.result == "out":
            found[call.seq] = entry.value
    return found


def check_executor(executor: object) -> Executor:
    """``executor`` itself, if it is one the rehearsal can run on.

    Raises:
        ConfigError: it is neither ``"local"`` nor ``"ray"``.
    """
    if isinstance(executor, str) and executor in EXECUTORS:
        return cast(Executor, executor)
    raise ConfigError(f"executor must be 'local' or 'ray', got {short(executor)}")


def judging_policy(given: Policy | None, spec: str | None = None) -> tuple[Policy, str]:
    """The policy a rehearsal judges by, and where it came from: ``given``; else the
    ``POLICY`` of the entrypoint module ``spec`` names (``module:function``); else
    ``Policy()``, the default."""
    if given is not None:
        return given, GIVEN
    if spec is None:
        return Policy(), "Policy(), the default (no --policy given)"
    module = spec.partition(":")[0]
    found = getattr(sys.modules.get(module), "POLICY", None)
    if isinstance(found, Policy):
        return found, f"{module}:POLICY, the entrypoint module's"
    return Policy(), f"Policy(), the default (no --policy given, and {module} has no POLICY)"


def menu_rows(plans: Mapping[str, FaultPlan] | None, tasks: Sequence[Task]) -> tuple[str, ...]:
    """The rows: the clean replay's, then every menu row (one that applies nowhere is all
    "not applicable"), or the named plans."""
    labels = FAULT_MENU if plans is None else dict.fromkeys(label for label, _, _ in tasks)
    return (REPLAY_ROW, *labels)


def judged(found: Sequence[Violation]) -> Status:
    return "broke" if found else "held"


NOT_FIRED = (
    "the fault never landed (the loop never reached its call, or the call held nothing it "
    "changes): nothing to judge"
)
"""A ``not fired`` cell's detail."""


def fired(plan: FaultPlan, calls: Sequence[CallRecord] | Sequence[Mapping[str, Any]]) -> bool:
    """Whether a fault of ``plan`` landed on one of the run's ``calls`` (records, or their
    JSON in a report); a plan with no faults counts as fired."""
    if not plan.faults:
        return True
    return any((c.fault if isinstance(c, CallRecord) else c.get("fault")) for c in calls)


def brief(outcomes: Sequence[Outcome]) -> str:
    """Outcomes in short: ``plan ok, read stopped(quota)``; ``x2`` for a second attempt."""
    parts = []
    for o in outcomes:
        op = o.op if isinstance(o.op, str) else repr(o.op)
        reason = f"({o.reason})" if o.reason else ""
        tries = f" x{o.attempts}" if o.attempts > 1 else ""
        parts.append(f"{op} {o.status}{reason}{tries}")
    return ", ".join(parts)


def short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
