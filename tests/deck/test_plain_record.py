"""A plain live call takes a short route while recording (``_deck/live.py``); it must
record what ``begin`` and its ``Call`` record, call for call.

One program, with what the route has to get right: an answer's ids that later args send
back, step labels (one holding a secret, one that is not stored), a secret in the args (the
key is the masked one) and in the name, an environment read (no intent line), an answer
holding a secret and a timestamp, a call that raises (its error recorded), one that never
reached the world (an abort, no line), args and an answer JSON cannot hold (each keeps its
seq, writes no line), a call inside a side effect (no idempotency key of its own), a path
under the project root (the end line then names no rules). It is recorded by a plain deck
(the short route) and by one whose fault plan may land on every call and lands on none
(every call through ``begin``): the cassettes, the call logs and the reports must be equal.
"""

from __future__ import annotations

import functools
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson
import pytest

import faultdeck as fd
from faultdeck._base.context import current_idempotency_key

CHAT_ID = "chatcmpl-9x8Yq2ZkT1aB3cD4eF5gH6"
SECRET = "sk-proj-" + "Zq7" * 16
# A fault that may land on every call (so each goes through ``begin``) and lands on none.
NEVER = fd.FaultPlan([fd.faults.timeout().on(nth=10**9)])


class Boom(Exception):
    pass


def agent(deck: fd.Deck, root: Path) -> list[Any]:
    """The program: what it got back from each call, errors named."""
    got: list[Any] = []

    def attempt(*call: Any, **options: Any) -> None:
        try:
            got.append(deck.call(*call, **options))
        except Exception as exc:
            got.append(f"{type(exc).__name__}: {exc}")

    def boom() -> Any:
        raise Boom("upstream said no")

    def refused() -> Any:
        raise ConnectionRefusedError(111, "Connection refused")

    def keys_inside() -> Any:
        return {"key": current_idempotency_key()}

    def side_effect() -> Any:
        # A plain call inside a side effect's call runs with no key of its own.
        inner = deck.call("tool", "lookup", {"q": "inner"}, keys_inside)
        return {"outer": current_idempotency_key() is not None, **inner}

    with fd.step("plan"):
        attempt("model", "chat", {"q": "plan"}, lambda: {"id": CHAT_ID, "created": 1764411948})
    with fd.step(f"act with {SECRET}"):
        attempt("model", "chat", {"previous": CHAT_ID}, lambda: {"text": f"use {SECRET}"})
    attempt("tool", "login", {"token": SECRET}, lambda: {"ok": True}, step=3)
    attempt("tool", f"search {SECRET}", {"q": 1}, lambda: [1, 2], step={"not": "stored"})
    attempt("env", "clock", {}, lambda: {"at": "2026-05-01T10:00:00Z"})
    attempt("tool", "flaky", {"q": 1}, boom)
    attempt("tool", "offline", {"q": 1}, refused)
    attempt("tool", "odd", {"q": object()}, lambda: 1)
    attempt("tool", "odd", {"q": 2}, lambda: {"n": float("nan")})
    attempt("tool", "send", {"to": "a"}, side_effect, side_effect=True)
    attempt("tool", "read", {"path": str(root / "docs" / "a.md")}, lambda: {"text": "a"})
    # An id learned from an answer (under an id field), sent back under another name.
    attempt("tool", "start", {"q": 1}, lambda: {"job_id": "x7k2m9p4q1"})
    attempt("tool", "poll", {"ref": "x7k2m9p4q1"}, lambda: {"done": True})
    for i in range(3):
        attempt("tool", "search", {"q": "same"}, functools.partial(dict, hit=i))
    return got


def recorded(path: Path, root: Path, **options: Any) -> tuple[list[Any], fd.Deck]:
    deck = fd.Deck(
        path,
        mode="record",
        clock=fd.VirtualClock(),
        allow_side_effects=True,
        normalize=fd.NormalizeConfig(root=str(root)),
        **options,
    )
    with deck:
        got = agent(deck, root)
    return got, deck


def lines(path: Path) -> list[Any]:
    """The cassette's lines after its header, idempotency keys (random) made alike."""
    found = []
    for line in path.read_bytes().splitlines()[1:]:
        obj = orjson.loads(line)
        if "idempotency_key" in obj:
            obj["idempotency_key"] = "…"
        found.append(obj)
    return found


def test_the_short_route_records_what_begin_records(tmp_path: Path) -> None:
    plain_path, planned_path = tmp_path / "plain.jsonl", tmp_path / "planned.jsonl"
    short, plain = recorded(plain_path, tmp_path)
    long, planned = recorded(planned_path, tmp_path, faults=NEVER)
    assert plain._run.recorded_plain > 0
    assert planned._run.recorded_plain == 0
    assert short == long
    assert lines(plain_path) == lines(planned_path)
    assert plain.calls == planned.calls
    assert replace(plain.report(), cassette="") == replace(planned.report(), cassette="")
    text = plain_path.read_text("utf-8")
    assert SECRET not in text
    assert SECRET not in repr(plain.calls)
    written = lines(plain_path)
    assert written[-1]["end"].get("rules") is None  # a path under the root was in args
    # 7 never reached the world, 8 and 9 held what JSON cannot; 11 ran inside 10.
    seqs = [1, 2, 3, 4, 5, 6, 11, 10, *range(12, 18)]
    assert [o["seq"] for o in written if "seq" in o] == seqs
    assert [c.seq for c in plain.calls] == sorted([7, *seqs])
    polled = next(o for o in written if o.get("name") == "poll")
    assert polled["args"] == {"ref": "«id:2»"}
    assert short[5] == "Boom: upstream said no"
    assert short[7].startswith("ArgumentError: args.q")
    assert short[8].startswith("ArgumentError: out of tool odd at seq 9")
    assert short[9] == {"outer": True, "key": None}


def test_a_plain_recording_writes_an_intent_before_each_live_call(tmp_path: Path) -> None:
    # Left as a killed process leaves it: every call's intent, then its line.
    path = tmp_path / "killed.jsonl"
    deck = fd.Deck(path, mode="record", clock=fd.VirtualClock())
    deck.open()
    deck.call("tool", "search", {"q": 1}, lambda: {"hit": 1})
    deck.call("env", "clock", {}, lambda: 5)
    seen: list[Any] = []

    def look() -> Any:
        seen.extend(orjson.loads(line) for line in path.read_bytes().splitlines()[1:])
        return {"hit": 2}

    deck.call("tool", "search", {"q": 2}, look)
    assert [next(iter(o)) for o in seen] == ["begin", "seq", "seq", "begin"]
    assert seen[-1]["begin"] == 3
    deck.abandon()
    assert [c.seq for c in fd.load(path).entries] == [1, 2, 3]


def test_a_closed_deck_refuses_a_call_on_either_route(tmp_path: Path) -> None:
    for plan in (None, NEVER):
        deck = fd.Deck(tmp_path / "closed.jsonl", mode="record", faults=plan)
        with deck:
            deck.call("tool", "search", {"q": 1}, lambda: 1)
        with pytest.raises(fd.ConfigError, match="closed"):
            deck.call("tool", "search", {"q": 2}, lambda: 2)


def test_a_clock_of_whole_seconds_records_and_reports_alike(tmp_path: Path) -> None:
    # A VirtualClock started at 0 reads ints: a call's ms is an int, on either route.
    calls = []
    for plan in (None, NEVER):
        path = tmp_path / f"{plan is None}.jsonl"
        with fd.Deck(path, mode="record", clock=fd.VirtualClock(start=0), faults=plan) as deck:
            deck.call("tool", "search", {"q": 1}, lambda: {"hit": 1})
        calls.append(deck.calls)
        assert len(deck.report().calls) == 1
    assert calls[0] == calls[1]
    assert [(c.source, c.ms) for c in calls[0]] == [("live", 0)]
