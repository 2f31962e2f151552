"""``fd.run_steps`` over the real SDKs, replayed through ``fd.http`` under fault plans.

A loop built on the openai or anthropic SDK meets the SDK's exceptions: under a quota
fault the openai SDK raises ``openai.RateLimitError``. The policy reads it as the quota
row, so the rehearsal judges the loop by that row (not by the partial work an exception
that escaped would lose). The recordings are made once against the local fake upstream,
which is then stopped; every replay goes through a guard that fails on any network use.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import openai
import pytest

import faultdeck as fd
from faultdeck import faults
from tests.support.fake_upstream import DEFAULT_TEXT, Upstream
from tests.support.sdk import (
    ANTHROPIC_MODEL,
    OPENAI_MODEL,
    NetworkGuard,
    anthropic_sync,
    openai_sync,
)

DEAD = "http://127.0.0.1:9"
OPS = ("plan", "answer")
ASK = {"plan": "Plan the trip.", "answer": "Answer the question."}
POLICY = fd.Policy(max_attempts=3, max_retry_after=5.0, max_total_wait=10.0)
Entry = Callable[[fd.Deck, fd.VirtualClock], list[fd.Outcome]]


def openai_agent(max_retries: int = 0, *, stream: bool = False, keep: bool = True) -> Entry:
    """A two-step loop on the openai SDK under ``run_steps``; streamed, it keeps what
    arrived once a stream's first event did (``keep``), or lets the break out."""

    def entry(deck: fd.Deck, clock: fd.VirtualClock) -> list[fd.Outcome]:
        client = openai_sync(DEAD, deck, NetworkGuard()).with_options(max_retries=max_retries)

        def step(op: str) -> str:
            messages: Any = [{"role": "user", "content": ASK[op]}]
            if not stream:
                reply = client.chat.completions.create(model=OPENAI_MODEL, messages=messages)
                return reply.choices[0].message.content or ""
            text, arrived = "", False
            chunks = client.chat.completions.create(
                model=OPENAI_MODEL, messages=messages, stream=True
            )
            try:
                for chunk in chunks:
                    arrived = True
                    text += chunk.choices[0].delta.content or "" if chunk.choices else ""
            except (openai.APIConnectionError, ValueError):  # cut, or an event not JSON
                if not (keep and arrived):
                    raise  # nothing reached the loop yet: the policy may retry
            return text

        with client:
            return fd.run_steps(step, OPS, POLICY, clock=clock)

    return entry


def anthropic_agent(deck: fd.Deck, clock: fd.VirtualClock) -> list[fd.Outcome]:
    client = anthropic_sync(DEAD, deck, NetworkGuard())

    def step(op: str) -> str:
        reply = client.messages.create(
            model=ANTHROPIC_MODEL,
            max_tokens=64,
            messages=[{"role": "user", "content": ASK[op]}],
        )
        return "".join(block.text for block in reply.content if block.type == "text")

    with client:
        return fd.run_steps(step, OPS, POLICY, clock=clock)


@pytest.fixture(scope="module")
def cassettes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("sdk-loops")
    paths = {name: folder / f"{name}.jsonl" for name in ("openai", "stream", "anthropic")}
    with Upstream() as upstream:
        for name in ("openai", "stream"):
            deck = fd.Deck(paths[name], mode="record", clock=fd.SystemClock())
            with deck, openai_sync(upstream.url, deck, None) as client:
                for op in OPS:
                    messages: Any = [{"role": "user", "content": ASK[op]}]
                    if name == "stream":
                        stream = client.chat.completions.create(
                            model=OPENAI_MODEL, messages=messages, stream=True
                        )
                        assert list(stream)
                    else:
                        client.chat.completions.create(model=OPENAI_MODEL, messages=messages)
        deck = fd.Deck(paths["anthropic"], mode="record", clock=fd.SystemClock())
        with deck, anthropic_sync(upstream.url, deck, None) as claude:
            for op in OPS:
                claude.messages.create(
                    model=ANTHROPIC_MODEL,
                    max_tokens=64,
                    messages=[{"role": "user", "content": ASK[op]}],
                )
    return paths


def at_answer(fault: fd.Fault) -> fd.FaultPlan:
    return fd.FaultPlan([fault.at(seq=2)])


def test_an_openai_quota_error_is_the_quota_row_not_lost_work(
    cassettes: dict[str, Path],
) -> None:
    matrix = fd.rehearse(openai_agent(), cassettes["openai"], {"quota": at_answer(faults.quota())})
    [_, cell] = matrix.cells
    assert (cell.status, cell.violations) == ("held", ())
    assert cell.detail == "plan ok, answer stopped(quota)"
    assert cell.outcomes[0].value == DEFAULT_TEXT
    assert matrix.ok


PLANS = {
    "quota": faults.quota(),
    "quota retry-after": faults.quota(retry_after=2),
    "timeout": faults.timeout(),
    "transient 503": faults.transient(503),
    "transient 529": faults.transient(529),
    "reset": faults.reset(),
}
EXPECTED = {
    "quota": "plan ok, answer stopped(quota)",
    "quota retry-after": "plan ok, answer ok x2",
    "timeout": "plan ok, answer ok x2",
    "transient 503": "plan ok, answer ok x2",
    "transient 529": "plan ok, answer ok x2",
    "reset": "plan ok, answer ok x2",
}


@pytest.mark.parametrize(
    ("cassette", "entry"),
    [("openai", openai_agent()), ("anthropic", anthropic_agent)],
    ids=["openai", "anthropic"],
)
def test_each_sdk_failure_takes_its_row_of_the_policy(
    cassettes: dict[str, Path], cassette: str, entry: Entry
) -> None:
    plans = {label: at_answer(fault) for label, fault in PLANS.items()}
    matrix = fd.rehearse(entry, cassettes[cassette], plans)
    assert {c.label: c.detail for c in matrix.cells[1:]} == EXPECTED
    assert matrix.findings == ()
    waited = next(c for c in matrix.cells if c.label == "quota retry-after").outcomes[1]
    assert waited.retry_after == "2"


def test_openai_insufficient_quota_is_the_non_retryable_stop(cassettes: dict[str, Path]) -> None:
    plan = at_answer(faults.quota(code="insufficient_quota", retry_after=1))
    matrix = fd.rehearse(openai_agent(), cassettes["openai"], {"insufficient": plan})
    [_, cell] = matrix.cells
    assert (cell.status, cell.detail) == ("held", "plan ok, answer stopped(quota_non_retryable)")
    assert cell.outcomes[1].retry_after == "1"


def replay(path: Path, plan: fd.FaultPlan) -> tuple[fd.Deck, fd.VirtualClock]:
    clock = fd.VirtualClock()
    return fd.Deck(path, mode="replay", faults=plan, clock=clock, repeats="last"), clock


def test_the_sdks_own_retry_is_one_attempt_and_the_policy_still_reads_it(
    cassettes: dict[str, Path],
) -> None:
    deck, clock = replay(cassettes["openai"], at_answer(faults.quota(retry_after=0.02)))
    with deck:
        outcomes = openai_agent(max_retries=1)(deck, clock)
    # The SDK waited the retry-after-ms and asked again itself: the loop saw one success.
    assert [(o.op, o.status, o.attempts) for o in outcomes] == [
        ("plan", "ok", 1),
        ("answer", "ok", 1),
    ]
    report = deck.report()
    assert [(c.source, c.error, c.retry_after) for c in report.calls] == [
        ("replay", None, None),
        ("fault", "RateLimitError", 0.02),
        ("replay", None, None),
    ]
    assert report.repeats == ()  # the fault stood in; the recorded answer served the retry
    assert report.calls[2].started - report.calls[1].started >= 0.02
    assert fd.check(outcomes, policy=POLICY, deck=deck, clock=clock) == []


def test_the_sdks_own_retry_of_a_quota_without_header_breaks_the_budget(
    cassettes: dict[str, Path],
) -> None:
    deck, clock = replay(cassettes["openai"], at_answer(faults.quota()))
    with deck:
        outcomes = openai_agent(max_retries=1)(deck, clock)
    assert [o.status for o in outcomes] == ["ok", "ok"]
    [violation] = fd.check(outcomes, policy=POLICY, deck=deck, clock=clock)
    assert (violation.invariant, violation.op) == ("call_budget", "answer")
    assert violation.observed == "2 model calls at seq 2, 3"


STREAM_ROWS = {"stream cut", "malformed stream"}


def test_stream_faults_run_only_at_calls_that_streamed(cassettes: dict[str, Path]) -> None:
    plain = fd.rehearse(openai_agent(), cassettes["openai"])
    assert not {c.label for c in plain.cells} & STREAM_ROWS
    streamed = fd.rehearse(openai_agent(stream=True), cassettes["stream"])
    assert streamed.positions == plain.positions
    cut = [(c.label, c.seq) for c in streamed.cells if c.label in STREAM_ROWS]
    assert cut == [(label, seq) for label in ("stream cut", "malformed stream") for seq in (1, 2)]
    # The loop keeps what arrived before a break, and everything else the policy handles.
    assert {c.status for c in streamed.cells} == {"held", "killed"}
    assert streamed.ok


def test_a_loop_that_retries_a_cut_stream_breaks_committed_streams(
    cassettes: dict[str, Path],
) -> None:
    plans = {"cut": at_answer(faults.stream_cut(after=1))}
    matrix = fd.rehearse(openai_agent(stream=True, keep=False), cassettes["stream"], plans)
    [_, cell] = matrix.cells
    assert cell.status == "broke"
    assert [v.invariant for v in cell.violations] == ["committed_streams"]
    assert "cut after its first event, retried at seq 3" in cell.violations[0].observed
