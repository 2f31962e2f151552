"""Each invariant on hand-made call logs: what breaks it, and how the violation reads."""

from __future__ import annotations

import faultdeck as fd
from faultdeck import CallRecord

POLICY = fd.Policy(max_attempts=3, max_delay=2.0, max_total_wait=5.0, max_retry_after=4.0)


def call(seq: int, key: str = "model:aa", step: str = "ask", **kw: object) -> CallRecord:
    fields: dict[str, object] = {"source": "replay", "kind": "model", "name": "chat"}
    fields.update(kw)
    return CallRecord(seq=seq, key=key, step=step, **fields)  # type: ignore[arg-type]


def ok(op: str = "ask", value: object = "v") -> fd.Outcome:
    return fd.Outcome(op, "ok", value)


def names(violations: list[fd.Violation]) -> list[str]:
    return [v.invariant for v in violations]


def test_call_budget_counts_attempts_per_op() -> None:
    calls = [call(1, error="TransientError"), call(2, error="TransientError"), call(3)]
    assert fd.check([ok()], policy=POLICY, calls=calls) == []
    calls.append(call(4))
    found = fd.check([ok()], policy=POLICY, calls=calls)
    assert names(found) == ["call_budget"]
    assert str(found[0]) == (
        "call_budget: op 'ask': 4 model calls at seq 1, 2, 3, 4 "
        "(allowed: 3 (1 distinct call x (1 attempt + 2 retries after transient errors)))"
    )


def test_call_budget_grants_nothing_after_quota_without_header() -> None:
    calls = [call(1, error="QuotaExhausted"), call(2)]
    assert names(fd.check([ok()], policy=POLICY, calls=calls)) == ["call_budget"]
    waited = [call(1, error="QuotaExhausted", retry_after=1.0), call(2, started=1.0)]
    assert fd.check([ok()], policy=POLICY, calls=waited) == []


def test_no_early_retry_measures_the_gap_on_the_clock() -> None:
    early = [call(1, error="QuotaExhausted", retry_after=2.0, started=10.0), call(2, started=11.5)]
    found = fd.check([ok()], policy=POLICY, calls=early)
    assert names(found) == ["no_early_retry"]
    assert "seq 1 retried at seq 2 after 1.5s" in str(found[0])
    on_time = [
        call(1, error="QuotaExhausted", retry_after=2.0, started=10.0),
        call(2, started=12.0),
    ]
    assert fd.check([ok()], policy=POLICY, calls=on_time) == []


def test_no_early_retry_forbids_retrying_insufficient_quota() -> None:
    calls = [
        call(1, error="QuotaExhausted", code="insufficient_quota", retry_after=1.0),
        call(2, started=9.0),
    ]
    found = fd.check([fd.Outcome("ask", "stopped", reason="quota")], policy=POLICY, calls=calls)
    assert "no_early_retry" in names(found)


def test_partial_work_needs_every_completed_step_returned() -> None:
    calls = [call(1, step="plan", key="model:01"), call(2, step="read", error="QuotaExhausted")]
    stop = fd.Outcome("read", "stopped", reason="quota")
    assert fd.check([ok("plan"), stop], policy=POLICY, calls=calls) == []
    found = fd.check([stop], policy=POLICY, calls=calls)
    assert names(found) == ["partial_work"]
    assert found[0].op == "plan"


def test_bounded_waiting_reads_the_clock() -> None:
    clock = fd.VirtualClock()
    clock.sleep(3.0)
    assert fd.check([ok()], policy=POLICY, clock=clock) == []
    clock.sleep(2.5)
    found = fd.check([ok()], policy=POLICY, clock=clock)
    assert names(found) == ["bounded_waiting"]
    assert "waited 5.5s" in str(found[0])
    long_wait = fd.VirtualClock()
    long_wait.sleep(4.5)
    assert "one wait of 4.5s" in str(fd.check([ok()], policy=POLICY, clock=long_wait)[0])


def test_committed_streams_forbid_a_retry_and_keep_the_partial_output() -> None:
    cut = [call(1, error="TransientError", partial=True), call(2)]
    found = fd.check([ok()], policy=POLICY, calls=cut)
    assert names(found) == ["committed_streams"]
    assert "cut after its first event, retried at seq 2" in str(found[0])
    dropped = [call(1, error="TransientError", partial=True)]
    kept = fd.Outcome("ask", "degraded", "partial text", "transient")
    assert fd.check([kept], policy=POLICY, calls=dropped) == []
    lost = fd.Outcome("ask", "degraded", None, "transient")
    assert "the outcome carries no value" in str(fd.check([lost], policy=POLICY, calls=dropped)[0])


def test_replay_determinism_names_the_first_differing_op() -> None:
    a = [ok("plan"), ok("read")]
    b = [ok("plan"), fd.Outcome("read", "degraded", None, "transient", attempts=3)]
    found = fd.check(a, policy=POLICY, replays=[a, b])
    assert names(found) == ["replay_determinism"]
    assert found[0].op == "read"
    assert "run 3 of 3 differs from run 1: degraded (transient) after 3 attempts" in str(found[0])
    timing = [fd.Outcome("plan", "ok", "v", elapsed_ms=5.0), ok("read")]
    assert fd.check(a, policy=POLICY, replays=[timing]) == []


def test_every_invariant_has_a_name() -> None:
    assert fd.types.INVARIANTS == (
        "call_budget",
        "replay_determinism",
        "partial_work",
        "bounded_waiting",
        "no_early_retry",
        "committed_streams",
        "injection_contained",
    )
