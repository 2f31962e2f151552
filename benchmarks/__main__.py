"""``python -m benchmarks [--quick] [--out PATH] [--install-peers]``: run every row, print it,
write it."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import pytest_suite
from ._results import goals_table, render
from .suite import FULL, QUICK, run

RESULTS = Path(__file__).with_name("RESULTS.md")


def main(argv: list[str] | None = None) -> int:
    """Run the benchmarks; 0 when they ran, whatever the goals' verdicts."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument(
        "--quick", action="store_true", help="tiny sizes: check that every row runs"
    )
    parser.add_argument(
        "--out", type=Path, default=RESULTS, help=f"the results file (default {RESULTS})"
    )
    parser.add_argument(
        "--install-peers",
        action="store_true",
        help="install the pytest-suite rows' peers from PyPI (outside .venv) and stop",
    )
    options = parser.parse_args(argv)
    if options.install_peers:
        needed, optional = pytest_suite.install_peers()
        if optional is not None:
            print(f"python -m benchmarks: warning: cassetter: {optional}", file=sys.stderr)
        if needed is not None:
            print(f"python -m benchmarks: pytest-recording: {needed}", file=sys.stderr)
            return 2
        return 0
    results = run(QUICK if options.quick else FULL)
    text = render(
        goals=results.goals,
        details=results.details,
        notes=results.notes,
        found_on=results.machine,
        quick=options.quick,
        seconds=results.seconds,
    )
    options.out.parent.mkdir(parents=True, exist_ok=True)
    options.out.write_text(text, encoding="utf-8")
    if options.quick:
        print("--quick: tiny sizes, to check that every row runs; the figures mean nothing\n")
    print(goals_table(results.goals))
    for title, section in results.details:
        print(f"\n{title}\n\n{section}")
    met = sum(g.passed for g in results.goals)
    print(
        f"\n{met} of {len(results.goals)} goals met; {results.seconds:.0f} s in all; "
        f"written to {options.out}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
