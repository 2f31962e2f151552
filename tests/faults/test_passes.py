"""``FaultRun.passes``: a call it lets pass is one ``pick`` would give no fault and count
nothing at, so skipping ``pick`` there changes no later choice.

Random plans (selectors by seq, kind, name glob, nth, every, times) over random calls: one
run picks at every call, another picks only where ``passes`` is false. Both must choose
the same faults at the same calls, and every call let pass must get none in the first.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from faultdeck import faults
from faultdeck.faults import CallInfo, FaultPlan, FaultRun

KINDS = ("model", "tool", "http")
NAMES = ("chat", "search", "search_docs", "GET /v1/models")


@st.composite
def fault(draw: st.DrawFn) -> faults.Fault:
    made = draw(st.sampled_from((faults.timeout, faults.reset, faults.tool_error)))()
    if draw(st.booleans()):
        made = made.at(seq=draw(st.integers(1, 12)))
    kind = draw(st.none() | st.sampled_from(KINDS))
    name = draw(st.none() | st.sampled_from(("search*", "chat", "*", "GET *")))
    nth = draw(st.none() | st.integers(1, 4))
    made = made.on(kind=kind, name=name, nth=nth)
    if draw(st.booleans()):
        made = made.every(draw(st.integers(1, 3)))
    if draw(st.booleans()):
        made = made.times(draw(st.integers(1, 2)))
    return made


calls = st.lists(st.tuples(st.sampled_from(KINDS), st.sampled_from(NAMES)), max_size=12)


@settings(max_examples=300, deadline=None)
@given(st.lists(fault(), min_size=1, max_size=4), calls)
def test_a_call_let_pass_gets_no_fault_and_changes_no_later_choice(
    plan: list[faults.Fault], made: list[tuple[str, str]]
) -> None:
    every, skipping = FaultRun(FaultPlan(plan)), FaultRun(FaultPlan(plan))
    for seq, (kind, name) in enumerate(made, start=1):
        info = CallInfo(seq, kind, name, f"{kind}:k{seq}")
        chosen = every.pick(info)
        if skipping.passes(seq, kind, name):
            assert chosen is None
        else:
            assert skipping.pick(info) == chosen
    assert skipping.injected == every.injected


def test_a_used_up_fault_lets_every_call_pass() -> None:
    run = FaultRun(FaultPlan([faults.timeout().on(kind="tool").times(1)]))
    assert not run.passes(1, "tool", "search")
    assert run.pick(CallInfo(1, "tool", "search", "tool:a")) is not None
    assert run.passes(2, "tool", "search")
    assert run.passes(3, "model", "chat")
