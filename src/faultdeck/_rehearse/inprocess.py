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
from collections.abc import Callable, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import TYPE_CHECKING, Any

from .._base.clock import VirtualClock
from .._base.errors import ConfigError
from .._deck.deck import Deck
from .._judge.invariants import check
from .._judge.policy import Outcome, Policy
from ..faults import FaultPlan
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
    REPLAY_ROW,
    Cell,
    Entrypoint,
    Executor,
    Matrix,
    Task,
    answers_of,
    brief,
    check_executor,
    entry_of,
    judged,
    judging_policy,
    load_entrypoint,
    menu_rows,
    plan_cells,
    positions_of,
)
from .played import _clean, _run_cell

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
    broken: list[int] = []  # batches a worker's death took down: each cell run alone after
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
                try:
                    results[index] = future.result()
                except BrokenProcessPool:
                    broken.append(index)
                    continue
                done += len(results[index])
                if progress is not None:
                    progress(done, total)
    for index in broken:
        results[index] = [_alone(spec, cassette, fields, task, baseline) for task in batches[index]]
        done += len(results[index])
        if progress is not None:
            progress(done, total)
    return [cell for batch in results for cell in batch]


def _alone(
    spec: str,
    cassette: str,
    fields: dict[str, Any],
    task: tuple[str, int | None, dict[str, Any]],
    baseline: tuple[Outcome, ...],
) -> Cell:
    """One cell in a worker of its own, after a worker died: the cell whose run killed its
    process is ``raised``, saying so, as a Ray worker's death is; the others run as usual."""
    with ProcessPoolExecutor(max_workers=1) as pool:
        try:
            (cell,) = pool.submit(_run_batch, spec, cassette, fields, [task], baseline).result()
        except BrokenProcessPool:
            why = "the worker process running it died (its process was killed or exited)"
            return Cell(task[0], task[1], "raised", (), why)
    return cell


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
