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
from typing import Any, Literal, cast

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
    """

    path: str
    label: str
    seq: int | None
    left_at: int


def folder_of(cassette: str) -> str:
    """The branch folder of ``cassette``: ``runs/base.branches`` for ``runs/base.jsonl``."""
    stem, _ = os.path.splitext(cassette)
    return f"{stem}.branches"


def path_of(cassette: str, label: str, seq: int | None) -> str:
    """Where the branch of the cell ``(label, seq)`` goes: ``timeout@2.jsonl``."""
    name = re.sub(r"[^A-Za-z0-9._]+", "-", label).strip("-") or "cell"
    return os.path.join(folder_of(cassette), name + ("" if seq is None else f"@{seq}") + ".jsonl")


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
            branch = Branch(path, str(told.get("cell")), seq, int(told.get("left_at", 0)))
            found.append((path, branch, "ok" if parent.get("sha256") == sha else "stale"))
    return found


def branches_of(cassette: str) -> dict[tuple[str, int | None], Branch]:
    """The usable branches of ``cassette`` by cell; a stale one is warned of and left out.

    Raises:
        ConfigError: a file in the branch folder is no branch of this cassette.
    """
    found: dict[tuple[str, int | None], Branch] = {}
    for path, branch, state in listed(cassette):
        if branch is None:
            raise ConfigError(
                f"{path}: not a branch of {cassette} ({state}); the folder "
                f"{folder_of(cassette)} holds only the branches rehearse records: move it out"
            )
        if state == "stale":
            warnings.warn(
                f"{path}: a branch of an earlier {cassette} (it changed since): not used; "
                "record it again with --branches record",
                StaleBranch,
                stacklevel=2,
            )
            continue
        found[branch.label, branch.seq] = branch
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
    """Every task's cell, in order: ``golden`` holds the cells run on the golden cassette
    (those of the tasks without a branch, in order); a task with a branch is ``run`` on it;
    with ``record``, a cell that left the recorded path is recorded (``record`` gives the
    branch's path, and the error type of each live call that got no answer) and run on its
    new branch. A branch whose live calls went unanswered is not kept: the cell stays off
    the path, and says why."""
    ran = iter(golden)
    cells = []
    for task in tasks:
        label, seq, _ = task
        branch = branched.get((label, seq))
        cell = next(ran) if branch is None else run(branch.path, task)
        if cell.status == "miss" and branches == "record" and branch is None:
            path, unanswered = record(task)
            if unanswered:
                cell = replace(cell, detail=f"{cell.detail}; {unkept(path, unanswered)}")
            else:
                cell = run(path, task)
        cells.append(cell)
    return cells


def unkept(path: str, unanswered: Sequence[str]) -> str:
    """Remove a branch whose live calls got no answer, and say so."""
    with contextlib.suppress(FileNotFoundError):
        os.remove(path)
    types = ", ".join(sorted(set(unanswered)))
    return (
        f"its branch was not kept: {plural(len(unanswered), 'live call')} got no answer "
        f"({types}); with the upstream reachable, rehearse again with --branches record"
    )
