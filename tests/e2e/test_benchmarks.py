"""``python -m benchmarks --quick`` runs every row and writes the results file.

Only that the code runs, and that each verdict follows from its figures: tiny sizes, one
run each, and no assertion about speed.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

from tests.support import ROOT

ROWS = [
    *(f"1.{i}" for i in range(1, 11)),
    *(f"2.{i}" for i in range(1, 7)),
    *(f"3.{i}" for i in range(1, 5)),
    "4.1",
    "4.2",
    "4.3",
    "5.1",
    "6.1",
    "8.1",
    "9.1",
    "9.2",
    "9.3",
    *(f"10.{i}" for i in range(1, 5)),
]
MACHINE = (
    "date",
    "python",
    "platform",
    "cpu",
    "cores",
    "faultdeck",
    "httpx",
    "vcrpy",
    "orjson",
    "agenttape",
    "agentcassette",
    "cassette-fn",
)


def _cells(text: str, number: str) -> list[str]:
    lines = [line for line in text.splitlines() if line.startswith(f"| {number} ")]
    assert len(lines) == 1, f"row {number} appears {len(lines)} times in:\n{text}"
    return [cell.strip() for cell in lines[0].strip().strip("|").split("|")]


def _number(text: str) -> float:
    return float(text.rstrip("×/s").replace(",", ""))


def test_quick_run_prints_every_row_and_writes_the_results(tmp_path: Path) -> None:
    out = tmp_path / "results" / "r.md"
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--quick", "--out", str(out)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,  # a bound, not a measurement: the quick run takes about a minute
    )
    assert done.returncode == 0, done.stderr
    written = out.read_text(encoding="utf-8")
    for text in (done.stdout, written):
        for number in ROWS:
            _, _, _, value, goal, verdict, _ = _cells(text, number)
            # A missed goal shows as missed: the verdict follows from value and goal.
            sign, limit = goal.split(" ", 1)
            shown, bound = _number(value), _number(limit)
            met = shown <= bound if sign == "≤" else shown >= bound
            assert verdict == ("PASS" if met else "MISS"), (number, value, goal, verdict)
    assert "vcrpy, + body matcher, sampled" in done.stdout
    machine = written.split("## Machine", 1)[1]
    for name in MACHINE:
        assert f"| {name} " in machine
    assert "## Method" in written


def test_a_side_that_runs_fewer_times_runs_among_the_others() -> None:
    from contextlib import contextmanager

    from benchmarks._timing import Contender, interleave

    order: list[str] = []

    def side(name: str) -> Contender:
        @contextmanager
        def prepare() -> Iterator[Callable[[], None]]:
            yield lambda: order.append(name)

        return Contender(name, prepare, reps=3 if name == "few" else None)

    timings = interleave([side("all"), side("few")], reps=9, per_run=1)
    assert order[:2] == ["all", "few"]  # the warm-up runs
    # "few" runs in rounds 0, 3 and 6 of 9, each after "all"'s run of that round
    assert "".join("f" if n == "few" else "a" for n in order[2:]) == "afaaafaaafaa"
    assert (timings["all"].reps, timings["few"].reps) == (9, 3)


def test_a_primed_side_runs_untimed_right_before_each_timed_run() -> None:
    from contextlib import contextmanager

    from benchmarks._timing import Contender, interleave

    order: list[str] = []

    def side(name: str, *, warmup: bool = True) -> Contender:
        @contextmanager
        def prepare() -> Iterator[Callable[[], None]]:
            yield lambda: order.append(name)

        return Contender(name, prepare, warmup=warmup)

    timings = interleave(
        [side("a"), side("b"), side("slow", warmup=False)], reps=2, per_run=1, primed=True
    )
    # warm-ups, then each round: a's untimed run and its timed one, b's, and the slow
    # side's timed run alone (it has no warm-up, so no untimed run either)
    assert order == ["a", "b", "a", "a", "b", "b", "slow", "a", "a", "b", "b", "slow"]
    assert (timings["a"].reps, timings["b"].reps, timings["slow"].reps) == (2, 2, 2)


def test_a_ratio_pairs_the_runs_of_each_round() -> None:
    from benchmarks._timing import Timing, paired

    # the machine slows down fourfold in round 3, between faultdeck's run and the floor's:
    # run for run faultdeck takes 1.2x, while the medians say 0.3x
    ours = Timing("ours", (120, 120, 120, 480, 480), per_run=1)
    floor = Timing("floor", (100, 100, 400, 400, 400), per_run=1)
    assert ours.median_ns / floor.median_ns == 0.3
    assert paired(ours, floor) == 1.2
    # per operation: 10 calls a run against 5
    assert paired(Timing("ten", (240,) * 3, 10), Timing("five", (100,) * 3, 5)) == 1.2
    # runs in different rounds (a slow peer's two): the ratio of medians
    assert paired(ours, Timing("few", (300, 500), per_run=1)) == 120 / 400
