"""Row 5: rehearsal throughput: fresh replays of a 50-call cassette, one fault each.

Each replay is what a rehearsal cell does before judging: a fresh ``VirtualClock``, a fresh
``Deck`` (``repeats="last"``) with a one-fault plan, and the loop run through
``fd.run_steps``, which retries, waits (on the virtual clock) or degrades as its policy
says. The faults cycle through timeout, quota with Retry-After, transient 503, reset,
latency and a bad tool call, at every call position in turn. One process, one thread.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from itertools import cycle, islice
from pathlib import Path
from typing import Any

import faultdeck as fd
from faultdeck import faults

from ._results import Goal, rate_at_least
from ._timing import Body, Contender, Timing, interleave

NAME = "faultdeck rehearsal replays"
CALLS = 50
POLICY = fd.Policy(max_attempts=3, base_delay=0.5, max_delay=4, max_total_wait=30)
FAULTS: tuple[Callable[[], fd.Fault], ...] = (
    faults.timeout,
    lambda: faults.quota(retry_after=1),
    lambda: faults.transient(503),
    faults.reset,
    lambda: faults.latency(250),
    faults.bad_tool_call,
)


def plans(count: int) -> list[fd.FaultPlan]:
    """``count`` one-fault plans: each fault in turn, at each call position in turn."""
    kinds = islice(cycle(FAULTS), count)
    return [fd.FaultPlan([make().at(seq=i % CALLS + 1)]) for i, make in enumerate(kinds)]


def _call(deck: fd.Deck, op: int) -> Any:
    if op % 2:
        return deck.call("tool", "search_docs", {"q": f"step {op}", "top_k": 5}, lambda: [op])
    messages = [{"role": "user", "content": f"plan step {op}"}]
    return deck.call("model", "chat", {"messages": messages}, lambda: {"content": f"ok {op}"})


def record(path: Path) -> None:
    """The golden cassette: one clean run of the 50-call loop."""
    clock = fd.VirtualClock()
    with fd.Deck(path, mode="record", clock=clock) as deck:
        fd.run_steps(lambda op: _call(deck, op), range(CALLS), POLICY, clock=clock)


def replay(path: Path, plan: fd.FaultPlan) -> fd.Deck:
    """One rehearsal replay under ``plan``; the deck, for checking afterwards."""
    clock = fd.VirtualClock()
    deck = fd.Deck(
        path, mode="replay", faults=plan, clock=clock, repeats="last", on_harness_change="ignore"
    )
    with deck:
        fd.run_steps(lambda op: _call(deck, op), range(CALLS), POLICY, clock=clock)
    return deck


def run(replays: int, reps: int, workdir: Path) -> dict[str, Timing]:
    """Record the cassette, then time batches of ``replays`` fresh replays."""
    path = workdir / "rehearse.jsonl"
    record(path)
    batch = plans(replays)
    return interleave([Contender(NAME, lambda: _batch(path, batch))], reps=reps, per_run=replays)


def goals(results: dict[str, Timing]) -> list[Goal]:
    """Row 5.1."""
    timing = results[NAME]
    return [
        rate_at_least(
            "5.1",
            f"rehearsal: {CALLS}-call replays under one fault, one core",
            f"{timing.per_op_us / 1000:,.2f} ms/replay, {timing.per_run:,} replays/run",
            timing.per_second,
            2000,
            f"{timing.reps}",
        )
    ]


@contextmanager
def _batch(path: Path, batch: list[fd.FaultPlan]) -> Iterator[Body]:
    decks: list[fd.Deck] = []

    def rehearse() -> None:
        for plan in batch:
            decks.append(replay(path, plan))

    yield rehearse
    for deck in decks:
        report = deck.report()
        # A degraded step leaves its recorded answer unused; a miss would mean off the path.
        if report.misses or report.faults != 1:
            raise AssertionError(f"a rehearsal replay went off the recording: {report}")
