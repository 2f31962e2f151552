"""The policy runner's properties, for any fault sequence (hypothesis)."""

from __future__ import annotations

import copy
import dataclasses
import gc
import pickle
import weakref
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import faultdeck as fd
from faultdeck import faults
from tests.support.calls import returns

OPS = ("a", "b", "c", "d")
POLICY = fd.Policy(
    max_attempts=3, base_delay=0.5, max_delay=2.0, max_total_wait=3.0, max_retry_after=2.5, seed=11
)


@pytest.fixture(scope="module")
def golden(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Four independent ops, each one call, and each op's repair call."""
    path = tmp_path_factory.mktemp("policy") / "golden.jsonl"
    with fd.Deck(path, mode="record") as deck:
        for op in OPS:
            deck.call("tool", op, {}, returns({"done": op}))
            deck.call("tool", f"{op}.repair", {}, returns({"repaired": op}))
    return path


FAULT = st.one_of(
    st.none(),
    st.builds(faults.timeout),
    st.builds(faults.transient, status=st.sampled_from([500, 503, 529])),
    st.builds(faults.quota),
    st.builds(faults.quota, retry_after=st.floats(0, 10, allow_nan=False)),
    st.builds(faults.quota, code=st.just("insufficient_quota")),
    st.builds(faults.bad_tool_call),
    st.builds(faults.slow_first_token, ms=st.floats(0, 5000, allow_nan=False)),
    st.builds(faults.latency, ms=st.floats(0, 5000, allow_nan=False)),
)


def rehearse(path: Path, plan: fd.FaultPlan) -> tuple[list[fd.Outcome], fd.Deck, fd.VirtualClock]:
    clock = fd.VirtualClock()
    deck = fd.Deck(path, mode="replay", faults=plan, clock=clock)

    def step(op: str) -> Any:
        return deck.call("tool", op, {}, lambda: None)

    def repair(op: str, error: fd.BadToolCall) -> Any:
        return deck.call("tool", f"{op}.repair", {}, lambda: None)

    with deck:
        outcomes = fd.run_steps(step, OPS, POLICY, clock=clock, repair=repair)
    return outcomes, deck, clock


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(sequence=st.lists(FAULT, max_size=14))
def test_any_fault_sequence_keeps_the_bounds(golden: Path, sequence: list[fd.Fault | None]) -> None:
    plan = fd.FaultPlan.sequence(sequence)
    outcomes, deck, clock = rehearse(golden, plan)
    assert clock.waited <= POLICY.max_total_wait + 1e-9
    retry_afters = {f.param("retry_after") for f in plan.faults if f.kind == "quota"}
    for seconds in clock.sleeps:
        # A backoff never exceeds max_delay; only a received Retry-After may, within its cap.
        if seconds in retry_afters:
            assert seconds <= POLICY.max_retry_after
        else:
            assert seconds <= POLICY.max_delay + 1e-9
    violations = fd.check(outcomes, policy=POLICY, deck=deck, clock=clock)
    assert violations == [], "\n".join(map(str, violations))
    assert deck.report().misses == ()
    # Outcomes come back for every op up to a stop, and only a quota stops the run.
    assert [o.op for o in outcomes] == list(OPS[: len(outcomes)])
    assert all(o.status != "stopped" for o in outcomes[:-1])
    if len(outcomes) < len(OPS):
        assert outcomes[-1].status == "stopped"
        assert outcomes[-1].reason in ("quota", "quota_non_retryable")


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    sequence=st.lists(FAULT, max_size=10),
    randomized=st.floats(0, 1),
    seed=st.integers(0, 2**16),
)
def test_the_same_plan_and_seed_give_identical_outcomes(
    golden: Path, sequence: list[fd.Fault | None], randomized: float, seed: int
) -> None:
    plan = fd.FaultPlan(
        [
            *fd.FaultPlan.sequence(sequence).faults,
            faults.timeout().random(p=randomized, seed=seed),
        ],
        seed=seed,
    )
    first, _, clock_a = rehearse(golden, plan)
    second, _, clock_b = rehearse(golden, plan)
    assert first == second
    assert clock_a.sleeps == clock_b.sleeps


def test_backoff_is_exponential_jittered_and_capped() -> None:
    import random

    policy = fd.Policy(base_delay=1.0, max_delay=5.0, seed=0)
    rng = random.Random(0)
    waits = [policy.backoff(n, rng) for n in range(1, 8)]
    assert all(0.5 <= w <= 5.0 for w in waits)
    assert 0.5 <= waits[0] <= 1.0
    assert 2.0 <= waits[2] <= 4.0
    assert all(2.5 <= w <= 5.0 for w in waits[3:])


@pytest.mark.parametrize(
    ("field", "value", "says"),
    [
        ("max_attempts", 0, "max_attempts must be >= 1"),
        ("max_delay", -1, "max_delay must be >= 0"),
        ("concurrency", 0, "concurrency must be between 1 and max_concurrency"),
    ],
)
def test_a_bad_policy_says_which_field(field: str, value: int, says: str) -> None:
    fields: dict[str, Any] = {field: value}
    with pytest.raises(fd.ConfigError, match=says):
        fd.Policy(**fields)


def test_a_backoff_never_outlasts_the_wait_left(golden: Path) -> None:
    # A Retry-After uses most of the budget; the backoffs after it must fit in what is left.
    plan = fd.FaultPlan.sequence(
        [faults.quota(retry_after=2.4), None, faults.timeout(), faults.timeout(), faults.timeout()]
    )
    outcomes, deck, clock = rehearse(golden, plan)
    assert clock.waited == pytest.approx(POLICY.max_total_wait)
    assert clock.sleeps[0] == 2.4
    assert [o.status for o in outcomes] == ["ok", "degraded", "ok", "ok"]
    assert outcomes[1].reason == "transient"
    assert fd.check(outcomes, policy=POLICY, deck=deck, clock=clock) == []


def test_an_outcome_is_a_frozen_value() -> None:
    made = fd.Outcome("ask", "ok", {"n": 1}, attempts=2, elapsed_ms=1.5, concurrency=9)
    assert made == fd.Outcome("ask", "ok", {"n": 1}, None, 2, None, 1.5, 9)
    assert (made.attempts, made.reason, made.retry_after) == (2, None, None)
    assert fd.Outcome("a", "ok") == fd.Outcome(op="a", status="ok", value=None, attempts=1)
    assert hash(fd.Outcome("a", "ok")) == hash(fd.Outcome("a", "ok"))
    assert dataclasses.replace(made, elapsed_ms=0.0).elapsed_ms == 0.0
    assert [f.name for f in dataclasses.fields(made)][-2:] == ["elapsed_ms", "concurrency"]
    assert repr(fd.Outcome("a", "ok")).startswith("Outcome(op='a', status='ok', value=None")
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.status = "stopped"  # type: ignore[misc]
    with pytest.raises(TypeError):
        fd.Outcome("a")  # type: ignore[call-arg]
    assert pickle.loads(pickle.dumps(made)) == made
    assert type(copy.copy(made)) is fd.Outcome
    assert copy.deepcopy(made) == made
    assert dataclasses.asdict(made)["value"] == {"n": 1}
    ran = fd.run_steps(lambda op: op, ["a"], POLICY, clock=fd.VirtualClock())
    assert type(ran[0]) is fd.Outcome
    assert ran == [fd.Outcome("a", "ok", "a", None, 1, None, 0.0, POLICY.concurrency + 1)]
    with pytest.raises(dataclasses.FrozenInstanceError):
        ran[0].value = "b"  # type: ignore[misc]


def test_a_failure_leaves_no_cycle_behind(golden: Path) -> None:
    """An injected fault, caught by the loop or by its caller, is freed as soon as it is
    dropped: neither the frame that raised it nor the runner's keeps it (its traceback holds
    them, so either would make a cycle only the garbage collector frees, and with it the
    frames of the whole loop)."""
    caught: list[weakref.ref[BaseException]] = []

    def step(op: str) -> Any:
        try:
            return deck.call("tool", op, {}, returns(None))
        except fd.TransientError as exc:
            caught.append(weakref.ref(exc))
            raise

    gc.collect()
    gc.disable()
    try:
        plan = fd.FaultPlan([faults.timeout().at(seq=1)])
        with fd.Deck(golden, mode="replay", faults=plan, repeats="last") as deck:
            outcomes = fd.run_steps(step, ["a"], POLICY, clock=fd.VirtualClock())
        assert (outcomes[0].status, outcomes[0].attempts) == ("ok", 2)
        with fd.Deck(golden, mode="replay", faults=plan) as deck:
            with pytest.raises(fd.TransientError) as raised:
                deck.call("tool", "a", {}, returns(None))
            caught.append(weakref.ref(raised.value))
            del raised
        assert len(caught) == 2
        assert [ref() for ref in caught] == [None, None]
    finally:
        gc.enable()
