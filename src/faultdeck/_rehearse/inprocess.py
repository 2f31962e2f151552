"""The fault matrix: one golden cassette replayed under each fault at each call position.

    clean replay, twice ─► positions, baseline, the "replay (x2)" row (determinism)
    each fault row x each position its kind applies to (or each named plan):
        fresh clock + fresh deck(faults=plan) ─► entry(deck, clock) ─► outcomes ─► check()
        ─► Cell: held | broke | miss (off the recorded path) | raised | killed
    a crash ─► a fault-free restart must finish as the clean run did

An entrypoint is ``entry(deck, clock) -> Sequence[Outcome]``, named ``"package.module:fn"``
so that worker processes can import it. Pure: ``rehearse`` returns a ``Matrix`` and prints
nothing; ``render`` shows it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import tempfile
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._base.clock import VirtualClock
from .._base.errors import CassetteError, ConfigError, ProcessKilled, ReplayMiss
from .._base.loading import first_line
from .._deck.deck import Deck
from .._judge.invariants import Violation, check
from .._judge.policy import Outcome, Policy
from ..faults import FaultPlan
from ..faults._kinds import kills
from .branches import (
    Branching,
    branch_of,
    branches_of,
    check_branching,
    header,
    on_branches,
    path_of,
)
from .matrix import (
    NOT_FIRED,
    REPLAY_ROW,
    Cell,
    Entrypoint,
    Executor,
    Matrix,
    Task,
    answers_of,
    brief,
    check_executor,
    difference,
    entry_of,
    fired,
    judged,
    judging_policy,
    load_entrypoint,
    menu_rows,
    plan_cells,
    positions_of,
    short,
)

if TYPE_CHECKING:
    from .ray import Shipped


def rehearse(  # noqa: PLR0913 - the public call: options by keyword
    entrypoint: str | Entrypoint,
    cassette: str | os.PathLike[str],
    plans: Mapping[str, FaultPlan] | None = None,
    *,
    policy: Policy | None = None,
    jobs: int = 1,
    progress: Callable[[int, int], None] | None = None,
    executor: Executor = "local",
    address: str | None = None,
    branches: Branching = "replay",
) -> Matrix:
    """Replay ``cassette`` through ``entrypoint`` under each fault, and judge each run.

    Args:
        entrypoint: ``"package.module:function"`` or the function itself; it takes
            ``(deck, clock)``, runs the loop through that deck and returns the outcomes.
        cassette: the golden cassette.
        plans: named fault plans, one cell each; ``None`` for the full matrix: each
            ``FAULT_MENU`` fault at each call position of the clean run that its kind
            applies to.
        policy: the policy to judge by; else the entrypoint module's ``POLICY`` (if it is a
            ``Policy``), else ``Policy()``.
        jobs: how many processes run the cells; more than 1 needs a string entrypoint.
            Under Ray, the CPUs of the local cluster it starts.
        progress: called as ``progress(done, total)`` as cells finish.
        executor: ``"local"`` (this process, or ``jobs`` processes) or ``"ray"`` (each cell
            a Ray task that imports the entrypoint and gets the cassette as bytes).
        address: the Ray cluster to join; ``None`` starts a local one for the call.
        branches: ``replay`` (default): a cell with a branch beside the cassette replays
            on it; ``record``: a cell that leaves the recorded path goes on live from
            there, the upstream reachable, and is kept as its branch (``branches.py``);
            ``off``: none are used.

    Raises:
        ConfigError: a bad entrypoint, plan, ``jobs`` or executor, Ray missing, or a
            cassette the entrypoint does not replay cleanly.
        CassetteError: the cassette is missing or unreadable.
    """
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ConfigError(f"jobs must be an integer >= 1, got {jobs!r}")
    executor = check_executor(executor)
    if executor == "ray":
        from .ray import import_ray

        import_ray()  # a missing Ray is said before any run
    where = "on Ray" if executor == "ray" else "on several processes" if jobs > 1 else None
    spec, entry = entry_of(entrypoint, where=where)
    policy, judged_by = judging_policy(policy, spec)
    path = os.fspath(cassette)

    first = _clean(entry, path, spec)
    second = _clean(entry, path, spec)
    baseline = first.outcomes
    positions = positions_of(first.deck.calls)
    found = check(
        baseline, policy=policy, deck=first.deck, clock=first.clock, replays=[second.outcomes]
    )
    replay = Cell(REPLAY_ROW, None, judged(found), tuple(found), brief(baseline), baseline)

    calls = first.deck.calls
    answers = answers_of(calls, first.deck.recording)
    tasks = plan_cells(plans, policy, calls, first.deck.remote_tools, answers)
    rows = menu_rows(plans, tasks)
    branched = branches_of(path) if check_branching(branches) != "off" else {}
    on_golden = [task for task in tasks if branch_of(branched, task) is None]
    total = len(tasks) + 1
    if progress is not None:
        progress(1, total)
    cells: list[Cell] = []
    if executor == "ray" and tasks:
        from .ray import Placement, rehearse_cells

        shared = (spec, dataclasses.asdict(policy), baseline)
        placed = Placement(address, jobs, progress, total)
        cells = rehearse_cells(_ray_cell, path, shared, on_golden, placed)
    elif jobs == 1 or not on_golden:
        for label, seq, plan in on_golden:
            cells.append(_run_cell(entry, path, policy, label, seq, plan, baseline))
            if progress is not None:
                progress(len(cells) + 1, total)
    else:
        cells = _run_pool(spec, path, policy, on_golden, baseline, jobs, progress, total)
    cells = on_branches(
        tasks,
        branched,
        cells,
        branches,
        lambda on, task: _run_cell(entry, on, policy, *task, baseline),
        lambda task: _record_branch(entry, path, path_of(path, *task[:2]), task),
    )
    return Matrix(path, spec, positions, rows, (replay, *cells), baseline, judged_by)


def _record_branch(
    entry: Entrypoint, cassette: str, path: str, task: Task
) -> tuple[str, tuple[str, ...]]:
    """Run the task's cell again, replaying ``cassette`` until the first call it lacks and
    live from there (a fork without ``at``), into its branch at ``path``; that path, and
    the error type of each live call that got no answer."""
    label, seq, plan = task
    os.makedirs(os.path.dirname(path), exist_ok=True)
    clock = VirtualClock()
    deck = Deck(
        path,
        mode="fork",
        parent=cassette,
        faults=plan,
        clock=clock,
        on_harness_change="ignore",
        branch=header(label, seq, plan, 0),  # its left_at, once it leaves the path
        allow_side_effects=True,  # as record does: the branch is the run the fault leads to
    )
    with contextlib.suppress(Exception), deck:  # the loop's end is judged on the replay
        entry(deck, clock)
    return path, deck.report().unanswered


# -- one run ---------------------------------------------------------------------------------


@dataclass(slots=True)
class _Played:
    """One replay of the cassette through the entrypoint, and how it ended."""

    deck: Deck
    clock: VirtualClock
    outcomes: tuple[Outcome, ...] = ()
    error: Exception | ReplayMiss | None = None
    killed: bool = False

    def miss(self) -> str | None:
        """The first line of the replay miss, if the run went off the recorded path."""
        if isinstance(self.error, ReplayMiss):
            return first_line(self.error)
        misses = self.deck.report().misses
        if misses:  # the loop caught the ReplayMiss; the deck's log still has it
            call = misses[0]
            return f"replay miss at seq {call.seq}: {call.kind} {call.name} (the loop caught it)"
        return None

    def problem(self) -> str | None:
        """What kept the run from finishing: the miss, the exception or the kill."""
        miss = self.miss()
        if miss is not None:
            return miss
        if self.error is not None:
            return f"{type(self.error).__name__}: {first_line(self.error)}"
        return "ProcessKilled: the run was killed" if self.killed else None


def _play(entry: Entrypoint, cassette: str, plan: FaultPlan | None) -> _Played:
    clock = VirtualClock()
    # Under a fault the loop retries steps, asking calls again that the clean run asked
    # once: they get the same answer again (counted as repeats), not a miss.
    deck = Deck(
        cassette,
        mode="replay",
        faults=plan,
        clock=clock,
        on_harness_change="ignore",
        repeats="last" if plan else "miss",
    )
    played = _Played(deck, clock)
    try:
        with deck:
            result: object = entry(deck, clock)
        if not (
            isinstance(result, Sequence)
            and not isinstance(result, str)
            and all(isinstance(o, Outcome) for o in result)
        ):
            raise ConfigError(
                f"the entrypoint returned {short(result)}; it must return the loop's "
                "outcomes (a list of fd.Outcome)"
            )
        played.outcomes = tuple(result)
    except ProcessKilled:
        played.killed = True
    except (Exception, ReplayMiss) as exc:  # the loop let it out: judged, never propagated
        played.error = exc
    return played


def _clean(entry: Entrypoint, cassette: str, spec: str) -> _Played:
    played = _play(entry, cassette, None)
    if isinstance(played.error, (ConfigError, CassetteError)):
        raise played.error
    problem = played.problem()
    if problem is not None:
        raise ConfigError(
            f"the clean replay of {cassette} with {spec} does not replay: {problem}; "
            "re-record the cassette"
        )
    return played


def _run_cell(
    entry: Entrypoint,
    cassette: str,
    policy: Policy,
    label: str,
    seq: int | None,
    plan: FaultPlan,
    baseline: tuple[Outcome, ...],
) -> Cell:
    played = _play(entry, cassette, plan)
    if isinstance(played.error, ConfigError):  # the plan is bad input (a fault a call cannot
        raise played.error  # show), not the loop's finding
    if played.killed:
        return _restart(entry, cassette, policy, label, seq, played, baseline)
    miss = played.miss()
    if miss is not None:
        return Cell(label, seq, "miss", detail=miss, outcomes=played.outcomes)
    if played.error is not None:
        # No outcomes came back: whatever the loop had finished is lost with the exception.
        found = check([], policy=policy, deck=played.deck, clock=played.clock)
        error = played.problem() or ""
        return Cell(label, seq, "broke" if found else "raised", tuple(found), error)
    found = check(played.outcomes, policy=policy, deck=played.deck, clock=played.clock)
    outcomes = played.outcomes
    if not found and not fired(plan, played.deck.calls):
        return Cell(label, seq, "not fired", (), NOT_FIRED, outcomes)
    return Cell(label, seq, judged(found), tuple(found), brief(outcomes), outcomes)


def _restart(
    entry: Entrypoint,
    cassette: str,
    policy: Policy,
    label: str,
    seq: int | None,
    killed: _Played,
    baseline: tuple[Outcome, ...],
) -> Cell:
    """After a crash, a fresh fault-free run must finish as the clean run did."""
    at = next((c.seq for c in reversed(killed.deck.calls) if kills(c.fault)), seq)
    where = f"killed at seq {at}" if at is not None else "killed"
    again = _play(entry, cassette, None)
    problem = again.problem()
    if problem is not None:
        return Cell(label, seq, "broke", (), f"{where}; a fresh replay then raised {problem}")
    found = check(again.outcomes, policy=policy, deck=again.deck, clock=again.clock)
    differs = difference(again.outcomes, baseline)
    if differs is not None:
        bound = "a fresh run after a crash finishes as the clean run did"
        found.append(Violation("replay_determinism", differs[0], bound, differs[1]))
    if found:
        detail = f"{where}; a fresh replay then broke {', '.join(v.invariant for v in found)}"
        return Cell(label, seq, "broke", tuple(found), detail, again.outcomes)
    detail = f"{where}; a fresh replay then finished as the clean run did"
    return Cell(label, seq, "killed", (), detail, again.outcomes)


def _run_pool(
    spec: str,
    cassette: str,
    policy: Policy,
    tasks: list[Task],
    baseline: tuple[Outcome, ...],
    jobs: int,
    progress: Callable[[int, int], None] | None,
    total: int,
) -> list[Cell]:
    # A few batches per worker: few enough that pickling stays cheap, enough that a slow
    # batch does not leave the other workers idle at the end.
    size = max(1, math.ceil(len(tasks) / (jobs * 4)))
    batches = [
        [(label, seq, plan.to_json()) for label, seq, plan in tasks[i : i + size]]
        for i in range(0, len(tasks), size)
    ]
    fields = dataclasses.asdict(policy)
    results: list[list[Cell]] = [[] for _ in batches]
    done = 1
    with ProcessPoolExecutor(max_workers=min(jobs, len(batches))) as pool:
        pending: dict[Future[list[Cell]], int] = {
            pool.submit(_run_batch, spec, cassette, fields, batch, baseline): i
            for i, batch in enumerate(batches)
        }
        while pending:
            finished, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in finished:
                index = pending.pop(future)
                results[index] = future.result()
                done += len(results[index])
                if progress is not None:
                    progress(done, total)
    return [cell for batch in results for cell in batch]


def _run_batch(
    spec: str,
    cassette: str,
    policy_fields: dict[str, Any],
    batch: list[tuple[str, int | None, dict[str, Any]]],
    baseline: tuple[Outcome, ...],
) -> list[Cell]:
    """Run cells in a worker process: only plain data crosses the process boundary."""
    entry = load_entrypoint(spec)
    policy = Policy(**policy_fields)
    return [
        _run_cell(entry, cassette, policy, label, seq, FaultPlan.from_dict(plan), baseline)
        for label, seq, plan in batch
    ]


def _ray_cell(
    cassette: Shipped,
    label: str,
    seq: int | None,
    plan: dict[str, Any],
    spec: str,
    policy_fields: dict[str, Any],
    baseline: tuple[Outcome, ...],
) -> Cell:
    """A cell as a Ray task: the cassette's bytes become a file of the worker's own."""
    with tempfile.TemporaryDirectory(prefix="faultdeck-ray-") as folder:
        copy = cassette.write(folder)
        (cell,) = _run_batch(spec, copy, policy_fields, [(label, seq, plan)], baseline)
    return dataclasses.replace(cell, detail=cassette.named(cell.detail, copy))


# -- small helpers -----------------------------------------------------------------------------
