"""Rows 11: attaching to a program without changing its code.

    bootstrap start     a fresh Python running ``import openai`` under the bootstrap (its
                        folder first on PYTHONPATH, FAULTDECK_BOOTSTRAP=1, a deck replaying a
                        one-call cassette, opened at start and closed at exit with its report
                        written), against the same program without it; CPU time
    intercepted replay  N chat completions replayed through ``httpx.Client()`` inside
                        ``fd.intercept(deck)``, against the same through
                        ``httpx.Client(transport=fd.http.Transport(deck))``; interleaved, per
                        call, run for run

Every ``faultdeck record|replay|rehearse… -- python agent.py`` child pays the start; every
request of a program that is not wired pays the routing.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

import faultdeck as fd
from faultdeck.http import Transport

from ._processes import Runs, take_turns
from ._results import Goal, at_most
from ._server import REQUEST_HEADERS, request_bodies, serving
from ._timing import Body, Contender, Timing, interleave, paired

BARE = "import openai"
BOOTSTRAPPED = "import openai, under the bootstrap"
WIRED = "fd.http.Transport(deck)"
ROUTED = "fd.intercept(deck)"
BOOTSTRAP = Path(fd.__file__).parent / "_bootstrap"

NOTE = (
    "Attach rows: the start is a fresh Python (the venv's) running import openai, with and "
    "without the bootstrap: its folder first on PYTHONPATH and FAULTDECK_BOOTSTRAP=1, "
    "FAULTDECK_CASSETTE a one-call cassette, FAULTDECK_MODE=replay and FAULTDECK_REPORT a "
    "file (the deck opens at start and writes its report at exit), the two taking turns "
    "after one untimed run each; the figure is the child's CPU time, user + sys, median. "
    "The replay row records N chat completions through httpx.Client(transport="
    "fd.http.Transport(deck)) from a local server, stops it, and replays them through a "
    "plain httpx.Client() inside fd.intercept(deck) and through the wired client, taking "
    "turns in one process (gc frozen, each run its own deck opened untimed); the ratio is "
    "run for run."
)


@dataclass(frozen=True, slots=True)
class Plan:
    """How the rows are run: ``starts`` timed starts per side; ``calls`` replayed per run,
    ``reps`` runs per side."""

    starts: int
    calls: int
    reps: int


@dataclass(frozen=True, slots=True)
class Results:
    """What the rows found."""

    starts: dict[str, Runs]
    replays: dict[str, Timing]


def run(plan: Plan, workdir: Path) -> Results:
    """Record the cassettes, then time both rows."""
    bodies = request_bodies(plan.calls)
    cassette = workdir / "attach.jsonl"
    one = workdir / "attach-one.jsonl"
    with serving() as url:
        for path, sent in ((cassette, bodies), (one, bodies[:1])):
            with fd.Deck(path, mode="record") as deck, _wired(deck) as client:
                for content in sent:
                    client.post(url, content=content, headers=REQUEST_HEADERS).raise_for_status()
    starts = _starts(plan, one, workdir)
    replays = interleave(
        [
            Contender(WIRED, lambda: _replay(cassette, url, bodies, routed=False)),
            Contender(ROUTED, lambda: _replay(cassette, url, bodies, routed=True)),
        ],
        reps=plan.reps,
        per_run=plan.calls,
        primed=True,
    )
    return Results(starts, replays)


def _starts(plan: Plan, cassette: Path, workdir: Path) -> dict[str, Runs]:
    bare = {k: v for k, v in os.environ.items() if not k.startswith("FAULTDECK_")}
    bare.pop("PYTHONPATH", None)
    booted = dict(
        bare,
        PYTHONPATH=str(BOOTSTRAP),
        FAULTDECK_BOOTSTRAP="1",
        FAULTDECK_CASSETTE=str(cassette),
        FAULTDECK_MODE="replay",
        FAULTDECK_REPORT=str(workdir / "attach-report.json"),
    )
    program = [sys.executable, "-c", "import openai"]
    both: dict[str, Runs] = {}
    # take_turns gives every side one environment: the two run as two one-side turns each
    # round, alternating.
    for _ in range(plan.starts):
        for name, env in ((BARE, bare), (BOOTSTRAPPED, booted)):
            ran = take_turns({name: program}, reps=1, warmup=name not in both, env=env)[name]
            both[name] = Runs(name, (*both[name].runs, *ran.runs)) if name in both else ran
    report = workdir / "attach-report.json"
    if not report.exists():
        raise RuntimeError("the bootstrapped child wrote no report: its deck did not run")
    return both


@contextmanager
def _wired(deck: fd.Deck) -> Iterator[httpx.Client]:
    with httpx.Client(transport=Transport(deck), trust_env=False) as client:
        yield client


@contextmanager
def _replay(cassette: Path, url: str, bodies: list[bytes], *, routed: bool) -> Iterator[Body]:
    deck = fd.Deck(cassette, mode="replay", clock=fd.VirtualClock())
    deck.open()
    if routed:
        with fd.intercept(deck), httpx.Client(trust_env=False) as client:
            yield _loop(client, url, bodies)
    else:
        with _wired(deck) as client:
            yield _loop(client, url, bodies)
    deck.close()
    report = deck.report()
    if report.misses or report.used != len(bodies):
        raise AssertionError(f"{'routed' if routed else 'wired'} replay missed: {report}")


def _loop(client: httpx.Client, url: str, bodies: list[bytes]) -> Body:
    post = client.post

    def replay() -> None:
        for content in bodies:
            post(url, content=content, headers=REQUEST_HEADERS)

    return replay


def goals(results: Results) -> list[Goal]:
    """Rows 11.1 and 11.2."""
    bare, booted = results.starts[BARE], results.starts[BOOTSTRAPPED]
    wired, routed = results.replays[WIRED], results.replays[ROUTED]
    return [
        at_most(
            "11.1",
            "a child's start under the bootstrap / without it (import openai, CPU time)",
            f"bootstrap {booted.shown()}, without {bare.shown()}",
            booted.cpu / bare.cpu,
            1.15,
            f"{len(bare.runs)} each",
        ),
        at_most(
            "11.2",
            f"replay through an intercepted client / fd.http.Transport, N={wired.per_run:,}",
            f"intercepted {routed.per_op_us:.1f} µs/call, wired {wired.per_op_us:.1f} µs/call",
            paired(routed, wired),
            1.05,
            f"{len(wired.samples_ns)} each, run for run",
        ),
    ]
