"""Rows 10: what starting costs, each side a fresh Python, on CPU time.

    import faultdeck             python -c "import faultdeck"
    from faultdeck import Deck   python -c "from faultdeck import Deck": what a program that
                                 opens a deck imports
    import vcr                   python -c "import vcr" (vcrpy, in the same venv)
    faultdeck --help             the console script, listing every command
    faultdeck --version          the console script
    python -c pass               the floor: starting Python at all (site and the venv's
                                 .pth files included)

Every rehearsal cell of a ``-- CMD`` program and every ``replay --repeat`` run starts a
Python that imports faultdeck, and a user types ``faultdeck --help`` to begin.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from ._processes import Runs, take_turns
from ._results import Goal, at_most

PASS = "python -c pass"
VCR = "import vcr"
IMPORT = "import faultdeck"
DECK = "from faultdeck import Deck"
HELP = "faultdeck --help"
VERSION = "faultdeck --version"

NOTE = (
    "Start-up rows: each side is a fresh Python started by the benchmark (the venv's "
    "interpreter, or its faultdeck console script for --help and --version), run to its "
    "end; the sides take turns, after one untimed run each. The figure is the child's CPU "
    "time, user + sys (getrusage of the children), with its wall time beside it, median of "
    "the runs. The floor, python -c pass, is what starting Python costs at all in that "
    "venv, site and its .pth files included. Each run's output is checked: --help lists "
    "the commands, --version prints the version."
)


@dataclass(frozen=True, slots=True)
class Plan:
    """How the rows are run: ``reps`` timed runs per side."""

    reps: int


def run(plan: Plan) -> dict[str, Runs]:
    """Time every side, taking turns."""
    python = sys.executable
    script = str(Path(python).with_name("faultdeck"))
    sides = {
        PASS: [python, "-c", "pass"],
        VCR: [python, "-c", "import vcr"],
        IMPORT: [python, "-c", "import faultdeck"],
        DECK: [python, "-c", "from faultdeck import Deck"],
        HELP: [script, "--help"],
        VERSION: [script, "--version"],
    }
    results = take_turns(sides, reps=plan.reps)
    _check(results[HELP], "Commands:")
    _check(results[VERSION], "faultdeck, version ")
    return results


def _check(runs: Runs, expected: str) -> None:
    for spent in runs.runs:
        if expected not in spent.stdout:
            raise RuntimeError(f"{runs.name} printed no {expected!r}:\n{spent.stdout}")


def goals(results: dict[str, Runs]) -> list[Goal]:
    """Rows 10.1-10.4."""
    floor, vcr = results[PASS], results[VCR]
    every = f"{len(floor.runs)} each"

    def against(row: str, name: str, base: Runs, limit: float) -> Goal:
        ours = results[name]
        return at_most(
            row,
            f"{name} / {base.name} (CPU time)",
            f"{name} {ours.shown()}, {base.name} {base.shown()}",
            ours.cpu / base.cpu,
            limit,
            every,
        )

    return [
        against("10.1", IMPORT, vcr, 0.5),
        against("10.2", DECK, vcr, 0.5),
        against("10.3", HELP, floor, 6.0),
        against("10.4", VERSION, floor, 4.0),
    ]
