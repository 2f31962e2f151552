"""The virtual clock is exact: nothing real reaches it. A loop on the real openai SDK,
replayed through ``fd.http`` under fault plans, waits on the deck's clock exactly what it
slept; the SDK's own retry puts there exactly the wait the SDK decided (the Retry-After it
was given, else its backoff before jitter). So ``bounded_waiting`` is judged exactly at its
limit, and a rehearsal or a redteam search run twice gives the same results."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import openai
import pytest

import faultdeck as fd
from faultdeck import faults
from tests.support.fake_upstream import Upstream
from tests.support.sdk import OPENAI_MODEL, NetworkGuard, openai_sync

DEAD = "http://127.0.0.1:9"  # a replay that went live would fail loudly
OPS = ("plan", "answer")
ASK = {"plan": "Plan the trip.", "answer": "Answer the question."}
# A wait of exactly 2 s is the most this policy allows, in all and at once.
POLICY = fd.Policy(
    max_attempts=3, base_delay=0.5, max_delay=2.0, max_retry_after=2.0, max_total_wait=2.0
)
Entry = Callable[[fd.Deck, fd.VirtualClock], list[fd.Outcome]]


def agent(max_retries: int = 0, policy: fd.Policy = POLICY) -> Entry:
    """A two-step loop on the openai SDK under ``run_steps``: with ``max_retries=0`` the
    loop's own retries sleep on the deck's clock; otherwise the SDK retries by itself."""

    def entry(deck: fd.Deck, clock: fd.VirtualClock) -> list[fd.Outcome]:
        client = openai_sync(DEAD, deck, NetworkGuard()).with_options(max_retries=max_retries)

        def step(op: str) -> str:
            messages: Any = [{"role": "user", "content": ASK[op]}]
            reply = client.chat.completions.create(model=OPENAI_MODEL, messages=messages)
            return reply.choices[0].message.content or ""

        with client:
            return fd.run_steps(step, OPS, policy, clock=clock)

    return entry


@pytest.fixture(scope="module")
def golden(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("exact-clock") / "golden.jsonl"
    with Upstream() as upstream:
        deck = fd.Deck(path, mode="record", clock=fd.SystemClock())
        with deck, openai_sync(upstream.url, deck, None) as client:
            for op in OPS:
                messages: Any = [{"role": "user", "content": ASK[op]}]
                client.chat.completions.create(model=OPENAI_MODEL, messages=messages)
    return path


def replay(path: Path, *plan: fd.Fault) -> tuple[fd.Deck, fd.VirtualClock]:
    clock = fd.VirtualClock()
    return fd.Deck(path, mode="replay", faults=list(plan), clock=clock, repeats="last"), clock


def test_a_loop_that_slept_2s_between_retries_waited_exactly_2s(golden: Path) -> None:
    deck, clock = replay(golden, faults.quota(retry_after=2).at(seq=2))
    with deck:
        outcomes = agent()(deck, clock)
    assert [(o.op, o.status, o.retry_after) for o in outcomes] == [
        ("plan", "ok", None),
        ("answer", "ok", "2"),
    ]
    assert clock.sleeps == (2.0,)
    assert clock.waited == 2.0  # exactly what was slept: no real milliseconds on top
    calls = deck.report().calls
    assert calls[2].started - calls[1].started == 2.0
    assert deck.report().waited == 2.0


def test_bounded_waiting_is_judged_exactly_at_its_limit(golden: Path) -> None:
    deck, clock = replay(golden, faults.quota(retry_after=2).at(seq=2))
    with deck:
        outcomes = agent()(deck, clock)
    assert fd.check(outcomes, policy=POLICY, deck=deck, clock=clock) == []
    # One second less allowed, and the same run breaks it: the check still bites.
    tighter = fd.Policy(max_delay=2.0, max_retry_after=2.0, max_total_wait=1.0)
    [violation] = fd.check(outcomes, policy=tighter, deck=deck, clock=clock)
    assert str(violation) == "bounded_waiting: waited 2s (allowed: 1s in all (max_total_wait))"


def test_the_sdks_own_retry_waits_exactly_its_retry_after(golden: Path) -> None:
    deck, clock = replay(golden, faults.quota(retry_after=0.25).at(seq=2))
    with deck:
        outcomes = agent(max_retries=1)(deck, clock)
    assert [o.attempts for o in outcomes] == [1, 1]  # the SDK retried, not the loop
    assert clock.sleeps == (0.25,)
    calls = deck.report().calls
    assert [(c.source, c.retry_after) for c in calls] == [
        ("replay", None),
        ("fault", 0.25),
        ("replay", None),
    ]
    assert calls[2].started - calls[1].started == 0.25
    assert fd.check(outcomes, policy=POLICY, deck=deck, clock=clock) == []


def test_the_sdks_backoff_without_retry_after_is_its_wait_before_jitter(golden: Path) -> None:
    deck, clock = replay(golden, faults.transient(503).at(seq=2), faults.transient(503).at(seq=3))
    with deck:
        outcomes = agent(max_retries=2)(deck, clock)
    assert [o.status for o in outcomes] == ["ok", "ok"]
    assert clock.sleeps == (0.5, 1.0)  # 0.5 s doubling, whatever the jitter drew


def test_a_rehearsal_twice_gives_identical_matrices(golden: Path) -> None:
    plans = {
        "quota 2s": fd.FaultPlan([faults.quota(retry_after=2).at(seq=2)]),
        "quota 1s twice": fd.FaultPlan([faults.quota(retry_after=1).at(seq=2).times(2)]),
        "transient": fd.FaultPlan([faults.transient(503).at(seq=1)]),
    }
    first = fd.rehearse(agent(), golden, plans, policy=POLICY)
    second = fd.rehearse(agent(), golden, plans, policy=POLICY)
    assert fd.render.matrix_json(first) == fd.render.matrix_json(second)
    assert first.cells == second.cells  # outcomes and their elapsed_ms included
    assert first.ok


def hasty(deck: fd.Deck, clock: fd.VirtualClock) -> list[fd.Outcome]:
    """A loop that stops at a 429 without Retry-After but retries one with it at once,
    without waiting it (the bug redteam finds)."""
    client = openai_sync(DEAD, deck, NetworkGuard())
    outcomes = []
    with client:
        for op in OPS:
            with fd.step(op):
                for attempt in range(1, 4):
                    messages: Any = [{"role": "user", "content": ASK[op]}]
                    try:
                        reply = client.chat.completions.create(
                            model=OPENAI_MODEL, messages=messages
                        )
                    except openai.RateLimitError as exc:
                        if "retry-after-ms" in exc.response.headers:
                            continue  # told when to come back, it comes back at once
                        outcomes.append(fd.Outcome(op, "stopped", None, "quota", attempt))
                        return outcomes
                    value = reply.choices[0].message.content
                    outcomes.append(fd.Outcome(op, "ok", value, attempts=attempt))
                    break
                else:
                    outcomes.append(fd.Outcome(op, "stopped", None, "quota", 3))
                    return outcomes
    return outcomes


@pytest.mark.parametrize("seed", [0, 1])
def test_redteam_finds_nothing_on_a_correct_loop(golden: Path, seed: int) -> None:
    # Plans whose waits add up to max_total_wait exactly are in the search: a wait of
    # 2.0017 s there was a finding on a loop that does nothing wrong.
    found = fd.redteam(golden, agent(), budget=150, seed=seed, policy=POLICY)
    assert [str(v) for v in found.violations] == []
    assert not found.found


def test_redteam_twice_with_the_same_seed_gives_the_same_report(golden: Path) -> None:
    first = fd.redteam(golden, hasty, budget=60, seed=0, policy=POLICY)
    second = fd.redteam(golden, hasty, budget=60, seed=0, policy=POLICY)
    assert first.found
    assert "no_early_retry" in {v.invariant for v in first.violations}
    assert "retried at seq 2 after 0s" in str(first.violations[0])  # nothing real waited
    assert first == second  # the plan, the cell, its outcomes, every violation's words
