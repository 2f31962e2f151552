"""Rows 9: what a user waits for while a whole pytest suite records, then replays.

    faultdeck          the ``deck`` fixture, the client on faultdeck.http.Transport(deck,
                       httpx=httpx2); record: --faultdeck-mode=record; replay: the default
    pytest-recording   @pytest.mark.vcr (vcrpy); record: --record-mode=all; replay:
                       --record-mode=none
    cassetter          the same test files as pytest-recording; the same modes
    no cassette        record's floor: the same calls to the live server; replay's floor:
                       the client on httpx2.MockTransport answering the server's bodies

Each pytest is a child process (``python -m pytest -q``, one process, no xdist), timed
from start to exit: wall (perf_counter) and CPU (the child's user + system time, from
getrusage(RUSAGE_CHILDREN) before and after). The chat server is a thread of this process,
so its CPU is not the child's. Each run must pass every test, a record run must reach the
server for every call and leave a cassette per test, and a replay run must not reach it at
all. The peers come from PyPI into .venv-bench-peers/ beside .venv (``pip --target``),
and each child that measures one has it on its PYTHONPATH. Neither can sit in .venv:
pytest-recording registers ``--record-mode``, as cassetter and agentcassette (a peer of
other rows, in .venv) do, and two plugins registering one option stop pytest at start-up.
"""

from __future__ import annotations

import os
import re
import shutil
import statistics
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ._processes import Spent, spend
from ._results import Goal, at_most
from ._suite_files import Kind, Peer, Server, install, serving, write_suite

Phase = Literal["record", "replay"]
PHASES: tuple[Phase, ...] = ("record", "replay")
FAULTDECK = "faultdeck"
RECORDING = "pytest-recording"
CASSETTER = "cassetter"
NONE = "no cassette"
TIMEOUT = 600  # a bound on one pytest run, not a measurement: 300 tests take seconds
PYTEST_RECORDING = Peer("pytest-recording", "0.14.1", "pytest_recording.plugin")
CASSETTER_PEER = Peer("cassetter", "0.16.1", "cassetter.pytest_plugin")

NOTE = (
    "pytest suite rows: a generated suite of N tests in files of 30, each test its own "
    "function and so its own cassette, each making 3 chat completions through the openai "
    "SDK (httpx2) with a client made in the test, and checking that each answer starts "
    "with its question. faultdeck's tests take the deck fixture and build the client on "
    "faultdeck.http.Transport(deck, httpx=httpx2); pytest-recording's and cassetter's are "
    "marked @pytest.mark.vcr and build it on httpx2.Client(verify=TLS), a TLS context made "
    "once per session (httpx2 loads the CA bundle for each client made without one, about "
    "50 ms, which would swamp the figures; faultdeck's Transport shares one live transport "
    "per process). Each tool runs with its defaults: vcrpy and cassetter match on method "
    "and URI and play a test's three recorded answers in order, faultdeck keys each request "
    "by its body. The no-cassette floor records as the live run (httpx2.Client(verify=TLS) "
    "to the server) and replays as httpx2.MockTransport answering the server's bodies from "
    "a dict read at import. Each side is one child process, python -m pytest -q -p "
    "no:cacheprovider in the suite's folder (its own pytest.ini), plugin autoloading off "
    "(PYTEST_DISABLE_PLUGIN_AUTOLOAD=1) and the side's plugin given with -p, so every side "
    "loads the same plugins but its own; CI and PYTEST_ADDOPTS unset. The server is a "
    "ThreadingHTTPServer on 127.0.0.1 in a thread of the benchmark's process, so its CPU is "
    "not counted. CPU is the child's user + system time (getrusage(RUSAGE_CHILDREN) before "
    "and after), wall is perf_counter around the child. A round runs every side's record "
    "(its cassettes deleted first), then every side's replay, the floor's first and "
    "faultdeck's right after it; one untimed round first. Every run must pass all tests; a "
    "record run must reach the server for every call and leave one cassette per test, a "
    "replay must not reach it. pytest-recording (on the installed vcrpy) and cassetter are "
    "installed from PyPI with pip --target --no-deps into .venv-bench-peers/ and put on the "
    "child's PYTHONPATH, so they run on the same Python and packages as faultdeck's side: "
    "pytest-recording, cassetter and agentcassette (in .venv for other rows) each register "
    "--record-mode, and two plugins registering one option stop pytest. Figures are "
    "medians; a goal's ratio is of medians, on CPU time; run for run is the median of each "
    "round's ratio."
)


@dataclass(frozen=True, slots=True)
class Plan:
    """How the rows are run.

    Args:
        tests: tests in the suite (the goals speak of 300).
        calls: chat completions per test (3).
        reps: timed rounds; each runs every side's record, then every side's replay.
        cassetter: run cassetter too.
        install: install a missing peer from PyPI (``make test`` and ``make bench`` install
            both first: ``python -m benchmarks --install-peers``); else a missing
            pytest-recording is an error and a missing cassetter is reported as not run.
        warmup: run one untimed round first.
        per_file: tests per test file.
    """

    tests: int
    calls: int
    reps: int
    cassetter: bool
    install: bool = True
    warmup: bool = True
    per_file: int = 30


FULL = Plan(tests=300, calls=3, reps=3, cassetter=True)
QUICK = Plan(tests=4, calls=3, reps=1, cassetter=True, install=False, warmup=False)


@dataclass(frozen=True, slots=True)
class Figures:
    """One side's timed runs of one phase, in seconds, in the order they ran."""

    wall: tuple[float, ...]
    cpu: tuple[float, ...]

    @property
    def median_wall(self) -> float:
        """The median wall time of a run."""
        return statistics.median(self.wall)

    @property
    def median_cpu(self) -> float:
        """The median CPU time (user + system) of a run."""
        return statistics.median(self.cpu)

    def text(self) -> str:
        """``4.1 s CPU (4.8 s wall)``."""
        return f"{self.median_cpu:.2f} s CPU ({self.median_wall:.2f} s wall)"


@dataclass(frozen=True, slots=True)
class Results:
    """What the rows found.

    Attributes:
        plan: the plan they ran at.
        record: each side's record runs, by side.
        replay: each side's replay runs, by side.
        not_run: why a side did not run, by side (cassetter only).
    """

    plan: Plan
    record: dict[str, Figures]
    replay: dict[str, Figures]
    not_run: dict[str, str]


@dataclass(frozen=True, slots=True)
class _Side:
    name: str
    record: _Job
    replay: _Job
    optional: bool = False


@dataclass(frozen=True, slots=True)
class _Job:
    folder: Path
    args: tuple[str, ...]
    pythonpath: Path | None
    live: bool  # reaches the server for every call (else: never)
    cassettes: str | None  # the suffix of the cassettes it writes or reads


def run(plan: Plan, workdir: Path) -> Results:
    """Install the peers if need be, write the suites, and time every side taking turns."""
    not_run: dict[str, str] = {}
    recording = install(PYTEST_RECORDING, install=plan.install)
    if isinstance(recording, str):
        raise RuntimeError(f"pytest-recording is needed for rows 9: {recording}")
    cassetter: Path | str = "not asked for in this plan"
    if plan.cassetter:
        cassetter = install(CASSETTER_PEER, install=plan.install)
    if isinstance(cassetter, str):
        not_run[CASSETTER] = cassetter
    root = workdir / "pytest-suite"
    with serving() as server:
        sides = _sides(plan, root, server, recording, cassetter)
        samples: dict[tuple[str, Phase], list[tuple[float, float]]] = {}
        for rnd in range(-1 if plan.warmup else 0, plan.reps):
            for phase in PHASES:
                for side in sides if phase == "record" else _replay_order(sides):
                    if side.name in not_run:
                        continue
                    try:
                        took = _run_job(side, phase, plan, server)
                    except _Failed as failed:
                        if not side.optional:
                            raise RuntimeError(f"{side.name} {phase}: {failed}") from None
                        reason = str(failed).splitlines()[0]
                        not_run[side.name] = f"its {phase} run failed: {reason}"
                        continue
                    if rnd >= 0:
                        samples.setdefault((side.name, phase), []).append(took)
    shutil.rmtree(root, ignore_errors=True)

    def figures(phase: Phase) -> dict[str, Figures]:
        return {
            name: Figures(tuple(w for w, _ in runs), tuple(c for _, c in runs))
            for (name, ph), runs in samples.items()
            if ph == phase and name not in not_run
        }

    return Results(plan, figures("record"), figures("replay"), not_run)


def install_peers() -> tuple[str | None, str | None]:
    """Install the peers that are missing; why pytest-recording (which rows 9 need) and
    cassetter (which they measure when it installs) could not be, or ``None``."""
    recording, cassetter = (install(p, install=True) for p in (PYTEST_RECORDING, CASSETTER_PEER))
    return (
        recording if isinstance(recording, str) else None,
        cassetter if isinstance(cassetter, str) else None,
    )


def _replay_order(sides: list[_Side]) -> list[_Side]:
    """The floor first, then faultdeck: each goal's two replays run one after the other."""
    return sorted(sides, key=lambda side: side.name != NONE)


def _sides(
    plan: Plan, root: Path, server: Server, recording: Path, cassetter: Path | str
) -> list[_Side]:
    def suite(name: str, kind: Kind) -> Path:
        folder = root / name.replace(" ", "-")
        write_suite(
            folder,
            kind,
            tests=plan.tests,
            calls=plan.calls,
            per_file=plan.per_file,
            base_url=server.base_url,
        )
        return folder

    def peer(name: str, plugin: Peer, path: Path) -> _Side:
        folder, load = suite(name, "vcr"), ("-p", plugin.plugin)
        return _Side(
            name,
            _Job(folder, (*load, "--record-mode=all"), path, True, ".yaml"),
            _Job(folder, (*load, "--record-mode=none"), path, False, ".yaml"),
            optional=plugin is CASSETTER_PEER,
        )

    ours, plugin = suite(FAULTDECK, "faultdeck"), ("-p", "faultdeck.pytest_plugin")
    sides = [
        _Side(
            FAULTDECK,
            _Job(ours, (*plugin, "--faultdeck-mode=record"), None, True, ".jsonl"),
            _Job(ours, plugin, None, False, ".jsonl"),
        ),
        peer(RECORDING, PYTEST_RECORDING, recording),
    ]
    if isinstance(cassetter, Path):
        sides.append(peer(CASSETTER, CASSETTER_PEER, cassetter))
    live, floor = suite("live", "live"), suite("floor", "floor")
    sides.append(_Side(NONE, _Job(live, (), None, True, None), _Job(floor, (), None, False, None)))
    return sides


_UNSET = ("CI", "PYTEST_ADDOPTS", "PYTEST_PLUGINS", "PYTHONPATH", "PYTHONDONTWRITEBYTECODE")


class _Failed(Exception):
    """A pytest run that did not do what its side must."""


def _run_job(side: _Side, phase: Phase, plan: Plan, server: Server) -> tuple[float, float]:
    """Run one side's phase once; its (wall, CPU) seconds."""
    job = side.record if phase == "record" else side.replay
    cassettes = job.folder / "cassettes"
    if phase == "record":
        shutil.rmtree(cassettes, ignore_errors=True)
    env = {
        k: v
        for k, v in os.environ.items()
        # PYTHONDONTWRITEBYTECODE too: the warm-up round leaves the bytecode caches.
        if k not in _UNSET and not k.startswith("FAULTDECK_")
    }
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    if job.pythonpath is not None:
        env["PYTHONPATH"] = str(job.pythonpath)
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *job.args]
    hits = server.hits
    try:
        spent = spend(command, cwd=job.folder, env=env, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        raise _Failed(f"pytest ran past {TIMEOUT} s") from None
    _check(spent, job, plan, server.hits - hits)
    return spent.wall, spent.cpu


def _check(done: Spent, job: _Job, plan: Plan, hits: int) -> None:
    lines = done.stdout.strip().splitlines()
    last = lines[-1] if lines else ""
    passed = re.fullmatch(rf"{plan.tests} passed(, \d+ warnings?)? in [\d.]+s.*", last)
    if done.returncode != 0 or not passed:
        said = (done.stdout.strip()[-1500:] + "\n" + done.stderr.strip()[-1500:]).strip()
        first = next((line for line in said.splitlines() if "Error" in line), last)
        raise _Failed(f"pytest exited {done.returncode}: {first.strip()}\n{said}")
    expected = plan.tests * plan.calls if job.live else 0
    if hits != expected:
        raise _Failed(f"the server answered {hits} requests; this run should make {expected}")
    if job.cassettes is not None:
        found = len(list((job.folder / "cassettes").rglob(f"*{job.cassettes}")))
        if found != plan.tests:
            raise _Failed(f"{found} cassettes for {plan.tests} tests")


# -- goals and the table ---------------------------------------------------------------------

_LABELS = {RECORDING: RECORDING, NONE: "no-cassette floor (MockTransport)"}


def goals(results: Results) -> list[Goal]:
    """Rows 9.1 to 9.3: CPU time, ratios of medians; the wall time and the ratio of each
    round's runs beside them, and cassetter's figures where it ran."""
    plan, rec, rep = results.plan, results.record, results.replay
    suite = f"a {plan.tests}-test pytest suite ({plan.calls} openai calls a test)"
    cassetter = _cassetter(results)
    rows = [
        ("9.1", "recording", rec, RECORDING, 1.0, f"; live, no cassette {rec[NONE].text()}"),
        ("9.2", "replaying", rep, NONE, 1.1, ""),
        ("9.3", "replaying", rep, RECORDING, 0.75, ""),
    ]
    return [
        at_most(
            row,
            f"{doing} {suite}: faultdeck / {_LABELS[theirs]}, CPU",
            f"faultdeck {figures[FAULTDECK].text()}, {_LABELS[theirs]} "
            f"{figures[theirs].text()}; run for run {_paired(figures, theirs):.2f}×, wall "
            f"{_ratio(figures, theirs, wall=True):.2f}×{more}"
            + ("" if theirs == NONE else cassetter(figures)),
            _ratio(figures, theirs),
            limit,
            f"{plan.reps} each",
        )
        for row, doing, figures, theirs, limit, more in rows
    ]


def _cassetter(results: Results) -> Callable[[dict[str, Figures]], str]:
    def said(figures: dict[str, Figures]) -> str:
        if CASSETTER not in figures:
            return f"; cassetter not run: {results.not_run.get(CASSETTER, 'no figures')}"
        return (
            f"; cassetter {figures[CASSETTER].text()}, faultdeck / cassetter "
            f"{_ratio(figures, CASSETTER):.2f}×"
        )

    return said


def _paired(figures: dict[str, Figures], theirs: str) -> float:
    """The median of faultdeck's CPU over ``theirs`` in the runs each round made; the ratio
    of medians when the two ran a different number of times."""
    ours, other = figures[FAULTDECK].cpu, figures[theirs].cpu
    if len(ours) != len(other):
        return _ratio(figures, theirs)
    return statistics.median(a / b for a, b in zip(ours, other, strict=True))


def _ratio(figures: dict[str, Figures], theirs: str, *, wall: bool = False) -> float:
    """faultdeck's median CPU (or wall) time over ``theirs``."""
    ours, other = figures[FAULTDECK], figures[theirs]
    if wall:
        return ours.median_wall / other.median_wall
    return ours.median_cpu / other.median_cpu


def details(results: Results) -> tuple[Sequence[str], list[list[str]]]:
    """Every side's record and replay figures (medians), and faultdeck's CPU over each."""
    header = (
        *("side", "record CPU", "record wall", "replay CPU", "replay wall"),
        *("faultdeck / side, record CPU", "faultdeck / side, replay CPU"),
    )
    rows: list[list[str]] = []
    for name in (FAULTDECK, RECORDING, CASSETTER, NONE):
        if name in results.not_run:
            rows.append([name, f"not run: {results.not_run[name]}", *[""] * 5])
            continue
        row = ["no cassette (record: live; replay: MockTransport)" if name == NONE else name]
        for figures in (results.record, results.replay):
            row += [f"{figures[name].median_cpu:.2f} s", f"{figures[name].median_wall:.2f} s"]
        row += [f"{_ratio(figures, name):.2f}×" for figures in (results.record, results.replay)]
        rows.append(row)
    return header, rows
