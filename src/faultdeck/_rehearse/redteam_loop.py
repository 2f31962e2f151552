"""The loop a redteam search judges plans on: an entrypoint in-process, or a program.

Each is built from its clean run (which must replay the cassette cleanly) and gives the
calls faults can aim at, a task's cell on a cassette given (the golden one or a branch),
and how to record a task's branch (``_record_branch``). In-process, a plan that held is
replayed a second time: it must give the same outcomes.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

from .._base.errors import ConfigError
from .._judge.invariants import Violation
from .._judge.policy import Policy
from .command import _calls, _run, run_cell
from .command import _record_branch as record_program_branch
from .inprocess import _record_branch as record_entry_branch
from .matrix import Cell, Entrypoint, Task, difference, entry_of, judging_policy
from .played import _clean, _play, _run_cell
from .redteam_branches import Record
from .redteam_space import Target, targets_of


@dataclass(frozen=True, slots=True)
class Loop:
    """The loop a search judges plans on, its clean run done.

    Attributes:
        spec: the entrypoint as ``module:function``, or the command.
        policy: the policy that judges the runs.
        judged_by: which policy that is, and where it came from.
        targets: the calls of the clean run that faults can aim at.
        run: a task's cell, run on the cassette given (the golden one or a branch).
        record: records a task's branch into the path given.
    """

    spec: str
    policy: Policy
    judged_by: str
    targets: tuple[Target, ...]
    run: Callable[[str, Task], Cell]
    record: Record


def in_process(path: str, entrypoint: str | Entrypoint, policy: Policy | None) -> Loop:
    """The entrypoint's loop on the cassette at ``path``, judged by ``policy`` (else its
    module's ``POLICY``, else the default).

    Raises:
        ConfigError: a bad entrypoint, or a cassette it does not replay cleanly.
    """
    spec, entry = entry_of(entrypoint)
    policy, judged_by = judging_policy(policy, spec)
    first = _clean(entry, path, spec)
    baseline = first.outcomes

    def run(cassette: str, task: Task) -> Cell:
        label, seq, plan = task
        cell = _run_cell(entry, cassette, policy, label, seq, plan, baseline)
        if cell.status != "held":
            return cell
        # A second replay under the same plan must give the same outcomes, as the matrix's
        # "replay (x2)" row asks of the clean run.
        again = _play(entry, cassette, plan)
        problem = again.problem()
        differs = None if problem is not None else difference(again.outcomes, cell.outcomes)
        if problem is None and differs is None:
            return cell
        op, observed = (None, f"a second replay raised {problem}") if differs is None else differs
        bound = "replays of one cassette under one plan give the same outcomes"
        found = (Violation("replay_determinism", op, bound, observed),)
        return Cell(label, seq, "broke", found, cell.detail, cell.outcomes)

    def record(task: Task, to: str) -> tuple[str, Sequence[str]]:
        return record_entry_branch(entry, path, to, task)

    targets = targets_of(first.deck.calls, first.deck.remote_tools)
    return Loop(spec, policy, judged_by, targets, run, record)


def of_program(
    command: list[str], path: str, folder: str, policy: Policy | None, ok_exit: Collection[int]
) -> Loop:
    """The program's loop on the cassette at ``path``, each run's files in ``folder``, an
    exit code in ``ok_exit`` its ending well.

    Raises:
        ConfigError: the clean run does not replay the cassette, or writes no report.
    """
    policy, judged_by = judging_policy(policy)
    clean = _run(command, path, None, folder, "clean", ok_exit=ok_exit)
    if clean.report is None or not clean.ok or clean.report["misses"]:
        raise ConfigError(
            f"the clean replay of {path} with {' '.join(command)} does not replay "
            f"({clean.ending()}); re-record the cassette, and check that the program runs "
            "on a Python with faultdeck installed (the bootstrap gives it its deck)"
        )
    calls = _calls(clean.report)
    names = itertools.count(1)  # each run's files in ``folder``

    def run(cassette: str, task: Task) -> Cell:
        name = str(next(names))
        return run_cell(command, cassette, folder, name, task, calls, policy, ok_exit=ok_exit)

    def record(task: Task, to: str) -> tuple[str, Sequence[str]]:
        return record_program_branch(command, path, folder, task, to)

    targets = targets_of(calls, clean.report.get("remote_tools", []))
    return Loop(" ".join(command), policy, judged_by, targets, run, record)
