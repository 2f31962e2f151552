"""A fault is injected once: recording under faults and replaying under the same faults give
identical outcomes, and the cassette says which calls were faulted.

A call recorded under a fault keeps it in its line; replay serves that line as the fault,
whatever plan the replay runs with, and never injects it a second time.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

import faultdeck as fd
from faultdeck import faults
from faultdeck.http import Transport

POLICY = fd.Policy(max_attempts=3, base_delay=0.5, max_delay=2, max_total_wait=30)
PLANS = {
    "quota": faults.quota(retry_after=2).at(seq=3),
    "timeout": faults.timeout().at(seq=2),
    "bad_tool_call": faults.bad_tool_call().on(kind="model", nth=2),
}


def loop(deck: fd.Deck, clock: fd.VirtualClock, live: bool) -> list[fd.Outcome]:
    def step(op: str) -> Any:
        return deck.call("model", "plan", {"op": op}, lambda: {"did": op} if live else None)

    def repair(op: str, error: fd.BadToolCall) -> Any:
        return deck.call("model", "repair", {"op": op}, lambda: {"fixed": op} if live else None)

    return fd.run_steps(step, ["a", "b", "c", "d"], POLICY, clock=clock, repair=repair)


@pytest.mark.parametrize("kind", sorted(PLANS))
def test_recording_and_replaying_under_the_same_faults_agree(tmp_path: Path, kind: str) -> None:
    path = tmp_path / f"{kind}.jsonl"
    plan = [PLANS[kind]]
    clock = fd.VirtualClock()
    with fd.Deck(path, mode="record", faults=plan, clock=clock) as deck:
        recorded = loop(deck, clock, live=True)
    faulted = [e for e in fd.load(path).entries if e.fault is not None]
    assert [e.fault["fault"] for e in faulted] == [kind]  # the cassette says where
    for replay_plan in (plan, None):  # the same faults, or none: the recording decides
        clock = fd.VirtualClock()
        with fd.Deck(path, mode="replay", faults=replay_plan, clock=clock) as deck:
            assert loop(deck, clock, live=False) == recorded
            report = deck.report()
        assert report.ok, report
        assert report.faults == 1
    assert any(o.attempts > 1 or o.status != "ok" or o.reason for o in recorded)  # it bit


def test_a_fault_shaped_into_an_http_answer_is_not_shaped_twice(tmp_path: Path) -> None:
    path = tmp_path / "http.jsonl"
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "tool_calls": [
                        {
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": "get", "arguments": '{"a": 1, "b": 2}'},
                        }
                    ],
                },
            }
        ],
    }
    upstream = httpx.MockTransport(lambda request: httpx.Response(200, json=body))
    plan = [faults.bad_tool_call(how="missing_field")]

    def ask(deck: fd.Deck, inner: Any) -> Any:
        with httpx.Client(transport=Transport(deck, transport=inner)) as client:
            reply = client.post("http://api.test/v1/chat/completions", json={"model": "m"})
        return json.loads(
            reply.json()["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"]
        )

    with fd.Deck(path, mode="record", faults=plan) as deck:
        recorded = ask(deck, upstream)
    assert recorded == {"b": 2}  # broken once: the first field is gone
    [entry] = fd.load(path).entries
    assert entry.fault is not None
    assert entry.fault["fault"] == "bad_tool_call"
    for replay_plan in (plan, None):
        with fd.Deck(path, mode="replay", faults=replay_plan) as deck:
            assert ask(deck, None) == recorded
            assert deck.report().faults == 1


PLUGIN_TEST = """
import json
import pytest
import faultdeck as fd
from faultdeck import faults

POLICY = fd.Policy(max_attempts=3, base_delay=0.5, max_delay=2, max_total_wait=30)
LIVE = {"live": True}


def run(deck, clock):
    def step(op):
        return deck.call("model", "plan", {"op": op}, lambda: {"did": op})

    def repair(op, error):
        return deck.call("model", "repair", {"op": op}, lambda: {"fixed": op})

    return fd.run_steps(step, ["a", "b", "c", "d"], POLICY, clock=clock, repair=repair)


@pytest.mark.faultdeck(faults=[faults.quota(retry_after=2).at(seq=3)])
def test_quota(deck, virtual_clock, request):
    outcomes = run(deck, virtual_clock)
    request.config.cache.set(f"outcomes/quota/{deck.mode}", repr(outcomes))


@pytest.mark.faultdeck(faults=[faults.timeout().at(seq=2)])
def test_timeout(deck, virtual_clock, request):
    outcomes = run(deck, virtual_clock)
    request.config.cache.set(f"outcomes/timeout/{deck.mode}", repr(outcomes))


@pytest.mark.faultdeck(faults=[faults.bad_tool_call().on(kind="model", nth=2)])
def test_bad_tool_call(deck, virtual_clock, request):
    outcomes = run(deck, virtual_clock)
    request.config.cache.set(f"outcomes/bad_tool_call/{deck.mode}", repr(outcomes))
"""


def test_the_pytest_marker_injects_its_fault_once(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_faulted=PLUGIN_TEST)
    recorded = pytester.runpytest("--faultdeck-mode=record", "-p", "no:randomly")
    recorded.assert_outcomes(passed=3)
    replayed = pytester.runpytest("--faultdeck-strict", "-p", "no:randomly")
    replayed.assert_outcomes(passed=3)
    cache = pytester.path / ".pytest_cache" / "v" / "outcomes"
    for kind in ("quota", "timeout", "bad_tool_call"):
        record = json.loads((cache / kind / "record").read_text("utf-8"))
        replay = json.loads((cache / kind / "replay").read_text("utf-8"))
        assert record == replay, kind
        cassette = pytester.path / "cassettes" / "test_faulted" / f"test_{kind}.jsonl"
        faulted = [e.fault["fault"] for e in fd.load(cassette).entries if e.fault is not None]
        assert faulted == [kind]
