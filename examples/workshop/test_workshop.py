"""The workshop loop, rehearsed offline on its golden cassette under each fault.

Every test replays ``cassettes/golden.jsonl`` (re-record it with
``python -m examples.workshop.record``) on a virtual clock, so the waits below are real
policy decisions that take no time.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import faultdeck as fd
from faultdeck import faults
from faultdeck.testing import assert_deterministic, assert_invariants, assert_violates
from faultdeck.workshop import POLICY, Workshop

from .broken import coin_flip_retry, drops_partial_work, retry_on_quota, unbounded_backoff

GOLDEN = Path(__file__).parent / "cassettes" / "golden.jsonl"
READ: dict[str, Any] = {"kind": "tool", "name": "read_file"}


class Run:
    """One rehearsal: the outcomes, the deck that served it and its clock."""

    def __init__(
        self, plan: list[fd.Fault] | None = None, runner: Callable[..., Any] | None = None
    ):
        self.clock = fd.VirtualClock()
        self.deck = fd.Deck(GOLDEN, mode="replay", faults=plan, clock=self.clock)
        with self.deck:
            workshop = Workshop(self.deck)
            self.outcomes: list[fd.Outcome] = (
                workshop.run(POLICY, clock=self.clock, runner=runner)
                if runner is not None
                else workshop.run(POLICY, clock=self.clock)
            )
        self.workshop = workshop

    def by_op(self) -> dict[str, fd.Outcome]:
        return {o.op: o for o in self.outcomes}

    def transport_calls(self, step: str) -> list[fd.CallRecord]:
        return [c for c in self.deck.calls if c.step == step and c.source != "miss"]

    def check(self) -> list[fd.Violation]:
        return fd.check(self.outcomes, policy=POLICY, deck=self.deck, clock=self.clock)


def test_the_golden_run_replays_clean() -> None:
    run = Run()
    assert [(o.op, o.status) for o in run.outcomes] == [
        ("plan", "ok"),
        ("read", "ok"),
        ("patch", "ok"),
    ]
    assert run.outcomes[2].value == {"path": "agent/loop.py", "applied": True, "lines": 2}
    assert run.workshop.patches == {}, "a side-effecting tool ran during replay"
    assert run.check() == []
    report = run.deck.report()
    assert (report.used, report.live, report.misses) == (5, 0, ())
    # The recorded degraded paths are left over: nothing went wrong in this run.
    assert [u.name for u in report.unused] == ["chat", "chat"]


def test_a_transient_timeout_is_retried_once_then_ok() -> None:
    run = Run([faults.timeout().on(**READ, nth=1)])
    read = run.by_op()["read"]
    assert (read.status, read.attempts, read.reason) == ("ok", 2, None)
    assert 0 < run.clock.waited <= POLICY.max_delay
    assert [c.source for c in run.transport_calls("read")] == ["fault", "replay", "replay"]
    assert_invariants(run.outcomes, policy=POLICY, deck=run.deck, clock=run.clock)


def test_a_quota_stop_keeps_the_completed_steps_and_says_retry_after() -> None:
    run = Run([faults.quota(retry_after=2).on(**READ).times(2)])
    assert [(o.op, o.status) for o in run.outcomes] == [("plan", "ok"), ("read", "stopped")]
    read = run.by_op()["read"]
    assert (read.reason, read.retry_after, read.attempts) == ("quota", "2", 2)
    assert run.outcomes[0].value == ["read", "patch"]
    assert run.clock.waited == 2.0
    assert_invariants(run.outcomes, policy=POLICY, deck=run.deck, clock=run.clock)


def test_a_bad_tool_call_is_repaired_once_then_degraded() -> None:
    bad = faults.bad_tool_call(how="wrong_type")
    run = Run([bad.on(kind="model", name="chat", nth=2), bad.on(kind="model", name="chat", nth=3)])
    patch = run.by_op()["patch"]
    assert (patch.status, patch.reason, patch.attempts) == ("degraded", "schema", 1)
    calls = run.transport_calls("patch")
    assert [(c.name, c.source, c.error) for c in calls] == [
        ("chat", "fault", "BadToolCall"),
        ("chat", "fault", "BadToolCall"),
    ]
    golden_patch_key = fd.load(GOLDEN).entries[3].key
    assert sum(1 for c in calls if c.key == golden_patch_key) == 1, "the bad call was retried"
    assert run.workshop.patches == {}
    assert_invariants(run.outcomes, policy=POLICY, deck=run.deck, clock=run.clock)


def test_a_bad_tool_call_repaired_by_the_one_repair_call() -> None:
    run = Run([faults.bad_tool_call().on(kind="model", name="chat", nth=2)])
    patch = run.by_op()["patch"]
    assert (patch.status, patch.reason) == ("ok", "repaired")
    assert patch.value == {"path": "agent/loop.py", "applied": True, "lines": 2}
    golden = fd.load(GOLDEN).entries
    # Left unused: the original patch request (the fault stood in for it) and the
    # recorded patch request without notes.
    assert [u.line for u in run.deck.report().unused] == [golden[3].line, golden[-1].line]
    assert_invariants(run.outcomes, policy=POLICY, deck=run.deck, clock=run.clock)


# -- the five rows of the policy table -------------------------------------------------


def test_row_quota_with_retry_after_retries_once_after_the_stated_delay() -> None:
    run = Run([faults.quota(retry_after=2).on(**READ, nth=1)])
    read = run.by_op()["read"]
    assert (read.status, read.attempts, read.retry_after) == ("ok", 2, "2")
    assert run.clock.sleeps == (2.0,)
    assert [o.status for o in run.outcomes] == ["ok", "ok", "ok"]
    assert_invariants(run.outcomes, policy=POLICY, deck=run.deck, clock=run.clock)


def test_row_quota_with_a_retry_after_too_long_stops_at_once() -> None:
    run = Run([faults.quota(retry_after=30).on(**READ, nth=1)])
    read = run.by_op()["read"]
    assert (read.status, read.reason, read.attempts, read.retry_after) == (
        "stopped",
        "quota",
        1,
        "30",
    )
    assert run.clock.waited == 0
    assert_invariants(run.outcomes, policy=POLICY, deck=run.deck, clock=run.clock)


def test_row_quota_without_header_stops_at_once_with_no_extra_call() -> None:
    run = Run([faults.quota().on(**READ, nth=1)])
    read = run.by_op()["read"]
    assert (read.status, read.reason, read.retry_after, read.attempts) == (
        "stopped",
        "quota",
        None,
        1,
    )
    assert len(run.transport_calls("read")) == 1
    assert run.clock.waited == 0
    assert_invariants(run.outcomes, policy=POLICY, deck=run.deck, clock=run.clock)


def test_row_non_retryable_quota_stops_at_once() -> None:
    run = Run([faults.quota(retry_after=1, code="insufficient_quota").on(**READ, nth=1)])
    read = run.by_op()["read"]
    assert (read.status, read.reason) == ("stopped", "quota_non_retryable")
    assert len(run.transport_calls("read")) == 1
    assert_invariants(run.outcomes, policy=POLICY, deck=run.deck, clock=run.clock)


def test_row_transient_backs_off_up_to_max_attempts_then_degrades() -> None:
    run = Run([faults.transient(status=503).on(**READ)])
    read = run.by_op()["read"]
    assert (read.status, read.reason, read.attempts) == ("degraded", "transient", 3)
    assert len(run.clock.sleeps) == 2
    assert all(0 < s <= POLICY.max_delay for s in run.clock.sleeps)
    assert run.clock.sleeps[1] > run.clock.sleeps[0] * 0.9  # exponential, jittered
    assert [o.op for o in run.outcomes] == ["plan", "read", "patch"], "the run goes on"
    assert_invariants(run.outcomes, policy=POLICY, deck=run.deck, clock=run.clock)


def test_row_schema_invalid_tool_call_gets_one_repair() -> None:
    run = Run([faults.bad_tool_call(how="unparseable").on(kind="model", name="chat", nth=2)])
    assert [c.name for c in run.transport_calls("patch")] == ["chat", "chat", "write_patch"]
    assert run.by_op()["patch"].reason == "repaired"


def test_row_slow_first_token_is_not_retried_and_halves_concurrency() -> None:
    run = Run([faults.slow_first_token(2500).on(kind="model", name="chat", nth=1)])
    plan = run.by_op()["plan"]
    assert (plan.status, plan.reason, plan.attempts) == ("ok", "slow_first_token", 1)
    assert plan.elapsed_ms == 2500
    assert plan.concurrency == POLICY.concurrency // 2
    assert run.by_op()["read"].concurrency == POLICY.concurrency // 2 + 1
    assert run.clock.waited == 0, "a slow call is not the loop waiting"
    assert run.clock.now() == 2.5
    assert_invariants(run.outcomes, policy=POLICY, deck=run.deck, clock=run.clock)


# -- each invariant breaks on a broken loop and holds on the good one --------------------


def test_call_budget_and_bounded_waiting_break_on_unbounded_backoff() -> None:
    plan = [faults.timeout().on(**READ)]
    good = Run(plan)
    assert good.check() == []
    bad = Run(plan, runner=unbounded_backoff)
    waiting = assert_violates(
        "bounded_waiting", bad.outcomes, policy=POLICY, deck=bad.deck, clock=bad.clock
    )
    assert "waited 2047s" in str(waiting[0])
    budget = assert_violates(
        "call_budget", bad.outcomes, policy=POLICY, deck=bad.deck, clock=bad.clock
    )
    assert budget[0].op == "read"
    assert budget[0].observed.startswith("12 tool calls at seq 2, 3, ")


def test_no_early_retry_breaks_on_a_loop_that_retries_quota_at_once() -> None:
    plan = [faults.quota(retry_after=2).on(**READ).times(2)]
    assert Run(plan).check() == []
    bad = Run(plan, runner=retry_on_quota)
    early = assert_violates(
        "no_early_retry", bad.outcomes, policy=POLICY, deck=bad.deck, clock=bad.clock
    )
    assert "retried at seq" in early[0].observed
    assert "after 0s" in early[0].observed


def test_no_early_retry_breaks_when_a_non_retryable_quota_is_retried() -> None:
    plan = [faults.quota(code="insufficient_quota").on(**READ, nth=1)]
    assert Run(plan).check() == []
    bad = Run(plan, runner=retry_on_quota)
    found = assert_violates("no_early_retry", bad.outcomes, policy=POLICY, deck=bad.deck)
    assert "insufficient_quota" in found[0].bound


def test_call_budget_breaks_when_quota_without_header_is_retried() -> None:
    plan = [faults.quota().on(**READ).times(3)]
    bad = Run(plan, runner=retry_on_quota)
    found = assert_violates("call_budget", bad.outcomes, policy=POLICY, deck=bad.deck)
    assert found[0].op == "read"


def test_partial_work_breaks_on_a_loop_that_drops_finished_steps() -> None:
    plan = [faults.quota().on(**READ, nth=1)]
    assert Run(plan).check() == []
    bad = Run(plan, runner=drops_partial_work)
    found = assert_violates("partial_work", bad.outcomes, policy=POLICY, deck=bad.deck)
    assert [v.op for v in found] == ["plan"]


def test_replay_determinism_holds_for_the_policy_loop_and_breaks_on_a_coin() -> None:
    plan = [faults.timeout().on(**READ).random(p=0.5, seed=3), faults.quota(retry_after=1).every(4)]
    outcomes = assert_deterministic(lambda: Run(plan).outcomes, n=20)
    assert outcomes
    runs = [
        Run([faults.timeout().on(**READ, nth=1)], runner=coin_flip_retry).outcomes
        for _ in range(40)
    ]
    found = fd.check(runs[0], policy=POLICY, replays=runs[1:])
    assert any(v.invariant == "replay_determinism" for v in found)
    with pytest.raises(AssertionError, match="replay_determinism"):
        assert_deterministic(
            lambda: Run([faults.timeout().on(**READ, nth=1)], runner=coin_flip_retry).outcomes,
            n=40,
        )


def test_a_crash_leaves_the_cassette_resumable(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    clock = fd.VirtualClock()
    deck = fd.Deck(
        path,
        mode="record",
        allow_side_effects=True,
        clock=clock,
        faults=[faults.crash().on(kind="model", name="chat", nth=2)],
    )
    with pytest.raises(fd.ProcessKilled), deck:
        Workshop(deck).run(POLICY, clock=clock)
    recording = fd.load(path)
    assert recording.interrupted
    assert [e.name for e in recording.entries] == ["chat", "read_file", "read_file"]
    resumed = fd.Deck(path, mode="resume", allow_side_effects=True, clock=clock)
    with resumed:
        outcomes = Workshop(resumed).run(POLICY, clock=clock)
    assert [o.status for o in outcomes] == ["ok", "ok", "ok"]
    report = resumed.report()
    assert (report.used, report.live) == (3, 2)
    assert not fd.load(path).interrupted


def test_a_loop_that_reads_its_errors_back_is_judged_on_its_branch(tmp_path: Path) -> None:
    """The error goes into the patch request, which the golden run never sent: off the
    recorded path until the branch is recorded, then judged offline on it."""
    golden = tmp_path / "golden.jsonl"
    golden.write_bytes(GOLDEN.read_bytes())
    entry = "examples.workshop.rehearsal:reads_errors_back"
    plans = {"read fails": fd.FaultPlan([faults.tool_error().on(**READ, nth=1)])}

    first = fd.rehearse(entry, golden, plans)
    assert [c.status for c in first.cells] == ["held", "miss"]
    recorded = fd.rehearse(entry, golden, plans, branches="record")
    assert [c.status for c in recorded.cells] == ["held", "held"]
    branch = fd.load(tmp_path / "golden.branches" / "read-fails.jsonl")
    asked = branch.entries[-2].args["messages"][-1]["content"]
    assert "the read failed (tool_error)" in asked  # where the error led, recorded once
    again = fd.rehearse(entry, golden, plans)  # on the branch, offline
    assert again.cells == recorded.cells
