"""A rehearsal's branches: where a fault took the loop off the recorded path, recorded once.

A cell whose fault leads the loop somewhere the golden cassette never went (a fallback tool,
a retry that asks something new) is a ``miss``: the cassette has no answer to judge it by.
``rehearse --branches record`` runs such a cell again with the upstream reachable: it replays
the golden cassette up to the call before the first one it lacks and goes on live from
there (a deck in mode ``fork``), keeping what it recorded as a branch cassette beside the
golden one, ``base.branches/<cell>.jsonl``. Its header names the parent (path, ``at`` and
sha256, as ``fork`` writes them) and, under ``parent.branch``, the cell's row and call, its
fault plan and the seq where it left the path. From then on each such cell replays on its
branch, offline, and is judged like any other.

``redteam`` keeps branches there too, one per plan it reports, named for the plan
(``redteam-<12 hex>.jsonl``, the cell ``redteam``), and so does the pytest plugin, one per
test (``<test name>.jsonl``). A cell with no branch of its own is judged on the branch
recorded under its very plan, if there is one (``branch_of``): a redteam finding pinned as
a named plan replays where it leads.

A branch whose parent changed since (its sha256 no longer the file's) is stale: said in one
warning line and not used. A file in the branch folder that is no branch of this cassette is
an input error: the folder is the rehearsal's own.
"""

from __future__ import annotations

import contextlib
import os
import re
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import Any, Literal, cast

import orjson

from .._base.errors import ConfigError, FaultdeckWarning
from .._base.words import plural
from .._cassette.reader import load
from .._cassette.session import file_sha256
from ..faults import FaultPlan
from .matrix import Cell, Task

Branching = Literal["record", "replay", "off"]
"""What a rehearsal does with branches: record the cells that leave the recorded path,
replay the cells that have one (the default), or use none."""
BRANCHINGS: tuple[str, ...] = ("record", "replay", "off")
REDTEAM = "redteam"
"""The cell a redteam plan's run is judged as, and its branch's header names."""


class StaleBranch(FaultdeckWarning):
    """A branch was recorded from another version of its parent cassette: it is not used."""


@dataclass(frozen=True, slots=True)
class Branch:
    """One recorded branch.

    Attributes:
        path: the branch cassette.
        label: the matrix row of its cell.
        seq: the call its fault was placed at (``None`` for a named plan's cell).
        left_at: the seq of the first call the golden cassette lacked.
        plan: the cell's fault plan, as ``plan_key`` gives it: a redteam plan or a test's
            marker finds the branch of the same plan by it.
    """

    path: str
    label: str
    seq: int | None
    left_at: int
    plan: bytes = b""


def plan_key(plan: FaultPlan | Mapping[str, Any]) -> bytes:
    """A plan as one comparable value: its JSON with sorted keys."""
    data = plan.to_json() if isinstance(plan, FaultPlan) else plan
    return orjson.dumps(data, option=orjson.OPT_SORT_KEYS)


def of_plan(branched: Mapping[tuple[str, int | None], Branch], plan: FaultPlan) -> Branch | None:
    """The branch recorded under ``plan``, if any of ``branched`` was."""
    key = plan_key(plan)
    return next((b for b in branched.values() if b.plan == key), None)


def branch_of(branched: Mapping[tuple[str, int | None], Branch], task: Task) -> Branch | None:
    """The branch ``task``'s cell is judged on: the one recorded for its cell, else one
    recorded under its very plan (``of_plan``)."""
    return branched.get(task[:2]) or of_plan(branched, task[2])


def folder_of(cassette: str) -> str:
    """The branch folder of ``cassette``: ``runs/base.branches`` for ``runs/base.jsonl``."""
    stem, _ = os.path.splitext(cassette)
    return f"{stem}.branches"


def path_of(cassette: str, label: str, seq: int | None) -> str:
    """Where the branch of the cell ``(label, seq)`` goes: ``timeout@2.jsonl``."""
    return os.path.join(folder_of(cassette), _name_of(label, seq))


def _name_of(label: str, seq: int | None) -> str:
    name = re.sub(r"[^A-Za-z0-9._]+", "-", label).strip("-") or "cell"
    return name + ("" if seq is None else f"@{seq}") + ".jsonl"


def _found_by(branch: Branch) -> tuple[str, int | None]:
    """What ``branches_of`` finds a branch by: the cell it was recorded for, when its file is
    named for that cell (as rehearse names it); else its file's name (redteam's, one per
    plan under the one cell ``redteam``), so that each is kept apart."""
    name = os.path.basename(branch.path)
    if name == _name_of(branch.label, branch.seq):
        return branch.label, branch.seq
    return os.path.splitext(name)[0], None


def header(label: str, seq: int | None, plan: FaultPlan, left_at: int) -> dict[str, Any]:
    """What a branch's header says of it, under ``parent.branch``."""
    return {"cell": label, "seq": seq, "plan": plan.to_json(), "left_at": left_at}


def listed(cassette: str) -> list[tuple[str, Branch | None, str]]:
    """Every file in ``cassette``'s branch folder, in name order: its path, the branch it
    holds (``None`` when it is none of this cassette's) and its state: ``ok``, ``stale``
    (its parent changed since) or why it is no branch of this cassette."""
    folder = folder_of(cassette)
    if not os.path.isdir(folder):
        return []
    sha = file_sha256(cassette)
    found: list[tuple[str, Branch | None, str]] = []
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        if not name.endswith(".jsonl") or not os.path.isfile(path):
            continue
        parent = load(path).header.extra.get("parent")
        told = parent.get("branch") if isinstance(parent, Mapping) else None
        if not isinstance(parent, Mapping) or not isinstance(told, Mapping):
            found.append((path, None, "its header names no parent.branch"))
        elif os.path.basename(str(parent.get("path", ""))) != os.path.basename(cassette):
            found.append((path, None, f"a branch of {parent.get('path')}"))
        else:
            seq = told.get("seq")
            plan = told.get("plan")
            key = plan_key(plan) if isinstance(plan, Mapping) else b""
            branch = Branch(path, str(told.get("cell")), seq, int(told.get("left_at", 0)), key)
            found.append((path, branch, "ok" if parent.get("sha256") == sha else "stale"))
    return found


def branches_of(cassette: str) -> dict[tuple[str, int | None], Branch]:
    """The usable branches of ``cassette`` by cell (``_found_by``); a stale one is warned
    of and left out.

    Raises:
        ConfigError: a file in the branch folder is no branch of this cassette.
    """
    found: dict[tuple[str, int | None], Branch] = {}
    for path, branch, state in listed(cassette):
        if branch is None:
            raise ConfigError(
                f"{path}: not a branch of {cassette} ({state}); the folder "
                f"{folder_of(cassette)} holds only the branches rehearse, redteam and tests "
                "record: move it out"
            )
        if state == "stale":
            warnings.warn(
                f"{path}: a branch of an earlier {cassette} (it changed since): not used; "
                "record it again with --branches record",
                StaleBranch,
                stacklevel=2,
            )
            continue
        found[_found_by(branch)] = branch
    return found


def check_branching(branches: object) -> Branching:
    """``branches`` itself, if it is one of ``BRANCHINGS``.

    Raises:
        ConfigError: it is not.
    """
    if isinstance(branches, str) and branches in BRANCHINGS:
        return cast(Branching, branches)
    raise ConfigError(f"branches must be 'record', 'replay' or 'off', got {branches!r}")


def on_branches(
    tasks: Sequence[Task],
    branched: Mapping[tuple[str, int | None], Branch],
    golden: Sequence[Cell],
    branches: Branching,
    run: Callable[[str, Task], Cell],
    record: Callable[[Task], tuple[str, Sequence[str]]],
) -> list[Cell]:
    """Every task's cell, in order (``on_branch``): ``golden`` holds the cells run on the
    golden cassette (those of the tasks without a branch, in order); a task with a branch
    is ``run`` on it."""
    ran = iter(golden)
    cells = []
    for task in tasks:
        branch = branch_of(branched, task)
        on = branch.path if branch is not None else None
        cells.append(on_branch(task, on, partial(next, ran), branches, run, record)[0])
    return cells


def on_branch(
    task: Task,
    branch: str | None,
    golden: Callable[[], Cell],
    branches: Branching,
    run: Callable[[str, Task], Cell],
    record: Callable[[Task], tuple[str, Sequence[str]]],
    again: str = "rehearse",
) -> tuple[Cell, str | None]:
    """The task's cell and the branch it was judged on: ``run`` on ``branch`` if it has one,
    else its cell on the golden cassette (``golden``); with ``record``, a cell that left the
    recorded path is recorded (``record`` gives the branch's path, and the error type of
    each live call that got no answer) and run on its new branch. A branch whose live calls
    went unanswered is not kept: the cell stays off the path, and says why (to run
    ``again``, the command, with the upstream reachable)."""
    if branch is not None:
        return run(branch, task), branch
    cell = golden()
    if cell.status != "miss" or branches != "record":
        return cell, None
    path, unanswered = record(task)
    if unanswered:
        return replace(cell, detail=f"{cell.detail}; {unkept(path, unanswered, again)}"), None
    if not os.path.exists(path):  # run again, it stayed on the recorded path
        return replace(cell, detail=f"{cell.detail}; run again, it left no branch"), None
    return run(path, task), path


def unkept(path: str, unanswered: Sequence[str], again: str = "rehearse") -> str:
    """Remove a branch whose live calls got no answer, and say so (and to run ``again``,
    the command that recorded it, once the upstream is reachable)."""
    with contextlib.suppress(FileNotFoundError):
        os.remove(path)
    types = ", ".join(sorted(set(unanswered)))
    return (
        f"its branch was not kept: {plural(len(unanswered), 'live call')} got no answer "
        f"({types}); with the upstream reachable, {again} again with --branches record"
    )
