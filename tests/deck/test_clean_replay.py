"""A plain replay takes a short route (``_deck/clean.py``); it must give what ``begin``
gives, call for call.

One recording, with what each route has to get right: ids an answer hands out and later
args send back, ids args bring themselves, a key recorded three times, step labels (one
holding a secret), an args secret (its key is the redacted one, so the short route steps
aside), a recorded error, a call asked once more than recorded (``repeats="last"``), async
calls. It is replayed by a
plain deck (the short route) and by one whose fault plan may land on every call and lands
on none (every call through ``begin``): answers, errors, the call log and the report must be equal.
"""

from __future__ import annotations

import asyncio
import functools
from pathlib import Path
from typing import Any

import pytest

import faultdeck as fd

CHAT_ID = "chatcmpl-9x8Yq2ZkT1aB3cD4eF5gH6"
SECRET = "sk-proj-" + "Zq7" * 16
FIRST, SECOND = "0b8e3b5c-6f7e-4d2a-9c1b-3e5f7a9b1c2d", "5d1f2e3a-4b5c-4d6e-8f70-8192a3b4c5d6"
# A fault that may land on every call (so each goes through ``begin``) and lands on none.
NEVER = fd.FaultPlan([fd.faults.timeout().on(nth=10**9)])


class Boom(Exception):
    pass


def agent(deck: fd.Deck, live: bool) -> list[Any]:
    """The program: what it got back from each call, errors included."""

    def answer(value: Any) -> Any:
        def run() -> Any:
            if not live:
                raise AssertionError("went live while replaying")
            return value

        return run

    def boom() -> Any:
        if not live:
            raise AssertionError("went live while replaying")
        raise Boom("upstream said no")

    got: list[Any] = []
    with fd.step("plan"):
        got.append(deck.call("model", "chat", {"q": "plan"}, answer({"id": CHAT_ID, "n": 1})))
    for i in range(3):
        got.append(deck.call("tool", "search", {"q": "same"}, answer({"hit": i})))
    with fd.step(f"act with {SECRET}"):
        got.append(deck.call("model", "chat", {"previous": CHAT_ID}, answer({"n": 2})))
    got.append(deck.call("tool", "login", {"token": SECRET}, answer({"ok": True})))
    try:
        deck.call("tool", "flaky", {"q": 1}, boom)
    except Exception as exc:  # the recorded error, raised again on replay
        got.append(f"{type(exc).__name__}: {exc}")
    got.append(deck.call("tool", "plan", {"depth": 2}, answer([1, 2]), step=3))
    # Ids the args bring themselves: each named in its call's walk, for good.
    for n, ref in enumerate((FIRST, SECOND, FIRST)):
        got.append(deck.call("tool", "lookup", {"ref": ref}, answer({"n": n})))

    async def later() -> Any:
        async def fetch() -> Any:
            return answer({"async": True})()

        return await deck.acall("tool", "fetch", {"url": "/a"}, fetch)

    got.append(asyncio.run(later()))
    return got


@pytest.fixture
def recorded(tmp_path: Path) -> tuple[Path, list[Any]]:
    path = tmp_path / "run.jsonl"
    with fd.Deck(path, mode="record") as deck:
        live = agent(deck, live=True)
    return path, live


def replayed(path: Path, **options: Any) -> tuple[list[Any], fd.Deck]:
    deck = fd.Deck(path, mode="replay", clock=fd.VirtualClock(), **options)
    with deck:
        got = agent(deck, live=False)
    return got, deck


def test_the_short_route_gives_what_begin_gives(recorded: tuple[Path, list[Any]]) -> None:
    path, live = recorded
    short, plain = replayed(path)
    long, planned = replayed(path, faults=NEVER)
    assert short == long == live
    assert plain.calls == planned.calls
    assert plain.report() == planned.report()
    calls = plain.calls
    assert [c.source for c in calls] == ["replay"] * 12
    assert [c.recorded_seq for c in calls] == list(range(1, 13))
    assert calls[0].step == "plan"
    assert calls[-1].step is None
    assert calls[7].step == 3
    assert SECRET not in repr(calls)
    assert "«redacted" in str(calls[4].step)
    assert calls[6].error == "Boom"
    assert short[8:11] == [{"n": 0}, {"n": 1}, {"n": 2}]


def test_a_call_asked_once_more_than_recorded_gets_the_same_answer_both_ways(
    recorded: tuple[Path, list[Any]],
) -> None:
    path, _ = recorded

    def ask(**options: Any) -> tuple[list[Any], fd.Deck]:
        deck = fd.Deck(path, mode="replay", repeats="last", clock=fd.VirtualClock(), **options)
        with deck:
            got = agent(deck, live=False)
            got.append(deck.call("tool", "plan", {"depth": 2}, lambda: None))
        return got, deck

    (short, plain), (long, planned) = ask(), ask(faults=NEVER)
    assert short == long
    assert short[-1] == [1, 2]
    assert plain.calls == planned.calls
    assert plain.report().repeats == planned.report().repeats != ()


def test_a_plan_naming_one_call_breaks_that_call_alike(recorded: tuple[Path, list[Any]]) -> None:
    path, _ = recorded
    timeout = fd.faults.timeout().at(seq=2)  # as a rehearsal cell's plan names one call

    def ask(*plan: fd.Fault) -> tuple[list[Any], fd.Deck]:
        deck = fd.Deck(path, mode="replay", clock=fd.VirtualClock(), faults=fd.FaultPlan(plan))
        got: list[Any] = []
        with deck:
            got.append(deck.call("model", "chat", {"q": "plan"}, lambda: None))
            for _ in range(2):  # the timeout, then the retry gets the recorded answer
                try:
                    got.append(deck.call("tool", "search", {"q": "same"}, lambda: None))
                except fd.TransientError as exc:
                    got.append(type(exc).__name__)
        return got, deck

    (short, plain), (long, planned) = ask(timeout), ask(timeout, *NEVER.faults)
    assert short == long == [{"id": CHAT_ID, "n": 1}, "TransientError", {"hit": 0}]
    assert plain.calls == planned.calls
    assert [c.fault for c in plain.calls] == [None, "timeout", None]
    assert plain.report() == planned.report()


def test_a_changed_argument_misses_the_same_way(recorded: tuple[Path, list[Any]]) -> None:
    path, _ = recorded
    messages = []
    for plan in (None, NEVER):
        with fd.Deck(path, mode="replay", faults=plan) as deck:
            deck.call("model", "chat", {"q": "plan"}, lambda: None)
            with pytest.raises(fd.ReplayMiss) as missed:
                deck.call("tool", "search", {"q": "other"}, lambda: None)
            messages.append(str(missed.value))
            # The miss took seq 2: the next call is numbered 3 either way.
            deck.call("tool", "search", {"q": "same"}, lambda: None)
            assert [c.seq for c in deck.calls] == [1, 2, 3]
    assert messages[0] == messages[1]


def test_strict_matching_gives_what_begin_gives(recorded: tuple[Path, list[Any]]) -> None:
    path, live = recorded
    short, plain = replayed(path, match="strict")
    long, planned = replayed(path, match="strict", faults=NEVER)
    assert short == long == live
    assert plain.calls == planned.calls
    assert plain.report() == planned.report()


def test_reordered_calls_count_the_same_order_changes_both_ways(tmp_path: Path) -> None:
    path = tmp_path / "order.jsonl"
    with fd.Deck(path, mode="record") as deck:
        for q in ("a", "b", "c"):
            deck.call("tool", "search", {"q": q}, functools.partial(dict, hit=q))

    def ask(**options: Any) -> fd.Report:
        with fd.Deck(path, mode="replay", clock=fd.VirtualClock(), **options) as deck:
            got = [deck.call("tool", "search", {"q": q}, lambda: None) for q in ("c", "a", "b")]
        assert got == [{"hit": "c"}, {"hit": "a"}, {"hit": "b"}]
        return deck.report()

    plain, planned = ask(), ask(faults=NEVER)
    assert plain == planned
    assert plain.order_changes == 1
