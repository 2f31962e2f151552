"""Faults: factories and their errors, selectors, plan order, plan files, determinism."""

from __future__ import annotations

import dataclasses
import fnmatch
import hashlib
import json
import math
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from faultdeck import faults
from faultdeck._base.errors import (
    BadToolCall,
    BoundaryError,
    ConfigError,
    ProcessKilled,
    QuotaExhausted,
    TransientError,
)
from faultdeck.faults import CallInfo, Fault, FaultPlan, Selector
from tests.support.children import child_env

# A scripted run: seq is the position, 1-based.
SCRIPT = [
    ("model", "chat"),  # 1
    ("tool", "read_file"),  # 2
    ("tool", "write_file"),  # 3
    ("tool", "read_dir"),  # 4
    ("model", "chat"),  # 5
    ("env", "HOME"),  # 6
    ("tool", "read_file"),  # 7
    ("http", "GET /v1/items"),  # 8
    ("tool", "Read_file"),  # 9
    ("model", "chat"),  # 10
    ("tool", "read_file"),  # 11
    ("tool", "write_file"),  # 12
]


def calls(script: list[tuple[str, str]] = SCRIPT) -> list[CallInfo]:
    return [
        CallInfo(seq=i, kind=kind, name=name, key=f"{kind}:{i:016x}")
        for i, (kind, name) in enumerate(script, start=1)
    ]


def run_picks(plan: FaultPlan, script: list[CallInfo] | None = None) -> list[tuple[int, str]]:
    """Pick for each call; return (seq, fault label) for each injection."""
    run = plan.start()
    out = []
    for call in calls() if script is None else script:
        fault = run.pick(call)
        if fault is not None:
            out.append((call.seq, fault.describe()))
    assert [(s, f.describe()) for s, f in run.injected] == out
    return out


def seqs(plan: FaultPlan, script: list[CallInfo] | None = None) -> list[int]:
    return [seq for seq, _ in run_picks(plan, script)]


def draw(seed: int, seq: int) -> float:
    """The documented draw, written out independently of the module."""
    return int.from_bytes(hashlib.sha256(f"{seed}:{seq}".encode()).digest()[:8], "big") / 2**64


# --- factories and errors ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fault", "kind", "params", "label", "raises", "delay"),
    [
        (
            faults.quota(2),
            "quota",
            (("code", "rate_limit_exceeded"), ("retry_after", 2.0)),
            "quota(retry_after=2)",
            True,
            0.0,
        ),
        (faults.quota(), "quota", (("code", "rate_limit_exceeded"),), "quota", True, 0.0),
        (
            faults.quota(code="insufficient_quota"),
            "quota",
            (("code", "insufficient_quota"),),
            "quota(insufficient_quota)",
            True,
            0.0,
        ),
        (faults.timeout(), "timeout", (), "timeout", True, 0.0),
        (faults.transient(), "transient", (("status", 503),), "transient(503)", True, 0.0),
        (faults.transient(529), "transient", (("status", 529),), "transient(529)", True, 0.0),
        (
            faults.bad_tool_call(),
            "bad_tool_call",
            (("how", "missing_required"),),
            "bad_tool_call(missing_required)",
            True,
            0.0,
        ),
        (
            faults.slow_first_token(2500),
            "slow_first_token",
            (("ms", 2500.0),),
            "slow_first_token(2500ms)",
            False,
            2500.0,
        ),
        (faults.latency(12.5), "latency", (("ms", 12.5),), "latency(12.5ms)", False, 12.5),
        (faults.crash(), "crash", (), "crash", True, 0.0),
        (faults.reset(), "reset", (), "reset", True, 0.0),
        (
            faults.stream_cut(),
            "stream_cut",
            (("after", 1), ("how", "cut")),
            "stream_cut(after=1)",
            True,
            0.0,
        ),
        (faults.malformed_stream(), "malformed_stream", (), "malformed_stream", True, 0.0),
    ],
)
def test_factories_build_faults_with_no_selector(
    fault: Fault,
    kind: str,
    params: tuple[tuple[str, Any], ...],
    label: str,
    raises: bool,
    delay: float,
) -> None:
    assert fault.kind == kind
    assert fault.params == params
    assert fault.selector == Selector()
    assert fault.describe() == label
    assert fault.raises is raises
    assert fault.delay_ms == delay
    assert kind in faults.FAULT_KINDS


def test_quota_error_carries_429_retry_after_and_code() -> None:
    err = faults.quota(retry_after=2).error()
    assert type(err) is QuotaExhausted
    assert (err.status, err.retry_after, err.code) == (429, 2.0, "rate_limit_exceeded")
    assert str(err) == "injected quota fault: rate_limit_exceeded, retry after 2s"

    bare = faults.quota().error()
    assert isinstance(bare, QuotaExhausted)
    assert (bare.status, bare.retry_after) == (429, None)
    assert str(bare) == "injected quota fault: rate_limit_exceeded, no Retry-After"

    hard = faults.quota(code="insufficient_quota").error()
    assert isinstance(hard, QuotaExhausted)
    assert hard.code == "insufficient_quota"
    assert "insufficient_quota" in str(hard)


@pytest.mark.parametrize(
    ("fault", "status", "code"),
    [
        (faults.timeout(), None, "timeout"),
        (faults.transient(), 503, "server_error"),
        (faults.transient(500), 500, "server_error"),
        (faults.transient(529), 529, "overloaded"),
        (faults.transient(408), 408, "server_error"),
        (faults.reset(), None, "connection_reset"),
        (faults.stream_cut(after=3), None, "stream_cut"),
        (faults.malformed_stream(), None, "malformed_stream"),
    ],
)
def test_transient_kinds_raise_transient_error(fault: Fault, status: int | None, code: str) -> None:
    err = fault.error()
    assert type(err) is TransientError
    assert isinstance(err, BoundaryError)
    assert (err.status, err.code, err.retry_after) == (status, code, None)
    assert str(err).startswith("injected ")


@pytest.mark.parametrize("how", faults.BAD_TOOL_CALL_HOWS)
def test_bad_tool_call_error_names_how(how: str) -> None:
    err = faults.bad_tool_call(how).error()
    assert type(err) is BadToolCall
    assert err.code == how
    assert how in str(err)


def test_crash_is_not_an_exception() -> None:
    err = faults.crash().error()
    assert type(err) is ProcessKilled
    assert not isinstance(err, Exception)
    assert isinstance(err, BaseException)


@pytest.mark.parametrize("fault", [faults.latency(5), faults.slow_first_token(5)])
def test_delays_have_no_error(fault: Fault) -> None:
    with pytest.raises(ValueError, match="only delays"):
        fault.error()


def test_stream_cut_after_is_kept() -> None:
    assert faults.stream_cut(after=4).param("after") == 4
    assert "after 4 event" in str(faults.stream_cut(after=4).error())
    assert faults.stream_cut(0).param("after") == 0


def test_param_and_defaults() -> None:
    assert faults.transient().param("status") == 503
    assert faults.quota().param("retry_after") is None
    assert faults.quota().param("retry_after", 9) == 9
    assert faults.timeout().param("nope", "dflt") == "dflt"
    # Direct construction fills in the same defaults, so the two compare equal.
    assert Fault("transient") == faults.transient(503)
    assert Fault("quota", (("retry_after", 2),)) == faults.quota(2.0)


@pytest.mark.parametrize(
    ("make", "needle"),
    [
        (lambda: faults.transient(200), "transient: status: expected an HTTP status of 408, 409"),
        (lambda: faults.transient(404), "500-599, got 404"),
        (lambda: faults.transient(600), "got 600"),
        (lambda: faults.transient(True), "got True"),
        (lambda: faults.latency(-1), "latency: ms: expected a number >= 0, got -1"),
        (lambda: faults.latency(math.nan), "latency: ms: expected a finite number >= 0"),
        (lambda: faults.latency(math.inf), "latency: ms: expected a finite number >= 0"),
        (lambda: faults.slow_first_token("5"), "slow_first_token: ms: expected a number >= 0"),  # type: ignore[arg-type]
        (lambda: faults.quota(-1), "quota: retry_after: expected a number >= 0, got -1"),
        (lambda: faults.quota(code=""), "quota: code: expected a non-empty string"),
        (
            lambda: faults.bad_tool_call("nope"),
            "how: expected one of: missing_required, wrong_type",
        ),
        (lambda: faults.stream_cut(-1), "stream_cut: after: expected an integer >= 0"),
        (lambda: faults.stream_cut(1.5), "stream_cut: after: expected an integer >= 0"),  # type: ignore[arg-type]
        (lambda: Fault("qouta"), "unknown fault 'qouta'; known: quota, timeout"),
        (lambda: Fault("latency"), "latency: ms: missing; expected a number >= 0"),
        (lambda: Fault("timeout", (("ms", 1),)), "timeout: unknown parameter 'ms'; known: none"),
        (lambda: Fault("quota", (("code", "a"), ("code", "b"))), "'code' given twice"),
        (lambda: faults.timeout().at(seq=0), "selector seq: expected an integer >= 1, got 0"),
        (lambda: faults.timeout().on(kind="tools"), "selector kind: expected one of: model"),
        (lambda: faults.timeout().on(nth=0), "selector nth: expected an integer >= 1"),
        (lambda: faults.timeout().every(0), "selector every: expected an integer >= 1"),
        (lambda: faults.timeout().random(p=1.5), "selector p: expected a probability"),
        (lambda: faults.timeout().times(-1), "selector times: expected an integer >= 0"),
        (lambda: Selector(seed=3), "selector seed: only means something with p"),
    ],
)
def test_bad_arguments_are_config_errors(make: Any, needle: str) -> None:
    with pytest.raises(ConfigError) as info:
        make()
    assert needle in str(info.value)


@pytest.mark.parametrize("status", [408, 409, 425, 429, 500, 502, 529, 599])
def test_transient_allows_retryable_statuses(status: int) -> None:
    assert faults.transient(status).error().status == status  # type: ignore[attr-defined]


def test_chaining_returns_new_faults_and_leaves_the_original() -> None:
    base = faults.timeout()
    narrowed = base.on(kind="tool").on(name="read_*").every(2).times(3)
    assert base.selector == Selector()
    assert narrowed.selector == Selector(kind="tool", name="read_*", every=2, times=3)
    assert narrowed.random(p=0.5, seed=4).selector.p == 0.5
    assert narrowed.at(seq=7).selector.seq == 7
    with pytest.raises(dataclasses.FrozenInstanceError):
        base.kind = "quota"  # type: ignore[misc]


def test_fault_to_json_uses_plan_file_syntax() -> None:
    assert faults.quota(2).at(seq=3).to_json() == {
        "fault": "quota",
        "code": "rate_limit_exceeded",
        "retry_after": 2.0,
        "at": 3,
    }
    fault = faults.latency(300).on(kind="tool", name="read_*", nth=2).every(5).times(2)
    assert fault.random(p=0.1, seed=7).to_json() == {
        "fault": "latency",
        "ms": 300.0,
        "on": {"kind": "tool", "name": "read_*", "nth": 2},
        "every": 5,
        "random": {"p": 0.1, "seed": 7},
        "times": 2,
    }


def test_public_module_exports() -> None:
    assert faults.__all__ == sorted(faults.__all__)
    for name in faults.__all__:
        assert getattr(faults, name) is not None, name
        if callable(getattr(faults, name)):
            assert getattr(faults, name).__doc__, name


# --- selectors -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fault", "expected"),
    [
        (faults.timeout(), list(range(1, 13))),
        (faults.timeout().at(seq=3), [3]),
        (faults.timeout().at(seq=99), []),
        (faults.timeout().on(kind="tool"), [2, 3, 4, 7, 9, 11, 12]),
        (faults.timeout().on(kind="env"), [6]),
        (faults.timeout().on(name="read_*"), [2, 4, 7, 11]),  # case-sensitive: not 9
        (faults.timeout().on(name="READ_*"), []),
        (faults.timeout().on(name="*_file"), [2, 3, 7, 9, 11, 12]),
        (faults.timeout().on(name="chat"), [1, 5, 10]),
        (faults.timeout().on(nth=3), [3]),
        (faults.timeout().on(kind="tool", name="read_*", nth=2), [4]),
        (faults.timeout().on(name="read_file", nth=3), [11]),
        (faults.timeout().on(kind="model", nth=4), []),
        (faults.timeout().every(3), [3, 6, 9, 12]),
        (faults.timeout().on(kind="tool").every(2), [3, 7, 11]),
        (faults.timeout().times(2), [1, 2]),
        (faults.timeout().times(0), []),
        (faults.timeout().on(kind="tool").times(2), [2, 3]),
        (faults.timeout().on(kind="tool").every(2).times(1), [3]),
        (faults.timeout().at(seq=2).on(kind="model"), []),  # AND: seq 2 is a tool call
        (faults.timeout().at(seq=2).on(kind="tool", name="read_*"), [2]),
        (faults.timeout().on(kind="tool").every(2).on(nth=2), [3]),
        (faults.timeout().random(p=0.0), []),
        (faults.timeout().random(p=1.0), list(range(1, 13))),
    ],
)
def test_selectors(fault: Fault, expected: list[int]) -> None:
    assert seqs(FaultPlan([fault])) == expected


@pytest.mark.parametrize("seed", [0, 1, 7, 12345, -3])
def test_random_selector_follows_the_seeded_draw(seed: int) -> None:
    script = calls(SCRIPT * 20)
    expected = [c.seq for c in script if draw(seed, c.seq) < 0.3]
    assert 0 < len(expected) < len(script)
    # The selector's own seed ...
    assert seqs(FaultPlan([faults.timeout().random(p=0.3, seed=seed)], seed=999), script) == (
        expected
    )
    # ... or the plan's seed when the selector has none.
    assert seqs(FaultPlan([faults.timeout().random(p=0.3)], seed=seed), script) == expected


def test_random_is_keyed_by_seq_not_by_matching_count() -> None:
    script = calls(SCRIPT * 10)
    expected = [c.seq for c in script if c.kind == "tool" and draw(5, c.seq) < 0.5]
    assert seqs(FaultPlan([faults.timeout().on(kind="tool").random(p=0.5)], seed=5), script) == (
        expected
    )


def test_random_combined_with_every_and_times() -> None:
    script = calls(SCRIPT * 10)
    every_second = [c.seq for c in script if c.seq % 2 == 0]
    expected = [s for s in every_second if draw(3, s) < 0.5][:4]
    plan = FaultPlan([faults.timeout().every(2).random(p=0.5, seed=3).times(4)])
    assert seqs(plan, script) == expected


# --- plan order and counters ----------------------------------------------------------------


def test_first_fault_in_plan_order_wins() -> None:
    plan = FaultPlan([faults.timeout().at(seq=2), faults.quota(1).on(kind="tool")])
    quota = "quota(retry_after=1)"
    assert run_picks(plan)[:3] == [(2, "timeout"), (3, quota), (4, quota)]


def test_losing_matches_still_advance_counters() -> None:
    # Tool calls are seqs 2, 3, 4, 7, 9, 11, 12. At seq 3 the quota's counter reaches 2 and
    # it accepts, but the timeout is earlier in the plan and wins; the quota's next turn is
    # its 4th tool call (seq 7), not seq 4.
    plan = FaultPlan([faults.timeout().at(seq=3), faults.quota().on(kind="tool").every(2)])
    assert run_picks(plan) == [(3, "timeout"), (7, "quota"), (11, "quota")]


def test_a_lost_nth_is_gone() -> None:
    plan = FaultPlan([faults.timeout().on(kind="tool"), faults.quota().on(kind="tool", nth=2)])
    assert run_picks(plan) == [(s, "timeout") for s in [2, 3, 4, 7, 9, 11, 12]]


def test_losing_does_not_use_up_times() -> None:
    plan = FaultPlan([faults.timeout().at(seq=1), faults.quota().times(1)])
    assert run_picks(plan) == [(1, "timeout"), (2, "quota")]


def test_a_used_up_fault_stops_matching_and_counting() -> None:
    # Once the timeout's single injection is spent it no longer matches, so the next fault
    # in plan order gets the calls.
    plan = FaultPlan([faults.timeout().times(1), faults.quota().every(2)])
    assert run_picks(plan)[:4] == [(1, "timeout"), (2, "quota"), (4, "quota"), (6, "quota")]
    # A used-up fault's counter stops: "every 2nd matching call" counts only calls it matched.
    plan = FaultPlan([faults.timeout().every(2).times(1), faults.quota().on(kind="model")])
    assert run_picks(plan) == [(1, "quota"), (2, "timeout"), (5, "quota"), (10, "quota")]


def test_sequence_plan_gives_item_i_to_seq_i_plus_1() -> None:
    plan = FaultPlan.sequence([faults.timeout(), None, faults.quota(2), None])
    assert run_picks(plan) == [(1, "timeout"), (3, "quota(retry_after=2)")]
    assert len(plan) == 2
    assert bool(plan)
    assert plan.to_json() == {
        "seed": 0,
        "sequence": [
            {"fault": "timeout"},
            None,
            {"fault": "quota", "code": "rate_limit_exceeded", "retry_after": 2.0},
            None,
        ],
    }
    assert FaultPlan.from_dict(plan.to_json()) == plan


def test_sequence_items_take_no_selector() -> None:
    with pytest.raises(ConfigError, match=r"sequence\[1\]: timeout has a selector"):
        FaultPlan.sequence([None, faults.timeout().times(1)])
    with pytest.raises(ConfigError, match=r"sequence\[0\]: expected a Fault or None"):
        FaultPlan.sequence(["timeout"])  # type: ignore[list-item]
    with pytest.raises(ConfigError, match=r"faults\[1\]: expected a Fault"):
        FaultPlan([faults.timeout(), "quota"])  # type: ignore[list-item]


def test_empty_plan() -> None:
    plan = FaultPlan()
    assert not plan
    assert len(plan) == 0
    assert plan.seed == 0
    assert seqs(plan) == []


def test_start_gives_independent_runs() -> None:
    plan = FaultPlan(
        [
            faults.timeout().on(kind="tool").every(2).times(2),
            faults.quota().random(p=0.4),
            faults.latency(5).on(name="chat", nth=2),
        ],
        seed=11,
    )
    first, second = plan.start(), plan.start()
    script = calls()
    a = [first.pick(c) for c in script[:6]]
    # A second run starts from zero even while the first is half-way through.
    b = [second.pick(c) for c in script]
    a += [first.pick(c) for c in script[6:]]
    assert a == b
    assert first.injected == second.injected
    assert run_picks(plan) == run_picks(plan)
    assert first.plan is plan


def test_plan_is_read_only() -> None:
    plan = FaultPlan([faults.timeout()], seed=3)
    with pytest.raises(AttributeError):
        plan.seed = 4  # type: ignore[misc]
    with pytest.raises(AttributeError):
        plan.faults = ()  # type: ignore[misc]
    assert plan.faults == (faults.timeout(),)
    assert plan == FaultPlan([faults.timeout()], seed=3)
    assert plan != FaultPlan([faults.timeout()], seed=4)


# --- determinism across processes ----------------------------------------------------------

_CHILD = """
import json
from faultdeck import faults as f
plan = f.FaultPlan([f.timeout().random(p=0.3), f.quota().random(p=0.2, seed=99)], seed=7)
run = plan.start()
for seq in range(1, 201):
    run.pick(f.CallInfo(seq=seq, kind="tool", name="t", key="k"))
print(json.dumps([[seq, fault.kind] for seq, fault in run.injected]))
"""


def test_random_picks_are_the_same_in_every_process() -> None:
    plan = FaultPlan(
        [faults.timeout().random(p=0.3), faults.quota().random(p=0.2, seed=99)], seed=7
    )
    run = plan.start()
    for seq in range(1, 201):
        run.pick(CallInfo(seq=seq, kind="tool", name="t", key="k"))
    here = [[seq, fault.kind] for seq, fault in run.injected]
    assert here
    expected = []
    for seq in range(1, 201):
        if draw(7, seq) < 0.3:
            expected.append([seq, "timeout"])
        elif draw(99, seq) < 0.2:
            expected.append([seq, "quota"])
    assert here == expected
    for hash_seed in ("0", "4242", "random"):
        env = child_env(PYTHONHASHSEED=hash_seed)
        done = subprocess.run(
            [sys.executable, "-c", _CHILD], env=env, capture_output=True, text=True, check=True
        )
        assert json.loads(done.stdout) == here, hash_seed


# --- plan files ----------------------------------------------------------------------------

EXAMPLE_JSON = """{"seed": 7,
 "faults": [
   {"fault": "quota", "retry_after": 2, "at": 3},
   {"fault": "timeout", "on": {"kind": "tool", "name": "read_*", "nth": 2}},
   {"fault": "transient", "status": 503, "every": 5, "times": 2},
   {"fault": "latency", "ms": 300, "random": {"p": 0.1, "seed": 7}},
   {"fault": "quota", "code": "insufficient_quota"}
 ]}"""

EXAMPLE_TOML = """seed = 7

[[faults]]
fault = "quota"
retry_after = 2
at = 3

[[faults]]
fault = "timeout"
on = { kind = "tool", name = "read_*", nth = 2 }

[[faults]]
fault = "transient"
status = 503
every = 5
times = 2

[[faults]]
fault = "latency"
ms = 300
random = { p = 0.1, seed = 7 }

[[faults]]
fault = "quota"
code = "insufficient_quota"
"""

EXAMPLE = FaultPlan(
    [
        faults.quota(retry_after=2).at(seq=3),
        faults.timeout().on(kind="tool", name="read_*", nth=2),
        faults.transient(503).every(5).times(2),
        faults.latency(300).random(p=0.1, seed=7),
        faults.quota(code="insufficient_quota"),
    ],
    seed=7,
)


@pytest.mark.parametrize(
    ("name", "text"), [("plan.json", EXAMPLE_JSON), ("plan.toml", EXAMPLE_TOML)]
)
def test_load_plan_files(tmp_path: Path, name: str, text: str) -> None:
    path = tmp_path / name
    path.write_text(text, "utf-8")
    plan = FaultPlan.load(path)
    assert plan == EXAMPLE
    assert plan.faults == EXAMPLE.faults
    assert plan.seed == 7
    assert FaultPlan.load(str(path)) == EXAMPLE
    # The catch-all quota takes every call the earlier faults leave.
    picked = run_picks(plan)
    assert picked[:4] == [
        (1, "quota(insufficient_quota)"),
        (2, "quota(insufficient_quota)"),
        (3, "quota(retry_after=2)"),
        (4, "timeout"),
    ]


def test_at_accepts_a_seq_table() -> None:
    plan = FaultPlan.from_dict({"faults": [{"fault": "timeout", "at": {"seq": 3}}]})
    assert plan.faults == (faults.timeout().at(seq=3),)


def test_toml_sequence_uses_empty_tables_for_no_fault(tmp_path: Path) -> None:
    path = tmp_path / "seq.toml"
    path.write_text(
        'seed = 2\nsequence = [{fault = "timeout"}, {}, {fault = "quota", retry_after = 2}]\n',
        "utf-8",
    )
    plan = FaultPlan.load(path)
    assert plan == FaultPlan.sequence([faults.timeout(), None, faults.quota(2)], seed=2)
    assert seqs(plan) == [1, 3]


def test_json_sequence_uses_null_for_no_fault(tmp_path: Path) -> None:
    path = tmp_path / "seq.json"
    path.write_text(
        '{"seed": 0, "sequence": '
        '[{"fault": "timeout"}, null, {"fault": "quota", "retry_after": 2}]}',
        "utf-8",
    )
    assert run_picks(FaultPlan.load(path)) == [(1, "timeout"), (3, "quota(retry_after=2)")]


@pytest.mark.parametrize(
    "plan",
    [
        EXAMPLE,
        FaultPlan(),
        FaultPlan.sequence([None, faults.crash(), faults.stream_cut(3)], seed=5),
        FaultPlan([faults.reset().random(p=0.5), faults.malformed_stream().every(3)], seed=9),
    ],
)
def test_to_json_round_trips(plan: FaultPlan) -> None:
    data = orjson.loads(orjson.dumps(plan.to_json()))  # it is plain JSON
    again = FaultPlan.from_dict(data)
    assert again == plan
    assert again.to_json() == plan.to_json()
    script = calls(SCRIPT * 5)
    assert run_picks(again, script) == run_picks(plan, script)


def test_every_kind_round_trips() -> None:
    every_kind = FaultPlan(
        [
            faults.quota(1.5, code="x").at(seq=1),
            faults.timeout().at(seq=2),
            faults.transient(529).at(seq=3),
            faults.bad_tool_call("unknown_tool").at(seq=4),
            faults.slow_first_token(10).at(seq=5),
            faults.latency(20).at(seq=6),
            faults.crash().at(seq=7),
            faults.reset().at(seq=8),
            faults.stream_cut(2).at(seq=9),
            faults.malformed_stream().at(seq=10),
            faults.tool_error(message="boom").at(seq=11),
            faults.malformed_result().at(seq=12),
            faults.disconnect().at(seq=13),
            faults.length_stop().at(seq=14),
            faults.empty_answer().at(seq=15),
            faults.refusal(text="no").at(seq=16),
            faults.content_filter().at(seq=17),
            faults.reasoning_only().at(seq=18),
            faults.stale_answer().at(seq=19),
            faults.html_error(status=200).at(seq=20),
            faults.tool_result("set", path="$.items[0]", value={"a": [1]}).at(seq=21),
            faults.injection(path="$.note").at(seq=22),
        ]
    )
    assert {f.kind for f in every_kind.faults} == set(faults.FAULT_KINDS)
    assert FaultPlan.from_dict(json.loads(json.dumps(every_kind.to_json()))) == every_kind
    assert seqs(every_kind) == list(range(1, 13))  # the script has 12 calls


BAD_PLANS = [
    (
        "plan.json",
        '{"faults": [{"fault": "timeout"}, {"fault": "quota", "retry_after": "two"}]}',
        "plan.json: faults[1].retry_after: expected a number >= 0, got 'two'",
    ),
    (
        "plan.json",
        '{"faults": [{"fault": "qouta"}]}',
        "plan.json: faults[0].fault: unknown fault 'qouta'; known: quota, timeout, transient,",
    ),
    (
        "plan.toml",
        '[[faults]]\nfault = "timeout"\n[[faults]]\nfault = "crash"\n'
        '[[faults]]\nfault = "quota"\natseq = 3\n',
        "plan.toml: faults[2]: unknown field 'atseq'; known: fault, code, retry_after, at, on,",
    ),
    ("plan.json", '{"faults": [', "plan.json: not valid JSON ("),
    ("plan.toml", "faults = [", "plan.toml: not valid TOML ("),
    ("plan.json", '{"seed": 1}', "plan.json: neither 'faults' nor 'sequence' is given"),
    ("plan.json", '{"faults": [], "sequence": []}', "plan.json: has both 'faults' and 'sequence'"),
    ("plan.json", "[1, 2]", "plan.json: expected a table with 'faults' or 'sequence', got [1, 2]"),
    ("plan.json", '{"faults": [], "sed": 1}', "plan.json: unknown field 'sed'; known: seed"),
    ("plan.json", '{"faults": [], "seed": "7"}', "plan.json: seed: expected an integer, got '7'"),
    ("plan.json", '{"faults": {"fault": "timeout"}}', "plan.json: faults: expected a list"),
    ("plan.json", '{"faults": ["timeout"]}', "plan.json: faults[0]: expected a table like"),
    (
        "plan.json",
        '{"faults": [{"at": 3}]}',
        "plan.json: faults[0].fault: missing; expected one of",
    ),
    ("plan.json", '{"faults": [{"fault": 3}]}', "plan.json: faults[0].fault: unknown fault 3"),
    ("plan.json", '{"faults": [{"fault": "latency"}]}', "faults[0].ms: missing; expected a number"),
    (
        "plan.json",
        '{"faults": [{"fault": "transient", "status": 200}]}',
        "plan.json: faults[0].status: expected an HTTP status of 408, 409, 425, 429 or 500-599",
    ),
    (
        "plan.json",
        '{"faults": [{"fault": "bad_tool_call", "how": "x"}]}',
        "plan.json: faults[0].how: expected one of: missing_required,",
    ),
    (
        "plan.json",
        '{"faults": [{"fault": "timeout", "at": 0}]}',
        "plan.json: faults[0].at: expected an integer >= 1, got 0",
    ),
    (
        "plan.json",
        '{"faults": [{"fault": "timeout", "at": {"seq": "3"}}]}',
        "plan.json: faults[0].at.seq: expected an integer >= 1, got '3'",
    ),
    (
        "plan.json",
        '{"faults": [{"fault": "timeout", "at": {"sec": 3}}]}',
        "plan.json: faults[0].at: unknown field 'sec'; known: seq",
    ),
    (
        "plan.json",
        '{"faults": [{"fault": "timeout", "on": {"kind": "tools"}}]}',
        "plan.json: faults[0].on.kind: expected one of: model, tool, env, http, got 'tools'",
    ),
    (
        "plan.json",
        '{"faults": [{"fault": "timeout", "on": {"nth": 0}}]}',
        "plan.json: faults[0].on.nth: expected an integer >= 1, got 0",
    ),
    (
        "plan.json",
        '{"faults": [{"fault": "timeout", "on": {"names": "x"}}]}',
        "plan.json: faults[0].on: unknown field 'names'; known: kind, name, nth, after; did "
        "you mean",
    ),
    (
        "plan.json",
        '{"faults": [{"fault": "timeout", "on": "tool"}]}',
        "plan.json: faults[0].on: expected a table with kind, name, nth, after, got 'tool'",
    ),
    (
        "plan.json",
        '{"faults": [{"fault": "timeout", "every": 0}]}',
        "plan.json: faults[0].every: expected an integer >= 1, got 0",
    ),
    (
        "plan.json",
        '{"faults": [{"fault": "timeout", "times": 1.5}]}',
        "plan.json: faults[0].times: expected an integer >= 0, got 1.5",
    ),
    (
        "plan.json",
        '{"faults": [{"fault": "timeout", "random": {"p": 2}}]}',
        "plan.json: faults[0].random.p: expected a probability from 0 to 1, got 2",
    ),
    (
        "plan.json",
        '{"faults": [{"fault": "timeout", "random": {"seed": 2}}]}',
        "plan.json: faults[0].random.p: missing",
    ),
    (
        "plan.json",
        '{"faults": [{"fault": "timeout", "random": {"p": 0.5, "seed": "x"}}]}',
        "plan.json: faults[0].random.seed: expected an integer, got 'x'",
    ),
    (
        "plan.json",
        '{"sequence": [null, {"fault": "timeout", "at": 2}]}',
        "plan.json: sequence[1]: 'at' does not belong in a sequence entry",
    ),
    (
        "plan.json",
        '{"sequence": [{"fault": "latency", "ms": -5}]}',
        "plan.json: sequence[0].ms: expected a number >= 0, got -5",
    ),
    (
        "plan.toml",
        'sequence = [{fault = "timeout"}, {fault = "quotas"}]\n',
        "plan.toml: sequence[1].fault: unknown fault 'quotas'; known: quota,",
    ),
    ("plan.yaml", "faults: []", "plan.yaml: a fault plan is a .json or .toml file"),
]


@pytest.mark.parametrize(("name", "text", "message"), BAD_PLANS)
def test_bad_plans_name_the_file_and_field(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, text: str, message: str
) -> None:
    monkeypatch.chdir(tmp_path)  # so the source is just the file name, as the user typed it
    Path(name).write_text(text, "utf-8")
    with pytest.raises(ConfigError) as info:
        FaultPlan.load(name)
    assert message in str(info.value)


def test_unknown_fault_suggests_the_near_one() -> None:
    with pytest.raises(ConfigError, match=r"did you mean 'quota'\?"):
        FaultPlan.from_dict({"faults": [{"fault": "qouta"}]}, source="p.json")


def test_from_dict_names_its_source() -> None:
    with pytest.raises(ConfigError, match=r"^fault plan: faults\[0\]\.fault: missing"):
        FaultPlan.from_dict({"faults": [{}]})
    with pytest.raises(ConfigError, match=r"^mine: faults\[0\]\.fault: missing"):
        FaultPlan.from_dict({"faults": [{}]}, source="mine")


def test_missing_plan_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.json"
    with pytest.raises(ConfigError, match=r"nope\.json: no such fault plan; "):
        FaultPlan.load(path)


# --- threads -------------------------------------------------------------------------------


PICKS = 2000  # per thread


@pytest.mark.parametrize(
    ("fault", "total"),
    [(faults.timeout().times(10), 10), (faults.timeout().every(7), 8 * PICKS // 7)],
)
def test_one_run_shared_by_threads(fault: Fault, total: int) -> None:
    run = FaultPlan([fault]).start()
    start = threading.Barrier(8)
    hits = [0] * 8

    def work(t: int) -> None:
        start.wait()
        for i in range(PICKS):
            if run.pick(CallInfo(seq=t * PICKS + i + 1, kind="tool", name="t", key="k")):
                hits[t] += 1

    # Switch threads as often as the interpreter allows, so an unlocked counter would race.
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert sum(hits) == total
    assert len(run.injected) == total


# --- property: two fresh runs agree, and agree with the spec ------------------------------


def reference(plan: FaultPlan, script: list[CallInfo]) -> list[tuple[int, int]]:
    """The documented rules, written out plainly: (seq, index of the winning fault)."""
    seen = [0] * len(plan.faults)
    used = [0] * len(plan.faults)
    out = []
    for call in script:
        winner = None
        for i, fault in enumerate(plan.faults):
            s = fault.selector
            if s.times is not None and used[i] >= s.times:
                continue
            if s.seq is not None and s.seq != call.seq:
                continue
            if s.kind is not None and s.kind != call.kind:
                continue
            if s.name is not None and not fnmatch.fnmatchcase(call.name, s.name):
                continue
            seen[i] += 1
            ok = (s.nth is None or seen[i] == s.nth) and (s.every is None or seen[i] % s.every == 0)
            if ok and s.p is not None:
                ok = draw(plan.seed if s.seed is None else s.seed, call.seq) < s.p
            if ok and winner is None:
                winner = i
        if winner is not None:
            used[winner] += 1
            out.append((call.seq, winner))
    return out


_maybe = st.none

selectors = st.builds(
    Selector,
    seq=_maybe() | st.integers(1, 12),
    kind=_maybe() | st.sampled_from(["model", "tool", "env", "http"]),
    name=_maybe() | st.sampled_from(["read_*", "chat", "*", "w?ite_file"]),
    nth=_maybe() | st.integers(1, 5),
    every=_maybe() | st.integers(1, 4),
    times=_maybe() | st.integers(0, 4),
) | st.builds(
    Selector,
    kind=_maybe() | st.sampled_from(["model", "tool"]),
    every=_maybe() | st.integers(1, 3),
    p=st.floats(0, 1),
    seed=_maybe() | st.integers(-(2**40), 2**40),
    times=_maybe() | st.integers(0, 4),
)


def _plan(sels: list[Selector], kinds: list[str], seed: int) -> FaultPlan:
    params = {
        "latency": (("ms", 1),),
        "slow_first_token": (("ms", 1),),
        "tool_result": (("action", "drop"),),
    }
    return FaultPlan(
        [Fault(k, params.get(k, ()), s) for s, k in zip(sels, kinds, strict=False)], seed=seed
    )


plans = st.builds(
    _plan,
    st.lists(selectors, min_size=1, max_size=4),
    st.lists(st.sampled_from(faults.FAULT_KINDS), min_size=4, max_size=4),
    st.integers(-(2**40), 2**40),
)
scripts = st.lists(
    st.tuples(
        st.sampled_from(["model", "tool", "env", "http"]),
        st.sampled_from(["read_file", "read_dir", "chat", "write_file", "HOME"]),
    ),
    max_size=40,
).map(calls)


@settings(max_examples=300, deadline=None)
@given(plan=plans, script=scripts)
def test_picks_are_deterministic_and_follow_the_rules(
    plan: FaultPlan, script: list[CallInfo]
) -> None:
    first, second = plan.start(), plan.start()
    a = [first.pick(c) for c in script]
    b = [second.pick(c) for c in script]
    assert a == b
    assert first.injected == second.injected
    expected = reference(plan, script)
    assert [(seq, plan.faults.index(f)) for seq, f in first.injected] == [
        (seq, plan.faults.index(plan.faults[i])) for seq, i in expected
    ]
