"""Redteam on branches: a plan that leads the loop off the recorded path is judged there.

A plan whose faults lead the loop somewhere the golden cassette never went is a ``miss``:
the cassette has no answer to judge it by (``branches.py``). ``redteam(..., branches=)``:

* ``replay`` (the default): a plan for which a branch of the cassette was recorded under
  the very same plan (``of_plan``: a rehearse cell's, or the one an earlier search kept)
  is judged on that branch, offline;
* ``record``: a plan that leaves the recorded path is also recorded once, live from there
  (as ``rehearse --branches record`` records a cell), into a folder of the search's own,
  and judged on what it recorded; each recording costs one run of the budget, as a replay
  does. A recording whose live calls got no answer is dropped: the plan stays a miss;
* ``off``: none are used.

Of the branches a search records, only the one of the plan it reports is kept: moved beside
the cassette as ``base.branches/redteam-<12 hex>.jsonl`` (the start of the sha256 of the
plan's ``plan_key``), its header's ``parent.branch`` naming the cell ``redteam``, no seq,
the plan and where it left the path. The rest go with the search's folder.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial

from ..faults import FaultPlan
from .branches import (
    REDTEAM,
    Branch,
    Branching,
    branches_of,
    of_plan,
    on_branch,
    path_of,
    plan_key,
)
from .matrix import Cell, Task

Record = Callable[[Task, str], tuple[str, Sequence[str]]]
"""Records a task's branch into the path given: that path, and the error type of each live
call that got no answer (``_record_branch`` in ``inprocess.py`` and ``command.py``)."""


@dataclass(slots=True)
class Runs:
    """The runs a search has made of its budget: plans replayed and branches recorded."""

    budget: int
    made: int = 0

    @property
    def left(self) -> bool:
        """Whether the budget allows one more run."""
        return self.made < self.budget


def kept_path(cassette: str, plan: FaultPlan) -> str:
    """Where the branch of a redteam plan is kept: ``base.branches/redteam-<12 hex>.jsonl``,
    named for the plan, so that each plan has its own."""
    digest = hashlib.sha256(plan_key(plan)).hexdigest()[:12]
    return path_of(cassette, f"{REDTEAM}-{digest}", None)


@dataclass(slots=True)
class PlanBranches:
    """The branches one search judges its plans on.

    Attributes:
        cassette: the golden cassette.
        branches: ``replay``, ``record`` or ``off``.
        folder: where the branches this search records go until one is kept.
        beside: the usable branches beside the cassette, read once.
        judged_on: by ``plan_key``, the branch each plan was judged on (a plan judged on
            the golden cassette is not in it).
        recorded: the branches this search recorded (in ``folder``).
    """

    cassette: str
    branches: Branching
    folder: str
    beside: dict[tuple[str, int | None], Branch] = field(init=False)
    judged_on: dict[bytes, str] = field(init=False, default_factory=dict)
    recorded: set[str] = field(init=False, default_factory=set)

    def __post_init__(self) -> None:
        self.beside = branches_of(self.cassette) if self.branches != "off" else {}

    def judge(
        self, plan: FaultPlan, runs: Runs, run: Callable[[str, Task], Cell], record: Record
    ) -> Cell:
        """``plan``'s cell: ``run`` on the branch recorded under ``plan`` if the cassette
        has one, else on the golden cassette; with ``record``, and while the budget lasts,
        a run that left the recorded path is recorded (``record``) and run on what it
        recorded."""
        task: Task = (REDTEAM, None, plan)
        found = of_plan(self.beside, plan)
        branching = self.branches if runs.left else "replay"
        cell, on = on_branch(
            task,
            found.path if found is not None else None,
            partial(run, self.cassette, task),
            branching,
            run,
            partial(self._record, runs, record),
            again="redteam",
        )
        if on is not None:
            self.judged_on[plan_key(plan)] = on
        return cell

    def _record(self, runs: Runs, record: Record, task: Task) -> tuple[str, Sequence[str]]:
        """Record the task's branch into this search's folder: one run of the budget."""
        runs.made += 1
        name = os.path.basename(kept_path(self.cassette, task[2]))
        path, unanswered = record(task, os.path.join(self.folder, name))
        if not unanswered:
            self.recorded.add(path)
        return path, unanswered

    def keep(self, plan: FaultPlan | None) -> str | None:
        """The branch ``plan`` was judged on, if it was judged on one; one this search
        recorded is moved beside the cassette first (``kept_path``), where a later search,
        rehearse's ``show`` and a test's marker find it."""
        on = self.judged_on.get(plan_key(plan)) if plan is not None else None
        if plan is None or on is None or on not in self.recorded:
            return on
        path = kept_path(self.cassette, plan)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        shutil.move(on, path)
        return path
