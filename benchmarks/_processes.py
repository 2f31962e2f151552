"""Timing whole programs: each run a child process, its CPU time (user + sys) beside its
wall time, the sides taking turns.

CPU time is what the goals of these rows judge: a child's wall time on a shared machine
takes in whatever else ran, while the CPU it used is its own. Wall time is shown beside it.
"""

from __future__ import annotations

import resource
import statistics
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class Spent:
    """One run of a child: its wall time and its CPU time (user + sys), in seconds, and
    how it ended (for checking it did its job)."""

    wall: float
    cpu: float
    returncode: int
    stdout: str
    stderr: str

    def failed(self, argv: Sequence[str]) -> str | None:
        """What went wrong, in a few lines, or ``None`` when it exited 0."""
        if self.returncode == 0:
            return None
        said = "\n".join((self.stdout + "\n" + self.stderr).strip().splitlines()[-20:])
        return f"{' '.join(argv)} exited {self.returncode}:\n{said}"


@dataclass(frozen=True, slots=True)
class Runs:
    """A side's runs, in the order they ran."""

    name: str
    runs: tuple[Spent, ...]

    @property
    def cpu(self) -> float:
        """The median CPU time of one run, in seconds."""
        return statistics.median(r.cpu for r in self.runs)

    @property
    def wall(self) -> float:
        """The median wall time of one run, in seconds."""
        return statistics.median(r.wall for r in self.runs)

    def shown(self, unit: str = "ms") -> str:
        """``12.3 ms CPU (14.0 ms wall)``, or in seconds with ``unit="s"``."""
        scale, digits = (1000.0, 1) if unit == "ms" else (1.0, 2)
        return (
            f"{self.cpu * scale:,.{digits}f} {unit} CPU "
            f"({self.wall * scale:,.{digits}f} {unit} wall)"
        )


def spend(
    argv: Sequence[str],
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = 600,
) -> Spent:
    """Run ``argv`` to its end; its wall and CPU time. ``timeout`` bounds the run; it is
    not a measurement. One child at a time: its CPU is what the children reaped during the
    run used."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(
        list(argv),
        cwd=cwd,
        env=None if env is None else dict(env),
        capture_output=True,
        text=True,
        errors="replace",
        timeout=timeout,
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Spent(wall, cpu, done.returncode, done.stdout, done.stderr)


def _checked(argv: Sequence[str], spent: Spent) -> Spent:
    """``spent``, or an error when the run failed: the figure of a run that did not do its
    job means nothing."""
    failed = spent.failed(argv)
    if failed is not None:
        raise RuntimeError(failed)
    return spent


def take_turns(
    sides: Mapping[str, Sequence[str]],
    *,
    reps: int,
    warmup: bool = True,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> dict[str, Runs]:
    """Run each side's ``argv`` ``reps`` times, A, B, C, A, B, C …, after one untimed run
    each (``warmup``: the bytecode caches written, the files in the page cache)."""
    if warmup:
        for argv in sides.values():
            _checked(argv, spend(argv, cwd=cwd, env=env))
    runs: dict[str, list[Spent]] = {name: [] for name in sides}
    for _ in range(reps):
        for name, argv in sides.items():
            runs[name].append(_checked(argv, spend(argv, cwd=cwd, env=env)))
    return {name: Runs(name, tuple(spent)) for name, spent in runs.items()}
