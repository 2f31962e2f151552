"""When faults happen: always, random, burst and after, capped by times, counted on a long
run of matching calls; in plan files and in redteam's search space."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import find, settings

import faultdeck as fd
from faultdeck import faults
from faultdeck._rehearse.redteam_space import Target, plans_of, python_fault
from faultdeck.faults import CallInfo

RUN = 200
"""The matching calls of the long run."""


def hit(fault: fd.Fault, calls: int = RUN) -> list[int]:
    """The seqs of a run of ``calls`` tool calls named ``search`` that ``fault`` lands on
    (every other call, a ``read`` between each, never matches)."""
    run = fd.FaultPlan([fault]).start()
    landed = []
    for n in range(1, calls + 1):
        if run.pick(CallInfo(2 * n - 1, "tool", "read", "k")) is not None:
            raise AssertionError("a call that does not match was hit")
        if run.pick(CallInfo(2 * n, "tool", "search", "k")) is not None:
            landed.append(n)
    return landed


SEARCH = faults.timeout().on(kind="tool", name="search")


@pytest.mark.parametrize(
    ("fault", "landed"),
    [
        (SEARCH.always(), list(range(1, RUN + 1))),
        (SEARCH.burst(3), [1, 2, 3]),
        (SEARCH.after(150), list(range(151, RUN + 1))),
        (SEARCH.after(10).burst(4), [11, 12, 13, 14]),
        (SEARCH.after(10).times(2), [11, 12]),
        (SEARCH.after(10).every(20), list(range(20, RUN + 1, 20))),
        (SEARCH.burst(5).times(2), [1, 2]),
        (SEARCH.on(nth=3).always(), list(range(1, RUN + 1))),  # always drops the nth
    ],
)
def test_each_strategy_lands_where_it_says(fault: fd.Fault, landed: list[int]) -> None:
    assert hit(fault) == landed


def test_random_lands_about_p_of_the_calls_and_the_same_each_run() -> None:
    fault = SEARCH.random(p=0.25, seed=3)
    first = hit(fault)
    assert first == hit(fault)  # seeded: the same calls in every run and process
    assert 30 <= len(first) <= 70  # 50 expected of 200
    # After the onset, the draw decides the rest; a burst caps it to a window.
    assert all(n > 100 for n in hit(fault.after(100)))
    assert set(hit(fault.after(100).burst(40))) == {n for n in first if 100 < n <= 140}


def test_a_compound_plan_combines_strategies_first_match_wins() -> None:
    plan = fd.FaultPlan([SEARCH.after(2).burst(2), faults.quota().on(name="search").always()])
    run = plan.start()
    kinds = [run.pick(CallInfo(n, "tool", "search", "k")) for n in range(1, 7)]
    assert [f.kind if f else None for f in kinds] == [
        "quota", "quota", "timeout", "timeout", "quota", "quota",
    ]  # fmt: skip


def test_plan_files_take_every_strategy_and_give_it_back() -> None:
    data = {
        "seed": 4,
        "faults": [
            {"fault": "timeout", "on": {"kind": "tool", "after": 3}, "burst": 2},
            {"fault": "quota", "always": True, "times": 5},
            {"fault": "latency", "ms": 10, "on": {"after": 1}, "random": {"p": 0.5}},
            {"fault": "stream_cut", "after": 2, "on": {"after": 4}},
        ],
    }
    plan = fd.FaultPlan.from_dict(data)
    assert plan.faults[0] == faults.timeout().on(kind="tool").after(3).burst(2)
    assert plan.faults[1] == faults.quota().always().times(5)
    assert plan.faults[3] == faults.stream_cut(after=2).after(4)  # its events, then calls
    assert fd.FaultPlan.from_dict(plan.to_json()) == plan


@pytest.mark.parametrize(
    ("entry", "says"),
    [
        (
            {"always": True, "every": 2},
            "faults[0]: always lands on every matching call, every on fewer",
        ),
        ({"always": True, "on": {"nth": 2}}, "on.nth on fewer; keep one of them"),
        ({"always": "yes"}, "faults[0].always: expected true (every matching call), got 'yes'"),
        ({"burst": 0}, "faults[0].burst: expected an integer >= 1, got 0"),
        ({"on": {"after": -1}}, "faults[0].on.after: expected an integer >= 0, got -1"),
    ],
)
def test_a_bad_strategy_is_one_line_naming_the_field(entry: dict[str, object], says: str) -> None:
    with pytest.raises(fd.ConfigError) as raised:
        fd.FaultPlan.from_dict({"faults": [{"fault": "timeout", **entry}]}, source="plan.json")
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith("plan.json: ")
    assert says in message


def test_redteams_search_draws_bursts_and_onsets_and_writes_them_back() -> None:
    targets = (Target("tool", "search", streamed=False, count=4),)
    strategy = plans_of(targets, fd.Policy(), max_faults=1)
    quiet = settings(database=None, max_examples=500)

    def shows(condition: Callable[[fd.FaultPlan], bool]) -> fd.FaultPlan:
        found: fd.FaultPlan = find(strategy, condition, settings=quiet)
        return found

    burst = shows(lambda plan: plan.faults[0].selector.burst is not None)
    always = shows(
        lambda plan: (
            plan.faults[0].selector.after is not None and plan.faults[0].selector.burst is None
        )
    )
    for plan in (burst, always):
        fault = plan.faults[0]
        # The pytest test redteam prints makes the same fault.
        assert eval(python_fault(fault), {"faults": faults}) == fault


@pytest.mark.parametrize(
    ("fault", "says"),
    [
        (SEARCH.on(nth=2), "call 2"),
        (SEARCH.after(2).burst(2), "calls 3 to 4"),
        (SEARCH.burst(1), "call 1"),
        (SEARCH.after(2), "every call from 3"),
        (SEARCH.always(), "every call"),
        (SEARCH.every(5), "every 5th call"),
        (SEARCH.random(p=0.1).after(3), "every call from 4, drawn at p=0.1"),
    ],
)
def test_where_a_fault_lands_reads_as_calls(fault: fd.Fault, says: str) -> None:
    assert fault.selector.landing() == says
