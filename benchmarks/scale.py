"""Rows 7: long jobs in parallel: rehearsal cells per second with one job, two jobs and on
Ray (2 CPUs), and ``replay --repeat`` of a program that imports the openai SDK with one
job and with two.

The rehearsal is a command rehearsal (each cell a fresh Python running the program below
against the cassette), the same matrix for every executor, so the rows compare executors,
not work. Ray's start-up is timed on its own and left out of its rate.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from contextlib import ExitStack
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from faultdeck import faults
from faultdeck._rehearse.command import rehearse_command
from faultdeck._rehearse.matrix import Executor
from faultdeck._rehearse.ray import cluster

from ._results import Goal, at_least

PROGRAM = """
import faultdeck as fd
{imports}
POLICY = fd.Policy(max_attempts=3, base_delay=0.5, max_delay=4, max_total_wait=30)
deck = fd.Deck.from_env()
clock = deck.clock
with deck:
    def step(op):
        return deck.call("tool", "search", {{"q": op}}, lambda: [op])
    fd.run_steps(step, range({calls}), POLICY, clock=clock)
"""


FEW = {
    "timeout": faults.FaultPlan([faults.timeout()]),
    "quota": faults.FaultPlan([faults.quota(retry_after=1)]),
    "crash": faults.FaultPlan([faults.crash()]),
}
"""The matrix of a quick run."""


@dataclass(frozen=True, slots=True)
class Plan:
    """How large the rows are: the program's calls, and how many replays ``--repeat`` runs."""

    calls: int
    repeat: int
    reps: int = 2
    ray: bool = True
    few: bool = False
    """Rehearse three faults, not the full matrix (a check that the rows run)."""
    heavy: bool = True
    """The replayed program imports the openai SDK (what makes a replay's start slow)."""


@dataclass(frozen=True, slots=True)
class Measured:
    """Seconds for each way of running the same work, and what the work was."""

    cells: int
    rehearse: dict[str, float]
    ray_start: float | None
    replays: int
    replay: dict[str, float]
    reps: int
    heavy: bool


def _program(folder: Path, name: str, calls: int, imports: str) -> list[str]:
    path = folder / name
    path.write_text(PROGRAM.format(calls=calls, imports=imports), "utf-8")
    return [sys.executable, str(path)]


def _record(command: list[str], cassette: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "faultdeck", "record", str(cassette), "--", *command],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"recording the scale program failed: {done.stderr.strip()}")


def _timed(run: Callable[[], object]) -> float:
    started = time.perf_counter()
    run()
    return time.perf_counter() - started


def run(plan: Plan, workdir: Path) -> Measured:
    """Record the programs, then time each executor on the same matrix and replays."""
    plain = _program(workdir, "scale_agent.py", plan.calls, "")
    cassette = workdir / "scale.jsonl"
    _record(plain, cassette)
    # Untimed warm-ups: the first Python to import faultdeck (or openai) compiles and reads
    # from a cold cache what every later one finds ready; whichever side ran first would pay.
    _replay(plain, cassette, 1, 1)
    cells: list[int] = []
    sides = {
        "jobs 1": partial(_rehearse, plain, cassette, cells, jobs=1, few=plan.few),
        "jobs 2": partial(_rehearse, plain, cassette, cells, jobs=2, few=plan.few),
    }
    ray_start = None
    with ExitStack() as stack:
        if plan.ray:
            # Started once, outside the timed runs; its cells then run on it like the others.
            ray_start = _timed(lambda: stack.enter_context(cluster(None, cpus=2)))
            sides["ray"] = partial(_rehearse, plain, cassette, cells, executor="ray", few=plan.few)
        rehearse = _turns(sides, plan.reps)
    if len(set(cells)) != 1:
        raise AssertionError(f"the executors ran different matrices: {cells} cells")
    imports = "import openai  # noqa: F401" if plan.heavy else ""
    heavy = _program(workdir, "scale_openai.py", plan.calls, imports)
    heavy_cassette = workdir / "scale_openai.jsonl"
    _record(heavy, heavy_cassette)
    _replay(heavy, heavy_cassette, 1, 1)
    replay = _turns(
        {
            "jobs 1": partial(_replay, heavy, heavy_cassette, plan.repeat, 1),
            "jobs 2": partial(_replay, heavy, heavy_cassette, plan.repeat, 2),
        },
        plan.reps,
    )
    return Measured(cells[0], rehearse, ray_start, plan.repeat, replay, plan.reps, plan.heavy)


def _turns(sides: Mapping[str, Callable[[], object]], reps: int) -> dict[str, float]:
    """Each side's median seconds, the sides taking turns (A, B, A, B …) ``reps`` times."""
    samples: dict[str, list[float]] = {name: [] for name in sides}
    for _ in range(reps):
        for name, side in sides.items():
            samples[name].append(_timed(side))
    return {name: statistics.median(times) for name, times in samples.items()}


def _rehearse(
    command: list[str],
    cassette: Path,
    cells: list[int],
    *,
    jobs: int = 1,
    executor: Executor = "local",
    few: bool = False,
) -> None:
    plans = FEW if few else None
    matrix = rehearse_command(command, cassette, plans, jobs=jobs, executor=executor)
    cells.append(len(matrix.cells))


def _replay(command: list[str], cassette: Path, repeat: int, jobs: int) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "faultdeck",
            "replay",
            str(cassette),
            "--repeat",
            str(repeat),
            "--jobs",
            str(jobs),
            "--quiet",
            "--",
            *command,
        ],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "FAULTDECK_CASSETTE_CHECKED": "1"},
    )
    if done.returncode != 0:
        raise RuntimeError(f"replay --repeat failed: {done.stdout[-300:]} {done.stderr[-300:]}")


def goals(measured: Measured) -> list[Goal]:
    """Rows 7.1-7.3."""
    per_second = {name: measured.cells / s for name, s in measured.rehearse.items()}
    one, two = per_second["jobs 1"], per_second["jobs 2"]
    found = [
        at_least(
            "7.1",
            f"rehearse: {measured.cells} command cells, --jobs 2 / --jobs 1",
            f"{two:,.1f} against {one:,.1f} cells/s",
            two / one,
            1.7,
            f"{measured.reps}",
        )
    ]
    if "ray" in per_second:
        ray_rate = per_second["ray"]
        found.append(
            at_least(
                "7.2",
                "rehearse on Ray (2 CPUs, once started) / --jobs 2",
                f"{ray_rate:,.1f} against {two:,.1f} cells/s; Ray started in "
                f"{measured.ray_start or 0:,.1f} s",
                ray_rate / two,
                0.8,
                f"{measured.reps}",
            )
        )
    one_s, two_s = measured.replay["jobs 1"], measured.replay["jobs 2"]
    found.append(
        at_least(
            "7.3",
            f"replay --repeat {measured.replays}{' (imports openai)' if measured.heavy else ''}"
            ", --jobs 2 / --jobs 1",
            f"{two_s:,.1f} s against {one_s:,.1f} s",
            one_s / two_s,
            1.7,
            f"{measured.reps}",
        )
    )
    return found


def note(plan: Plan) -> str:
    """How the scale rows were run, for the results' method."""
    turns = (
        "each side runs once (runs of tens of seconds vary little)"
        if plan.reps == 1
        else f"the sides take turns, {plan.reps} times, and each figure is the median"
    )
    return (
        "Scale rows: a command rehearsal of a small program (a fresh Python per cell) over "
        f"{'three faults' if plan.few else 'the full fault matrix'}, timed whole, with one "
        "local job, two, and on a local Ray started with num_cpus=2 (its start-up timed "
        f"apart); and faultdeck replay --repeat {plan.repeat} of a program that "
        f"{'imports the openai SDK' if plan.heavy else 'imports faultdeck alone'}, with "
        "--jobs 1 and --jobs 2, "
        f"after one untimed warm-up run of each program; {turns}. The machine's two cores "
        "bound what two jobs can gain."
    )
