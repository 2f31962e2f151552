"""``faultdeck drift`` on a cassette's branches, and what ``--update`` replaces.

A cassette rehearsed with ``--branches record`` keeps beside it a branch for each cell a
fault led off the recorded path (``_rehearse/branches.py``): the golden calls up to the one
before ``left_at``, replayed, then the calls the program made from there, live. ``drift``
runs each usable branch again the way it was recorded (``run_branch``: the branch's fault
plan, the golden cassette replayed up to there, live after) and compares the branch with
that run as it compares the golden cassette (``compare_drift``): only the branch's live
part can move. A stale branch (its parent changed since) is warned of by ``branches_of``
and not run. ``--update`` replaces a drifted branch whose live run succeeded, in one
rename, as it does the golden cassette; but once the golden cassette is replaced every
branch of it is stale, so then none is run, and that is said instead.

Side effects are held to their ``dry_run`` stand-ins in a branch's run too, unless
``--allow-side-effects``, as in the golden cassette's live run.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import click

from .._base.words import plural
from .._cassette.reader import load
from .._diff.drift import Drift, compare_drift, drift_json, drift_text
from .._rehearse.branches import Branch, folder_of
from .._rehearse.command import run_branch
from ._child import no_report


@dataclass(frozen=True, slots=True)
class BranchDrift:
    """One branch against a live run of it.

    Attributes:
        branch: the branch.
        found: what moved; ``None`` when the live run recorded nothing to compare.
        live_path: the live run's recording (in drift's temporary folder).
        unanswered: the error type of each live call that got no answer.
        failed: why there is nothing to compare (the program's last lines), or ``""``.
    """

    branch: Branch
    found: Drift | None
    live_path: str
    unanswered: tuple[str, ...] = ()
    failed: str = ""

    @property
    def finding(self) -> bool:
        """Whether it counts against the run (exit 1): it drifted, or could not be compared."""
        return self.found is None or self.found.drifted

    @property
    def updatable(self) -> bool:
        """Whether ``--update`` puts the live run in the branch's place (``replaceable``)."""
        found = self.found
        return found is not None and replaceable(found, self.unanswered)


def replaceable(found: Drift, unanswered: Sequence[str]) -> bool:
    """Whether ``--update`` puts a live recording in its cassette's place: the cassette
    drifted, the live run succeeded and every live call was answered (an unanswered call is
    not in the live recording)."""
    return found.drifted and found.live.ok and not unanswered


def why_kept(found: Drift, unanswered: Sequence[str], name: str) -> str | None:
    """Why ``--update`` leaves the cassette ``name`` as it is, in one line; ``None`` when it
    replaces it (``replaceable``)."""
    if replaceable(found, unanswered):
        return None
    if unanswered:
        types = ", ".join(sorted(set(unanswered)))
        return (
            f"not updated: {plural(len(unanswered), 'live call')} got no answer ({types}), "
            f"so {name} was left as it was; update once the service answers"
        )
    if not found.live.ok:
        return f"not updated: the live run failed, so {name} was left as it was"
    return f"nothing to update: {name} was left as it was"


def rerun_all(
    command: Sequence[str],
    cassette: str,
    branches: Sequence[Branch],
    folder: str,
    *,
    allow_side_effects: bool,
    ignore: tuple[str, ...],
) -> list[BranchDrift]:
    """Run each branch of ``cassette`` again and compare it with its live run, each in its
    own folder under ``folder`` (a run's report file must not be read by the next)."""
    found = []
    for index, branch in enumerate(branches):
        own = os.path.join(folder, f"branch-{index}")
        os.makedirs(own)
        found.append(rerun(command, cassette, branch, own, allow_side_effects, ignore))
    return found


def rerun(
    command: Sequence[str],
    cassette: str,
    branch: Branch,
    folder: str,
    allow_side_effects: bool,
    ignore: tuple[str, ...],
) -> BranchDrift:
    """Run ``branch`` again as it was recorded, into ``folder``, and compare the two."""
    recorded = load(branch.path)
    told = recorded.header.extra["parent"]["branch"]
    live_path = os.path.join(folder, os.path.basename(branch.path))
    # The golden cassette named as rehearse names it, so the live header's parent is the same.
    ran = run_branch(
        command,
        os.path.abspath(cassette),
        folder,
        live_path,
        told,
        allow_side_effects=allow_side_effects,
    )
    if ran.report is None or not os.path.exists(live_path):
        return BranchDrift(branch, None, live_path, failed=no_report(command, ran.code, ran.stderr))
    calls = ran.report["calls"]
    blocked = frozenset(c["key"] for c in calls if c["source"] == "blocked")
    live = load(live_path)
    found = compare_drift(recorded, live, live_code=ran.code, ignore=ignore, blocked=blocked)
    return BranchDrift(branch, found, live_path, tuple(ran.report["unanswered"]))


def heading(branch: Branch) -> str:
    """``branch runs/base.branches/timeout@2.jsonl (cell timeout at seq 2, live from seq 3)``."""
    at = "" if branch.seq is None else f" at seq {branch.seq}"
    return f"branch {branch.path} (cell {branch.label}{at}, live from seq {branch.left_at})"


def branch_text(result: BranchDrift) -> str:
    """A branch's section of the report: its heading and what moved, or ``no drift``."""
    found = result.found
    if found is None:
        return (
            f"{heading(result.branch)}: not compared, {result.failed}\n"
            f"  no live recording of the branch; {result.branch.path} was left as it was"
        )
    if not found.drifted:
        return f"{heading(result.branch)}: no drift"
    # drift_text's first line names the cassette; the heading says it here.
    lines = drift_text(found, cassette=result.branch.path).splitlines()[1:]
    return "\n".join([f"{heading(result.branch)}: drifted", *(f"  {line}" for line in lines)])


def branches_text(
    results: Sequence[BranchDrift],
    cassette: str,
    again: tuple[str, ...],
    *,
    replaces_cassette: bool,
) -> str:
    """The branches' part of the report: a section each, then ``branches_verdict``'s line
    (``""`` when no branch ran)."""
    lines = [branch_text(result) for result in results]
    ending = branches_verdict(results, cassette, again, replaces_cassette=replaces_cassette)
    return "\n".join([*lines, *([ending] if ending else [])])


def branch_json(result: BranchDrift) -> dict[str, Any]:
    """A branch's object in ``branches``: its path, cell, seq and ``left_at``, then
    ``drift_json``'s keys (``drifted`` ``null`` and ``error`` set when not compared)."""
    branch = result.branch
    said = {
        "path": branch.path,
        "cell": branch.label,
        "seq": branch.seq,
        "left_at": branch.left_at,
    }
    if result.found is None:
        return {**said, "drifted": None, "error": result.failed}
    return {**said, **drift_json(result.found, cassette=branch.path), "error": None}


def branches_verdict(
    results: Sequence[BranchDrift],
    cassette: str,
    again: tuple[str, ...],
    *,
    replaces_cassette: bool,
) -> str | None:
    """The line after the branches' sections when any drifted: how to take their live runs.

    ``replaces_cassette``: ``--update`` would replace ``cassette`` itself, which leaves its
    branches stale instead; ``again`` is drift's options after ``--update``, and the program.
    """
    drifted = [r for r in results if r.found is not None and r.found.drifted]
    if not drifted:
        return None
    if len(drifted) == 1:
        some = f"{drifted[0].branch.path} is stale"
    else:
        some = f"{len(drifted)} branches of {cassette} are stale"
    if replaces_cassette:
        return (
            f"drifted: {some}; --update replaces {cassette}, which leaves its branches stale: "
            f"then record them again with: {record_again(cassette, again)}"
        )
    if not any(r.updatable for r in drifted):
        runs = "its live run" if len(drifted) == 1 else "their live runs"
        return (
            f"drifted: {some}, and {runs} failed or went unanswered, which --update does "
            "not take; fix the program against the changes above, or wait for the service"
        )
    update = f"faultdeck drift {cassette} --update {shlex.join(again)}"
    return f"drifted: {some}; review the changes above, then: {update}"


def record_again(cassette: str, again: tuple[str, ...]) -> str:
    """The command that records ``cassette``'s branches again, for the program in ``again``
    (drift's options, ``--``, the program)."""
    program = again[again.index("--") :] if "--" in again else again
    return f"faultdeck rehearse {cassette} --branches record {shlex.join(program)}"


def update_branches(results: Sequence[BranchDrift]) -> None:
    """``--update``: put each drifted branch's live recording in its place, in one rename,
    if its live run succeeded and every call was answered; say which were left and why."""
    for result in results:
        found, path = result.found, result.branch.path
        if found is None or not found.drifted:
            continue  # its section says so already
        kept = why_kept(found, result.unanswered, path)
        if kept is not None:
            click.echo(kept, err=True)
            continue
        os.replace(result.live_path, path)
        click.echo(f"updated {path} with the live recording", err=True)


def stale_now(cassette: str, count: int, again: tuple[str, ...]) -> str:
    """The line said once ``--update`` replaced ``cassette``: its ``count`` branches, not run,
    are stale."""
    were, them = ("are", "them") if count > 1 else ("is", "it")
    return (
        f"faultdeck: warning: {cassette} was replaced, so its "
        f"{plural(count, 'branch', 'branches')} in {folder_of(cassette)} {were} now stale "
        f"(not run); record {them} again with: {record_again(cassette, again)}"
    )
