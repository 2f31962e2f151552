"""Redteam on the workshop's golden cassette: the broken loops are found and shrunk to their
minimal plans, a loop that only breaks under three faults is found with three, the good
loop holds within the budget."""

from __future__ import annotations

import random
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import orjson
import pytest

import faultdeck as fd
from faultdeck._base.errors import ConfigError
from faultdeck._rehearse.redteam import Redteam, _earliest, redteam
from faultdeck._rehearse.redteam_space import targets_of
from faultdeck.types import Cell
from faultdeck.workshop import POLICY, Workshop
from tests.support import GOLDEN, ROOT

ENTRY = "examples.workshop.rehearsal"


@pytest.fixture(scope="module")
def examples_importable() -> Iterator[None]:
    """The entrypoints live in ``examples/``, a package at the repository root."""
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(ROOT))
        yield


pytestmark = pytest.mark.usefixtures("examples_importable")


def aimed(*faults: tuple[str, str, str, int]) -> list[dict[str, Any]]:
    """Plan-file faults ``(fault, kind, name, nth)`` with their kinds' default parameters."""
    return [
        fd.faults.from_json({"fault": f, "on": {"kind": k, "name": n, "nth": nth}}).to_json()
        for f, k, n, nth in faults
    ]


def plan_of(result: Redteam) -> list[dict[str, Any]]:
    assert result.plan is not None
    return list(result.plan.to_json()["faults"])


QUOTA_AT_PATCH_REQUEST = aimed(("quota", "model", "chat", 2))
MINIMAL = {
    # Retries a quota at once: the first call's quota already spends two transport calls.
    "retry_on_quota": (aimed(("quota", "model", "chat", 1)), "call_budget"),
    # These let a quota out of the loop (or return only the stop): the plan and the notes,
    # finished before the patch request's quota, are lost.
    "drops_partial_work": (QUOTA_AT_PATCH_REQUEST, "partial_work"),
    "unbounded_backoff": (QUOTA_AT_PATCH_REQUEST, "partial_work"),
    "coin_flip_retry": (QUOTA_AT_PATCH_REQUEST, "partial_work"),
}


@pytest.mark.parametrize("loop", sorted(MINIMAL))
def test_each_broken_loop_is_found_and_shrunk_to_its_minimal_plan(loop: str) -> None:
    result = redteam(GOLDEN, f"{ENTRY}:{loop}", seed=0)
    want, invariant = MINIMAL[loop]
    assert result.found
    assert plan_of(result) == want
    assert result.violation is not None
    assert result.violation.invariant == invariant
    assert 1 <= result.replays <= 500
    assert result.pytest_snippet is not None
    assert f"{ENTRY} import {loop}" in result.pytest_snippet


def test_the_good_loop_holds_within_the_budget() -> None:
    seen: list[tuple[int, int]] = []
    result = redteam(
        GOLDEN, f"{ENTRY}:good", budget=120, seed=0, progress=lambda d, t: seen.append((d, t))
    )
    assert not result.found
    assert result.plan is None
    assert result.violation is None
    assert result.pytest_snippet is None
    assert 0 < result.replays <= 120
    assert seen[-1] == (result.replays, 120)


def fixed_wait(
    step: Callable[[Any], Any],
    ops: Iterable[Any],
    policy: fd.Policy,
    *,
    clock: fd.Clock,
    repair: Callable[[Any, fd.BadToolCall], Any] | None = None,
) -> list[fd.Outcome]:
    """Waits 4 s before each retry of a transient error, at most twice per op, with no cap
    on the run's total: one op's two retries stay under 10 s, a third anywhere breaks it."""
    outcomes = []
    for op in ops:
        with fd.step(op):
            for attempt in range(1, 4):
                try:
                    outcomes.append(fd.Outcome(op, "ok", step(op), attempts=attempt))
                    break
                except fd.TransientError:
                    if attempt == 3:
                        outcomes.append(fd.Outcome(op, "degraded", None, "transient", attempt))
                        break
                    clock.sleep(4.0)
                except fd.BoundaryError:
                    outcomes.append(fd.Outcome(op, "stopped", None, "error", attempt))
                    return outcomes
    return outcomes


def fixed_wait_entry(deck: fd.Deck, clock: fd.VirtualClock) -> list[fd.Outcome]:
    return Workshop(deck).run(POLICY, clock=clock, runner=fixed_wait)


def test_a_loop_that_breaks_only_under_three_faults_is_found_with_three() -> None:
    # Faults that land once are searched first: three retried timeouts are the least.
    result = redteam(GOLDEN, fixed_wait_entry, seed=0)
    assert plan_of(result) == aimed(
        ("timeout", "model", "chat", 1),
        ("timeout", "model", "chat", 2),
        ("timeout", "model", "chat", 4),
    )
    assert [v.invariant for v in result.violations] == ["bounded_waiting"]
    assert "waited 12s" in str(result.violation)


def test_with_two_faults_landing_once_that_loop_holds_but_not_a_timeout_on_every_call() -> None:
    result = redteam(GOLDEN, fixed_wait_entry, max_faults=2, budget=150, seed=0)
    # No plan of one or two single faults broke it; the search of bursts and onsets did.
    assert plan_of(result) == [fd.faults.timeout().on(kind="model", name="chat").to_json()]
    assert "waited 16s" in str(result.violation)


def test_the_same_seed_finds_the_same_plan() -> None:
    first = redteam(GOLDEN, fixed_wait_entry, seed=5)
    second = redteam(GOLDEN, fixed_wait_entry, seed=5)
    assert first.found
    assert plan_of(first) == plan_of(second)
    assert first.replays == second.replays


def coin_on_any_error(deck: fd.Deck, clock: fd.VirtualClock) -> list[fd.Outcome]:
    """Catches every boundary error and retries by an unseeded coin."""
    rng = random.Random()

    def loop(
        step: Callable[[Any], Any], ops: Iterable[Any], policy: fd.Policy, **_: Any
    ) -> list[fd.Outcome]:
        outcomes = []
        for op in ops:
            with fd.step(op):
                try:
                    outcomes.append(fd.Outcome(op, "ok", step(op)))
                except fd.BoundaryError:
                    if rng.random() < 0.5:
                        outcomes.append(fd.Outcome(op, "degraded", None, "error"))
                    else:
                        outcomes.append(fd.Outcome(op, "degraded", None, "error", 2))
        return outcomes

    return Workshop(deck).run(POLICY, clock=clock, runner=loop)


def test_outcomes_that_differ_between_two_replays_of_one_plan_break_determinism() -> None:
    result = redteam(GOLDEN, coin_on_any_error, budget=200, seed=0)
    assert result.found
    assert {v.invariant for v in result.violations} == {"replay_determinism"}


def test_a_command_is_searched_too(tmp_path: Any) -> None:
    # The workshop loop as a program: its deck from the environment, judged by its calls.
    program = tmp_path / "agent.py"
    program.write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(ROOT)!r})\n"
        "import faultdeck as fd\n"
        "from examples.workshop import broken\n"
        "from faultdeck.workshop import POLICY, Workshop\n"
        "with fd.Deck.from_env() as deck:\n"
        "    Workshop(deck).run(POLICY, clock=deck.clock, runner=broken.retry_on_quota)\n",
        "utf-8",
    )
    result = redteam(GOLDEN, command=[sys.executable, str(program)], budget=20, seed=0)
    assert plan_of(result) == aimed(("quota", "model", "chat", 1))
    assert result.violation is not None
    assert result.violation.invariant == "call_budget"
    assert result.pytest_snippet is None


def test_the_targets_are_the_clean_runs_calls_in_order() -> None:
    with fd.Deck(GOLDEN, mode="replay", clock=fd.VirtualClock()) as deck:
        Workshop(deck).run(POLICY, clock=fd.VirtualClock())
    targets = targets_of(deck.calls)
    assert [(t.kind, t.name, t.count) for t in targets] == [
        ("model", "chat", 2),
        ("tool", "read_file", 2),
        ("tool", "write_patch", 1),
    ]
    assert "bad_tool_call" in targets[0].kinds()
    assert "bad_tool_call" not in targets[1].kinds()
    assert "stream_cut" not in targets[0].kinds()  # nothing streamed


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"budget": 0}, "budget must be an integer >= 1"),
        ({"max_faults": 0}, "max_faults must be an integer >= 1"),
        ({"seed": "x"}, "seed must be an integer"),
        ({"command": ["true"]}, "either an entrypoint or a command"),
    ],
)
def test_bad_arguments_say_what(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        redteam(GOLDEN, f"{ENTRY}:good", **kwargs)


def test_the_plan_reported_is_at_the_earliest_call_that_still_breaks() -> None:
    """Shrinking can stop at a later call when an earlier one breaks the same invariant;
    every earlier call of each fault's target is tried after it."""
    budget = fd.Violation("call_budget", None, "2", "3 model calls at seq 1, 2, 3")
    waiting = fd.Violation("bounded_waiting", None, "10s", "waited 12s")
    # The 2nd and 4th calls break the call budget; the 3rd another invariant; the 1st none.
    verdicts = {1: (), 2: (budget,), 3: (waiting,), 4: (budget,)}
    seen: dict[bytes, Cell] = {}

    def breaks(plan: fd.FaultPlan) -> bool:
        found = verdicts[plan.to_json()["faults"][0]["on"]["nth"]]
        key = orjson.dumps(plan.to_json(), option=orjson.OPT_SORT_KEYS)
        seen[key] = Cell("redteam", None, "broke" if found else "held", found)
        return bool(found)

    late = fd.FaultPlan([fd.faults.timeout().on(kind="model", name="chat", nth=4)])
    breaks(late)
    earliest = _earliest(late, breaks, seen)
    assert list(earliest.to_json()["faults"]) == aimed(("timeout", "model", "chat", 2))
