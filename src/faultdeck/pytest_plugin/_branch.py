"""A test's branch: a marker's faults replayed, or recorded, where they lead.

A test that replays a cassette it names (a golden cassette other runs share) under faults
can lead its loop somewhere the recording never went: a tool error read back to the model
asks a new question, and the replay misses. Under ``--faultdeck-mode=record`` such a test
records its branch instead of the cassette: the cassette's calls replay until the first one
it lacks, which runs live with every call after it, into
``<cassette>.branches/<test name>.jsonl`` (``_rehearse/branches.py``; written only if the
test leaves the recorded path). Replayed later, the test runs on the branch recorded under
its plan (its own, or the one ``rehearse`` or ``redteam`` recorded for the same plan), and
on the cassette when there is none. A test's own cassette (the default one, which it
records itself) has no branches: recording it records it again, faults and all.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

from ._settings import Resolved


def on_branch(resolved: Resolved, name: str, default: Path) -> tuple[Path, dict[str, Any]]:
    """The cassette the test's deck opens, and what its branch adds to the deck's options
    (``name``: the test's name; ``default``: its own cassette).

    Raises:
        ConfigError: a file in the branch folder is no branch of the cassette.
    """
    golden = resolved.cassette
    if not branches(resolved, default):
        return golden, {}
    plan = resolved.faults
    assert plan is not None  # (branches says so)
    # Imported here: a test that replays its own cassette, as most do, never needs them.
    from .._rehearse.branches import branches_of, header, of_plan, path_of

    if resolved.mode == "record":
        path = path_of(str(golden), name, None)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        told = header(name, None, plan, 0)  # where it leaves the path: seq 0 until it does
        return Path(path), {"mode": "fork", "parent": golden, "branch": told}
    if resolved.mode in ("replay", "once"):
        branch = of_plan(branches_of(str(golden)), plan)
        if branch is not None:
            return Path(branch.path), {"mode": "replay"}
    return golden, {}


def branches(resolved: Resolved, default: Path) -> bool:
    """Whether the test's faults run on a branch of its cassette: it names one that is
    recorded, and has faults (``default``: its own cassette)."""
    plan = resolved.faults
    golden = resolved.cassette
    return plan is not None and bool(plan.faults) and golden != default and golden.is_file()


def tidy(path: Path) -> None:
    """Remove the branch folder a recording made, if the test never left the path and
    left it empty."""
    with contextlib.suppress(OSError):
        path.parent.rmdir()  # only if empty


def off_path(cassette: Path, record: str) -> str:
    """What a miss adds when a test's faults led off ``cassette``'s recorded path: the
    command (``record``) that records its branch."""
    return (
        f"its faults led off the recorded path of {cassette.name}; with the upstream "
        f"reachable, record where they lead (this test's branch, beside it; {cassette.name} "
        f"stays as it is):\n  {record}"
    )
