"""Each row of the modes table, FIFO repeats, keyed and strict matching."""

from __future__ import annotations

import asyncio
import datetime
import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import pytest

import faultdeck as fd
from tests.support.calls import never, returns, rules


def live(value: object) -> Callable[[], object]:
    calls: list[object] = []

    def run() -> object:
        calls.append(value)
        return value

    run.calls = calls  # type: ignore[attr-defined]
    return run


def record(path: Path, items: Sequence[tuple[str, Mapping[str, object], object]]) -> None:
    with fd.Deck(path, mode="record") as deck:
        for name, args, out in items:
            deck.call("tool", name, args, returns(out))


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


BASE = [
    ("search", {"q": "retry"}, {"hits": 2}),
    ("read", {"path": "a.md"}, {"bytes": 10}),
    ("read", {"path": "b.md"}, {"bytes": 20}),
]


@pytest.fixture
def cassette(tmp_path: Path) -> Path:
    path = tmp_path / "base.jsonl"
    record(path, BASE)
    return path


def test_replay_never_goes_live_and_writes_nothing(cassette: Path) -> None:
    before = digest(cassette)
    with fd.Deck(cassette, mode="replay") as deck:
        assert deck.call("tool", "search", {"q": "retry"}, never) == {"hits": 2}
        assert deck.call("tool", "read", {"path": "b.md"}, never) == {"bytes": 20}
        with pytest.raises(fd.ReplayMiss):
            deck.call("tool", "read", {"path": "c.md"}, never)
    assert digest(cassette) == before
    report = deck.report()
    assert (report.used, report.live, len(report.misses)) == (2, 0, 1)


def test_a_miss_keeps_its_seq_and_the_replay_goes_on(cassette: Path) -> None:
    with fd.Deck(cassette, mode="replay") as deck:
        deck.call("tool", "search", {"q": "retry"}, never)
        with pytest.raises(fd.ReplayMiss, match="replay miss at seq 2"):
            deck.call("tool", "search", {"q": "other"}, never)
        assert deck.call("tool", "read", {"path": "a.md"}, never) == {"bytes": 10}
    assert [(c.seq, c.source) for c in deck.calls] == [(1, "replay"), (2, "miss"), (3, "replay")]


CHAT_ID = "chatcmpl-9x8Yq2ZkT1aB3cD4eF5gH6"
FIRST, SECOND = "0b8e3b5c-6f7e-4d2a-9c1b-3e5f7a9b1c2d", "5d1f2e3a-4b5c-4d6e-8f70-8192a3b4c5d6"


def ids_and_steps(deck: fd.Deck, run: Callable[[object], Callable[[], object]]) -> list[object]:
    """A program whose later args send back ids earlier answers handed out (under an id
    field, or under another name), and bring ids of their own; under step labels."""
    with fd.step("plan"):
        got = [deck.call("model", "chat", {"q": "plan"}, run({"id": CHAT_ID}))]
    got.append(deck.call("model", "chat", {"previous": CHAT_ID}, run({"n": 2})))
    got.append(deck.call("tool", "start", {"q": 1}, run({"job_id": "x7k2m9p4q1"}), step={"n": 2}))
    got.append(deck.call("tool", "poll", {"ref": "x7k2m9p4q1"}, run({"done": True}), step=3))
    for n, ref in enumerate((FIRST, SECOND, FIRST)):
        got.append(deck.call("tool", "lookup", {"ref": ref}, run({"n": n})))
    return got


def test_ids_handed_out_and_sent_back_replay_under_their_steps(tmp_path: Path) -> None:
    path = tmp_path / "ids.jsonl"
    with fd.Deck(path, mode="record") as deck:
        recorded = ids_and_steps(deck, returns)
    entries = fd.load(path).entries
    assert entries[3].args == {"ref": "«id:2»"}
    assert [e.step for e in entries[:4]] == ["plan", None, None, 3]  # only text and numbers
    with fd.Deck(path, mode="replay") as deck:
        assert ids_and_steps(deck, lambda _: never) == recorded
    assert [c.recorded_seq for c in deck.calls] == list(range(1, 8))
    assert [c.step for c in deck.calls][:4] == ["plan", None, {"n": 2}, 3]
    assert deck.report().ok


def test_a_closed_deck_refuses_a_call(tmp_path: Path) -> None:
    deck = fd.Deck(tmp_path / "closed.jsonl", mode="record")
    with deck:
        deck.call("tool", "search", {"q": 1}, returns(1))
    with pytest.raises(fd.ConfigError, match="closed"):
        deck.call("tool", "search", {"q": 2}, returns(2))


def test_replay_of_a_missing_cassette_says_to_record(tmp_path: Path) -> None:
    with pytest.raises(fd.CassetteNotFound, match="no such cassette; record it first"):
        fd.Deck(tmp_path / "none.jsonl", mode="replay").open()
    assert not (tmp_path / "none.jsonl").exists()


def test_record_always_goes_live_and_starts_fresh(cassette: Path) -> None:
    run = live({"hits": 9})
    with fd.Deck(cassette, mode="record") as deck:
        assert deck.call("tool", "search", {"q": "retry"}, run) == {"hits": 9}
        assert deck.call("tool", "search", {"q": "retry"}, run) == {"hits": 9}
    assert len(run.calls) == 2  # type: ignore[attr-defined]
    recording = fd.load(cassette)
    assert [e.value for e in recording.entries] == [{"hits": 9}, {"hits": 9}]


def test_once_records_when_missing_then_only_replays(tmp_path: Path) -> None:
    path = tmp_path / "once.jsonl"
    run = live([1, 2])
    with fd.Deck(path, mode="once") as deck:
        assert deck.call("tool", "t", {"a": 1}, run) == [1, 2]
    assert deck.report().mode == "record"
    before = digest(path)
    with fd.Deck(path, mode="once") as deck:
        assert deck.call("tool", "t", {"a": 1}, never) == [1, 2]
        with pytest.raises(fd.ReplayMiss):
            deck.call("tool", "t", {"a": 2}, never)
    assert deck.report().mode == "replay"
    assert digest(path) == before


def test_append_replays_hits_and_records_misses(cassette: Path) -> None:
    before = cassette.read_bytes()
    run = live({"bytes": 30})
    with fd.Deck(cassette, mode="append") as deck:
        assert deck.call("tool", "read", {"path": "a.md"}, never) == {"bytes": 10}
        assert deck.call("tool", "read", {"path": "c.md"}, run) == {"bytes": 30}
    after = cassette.read_bytes()
    assert after.startswith(before), "append must not rewrite what was recorded"
    recording = fd.load(cassette)
    assert [e.args for e in recording.entries][-1] == {"path": "c.md"}
    assert len(recording.entries) == 4
    assert recording.end == {"calls": 4, "status": "ok", "rules": rules()}
    # The appended call now replays too.
    with fd.Deck(cassette, mode="replay") as deck:
        assert deck.call("tool", "read", {"path": "c.md"}, never) == {"bytes": 30}


def test_append_creates_a_missing_cassette(tmp_path: Path) -> None:
    path = tmp_path / "new.jsonl"
    with fd.Deck(path, mode="append") as deck:
        deck.call("tool", "t", {}, lambda: 1)
    assert [e.value for e in fd.load(path).entries] == [1]


def test_resume_replays_the_prefix_then_goes_live(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    deck = fd.Deck(path, mode="record")
    deck.open()
    deck.call("tool", "step", {"n": 1}, lambda: "one")
    deck.call("tool", "step", {"n": 2}, lambda: "two")
    deck.abandon()  # the process "died": no end line
    assert fd.load(path).interrupted
    run = live("three")
    with fd.Deck(path, mode="resume") as deck:
        assert deck.call("tool", "step", {"n": 1}, never) == "one"
        assert deck.call("tool", "step", {"n": 2}, never) == "two"
        assert deck.call("tool", "step", {"n": 3}, run) == "three"
    recording = fd.load(path)
    assert not recording.interrupted
    assert [e.value for e in recording.entries] == ["one", "two", "three"]


def test_resume_refuses_a_divergence_inside_the_prefix(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    record(path, [("step", {"n": 1}, "one"), ("step", {"n": 2}, "two")])
    with fd.Deck(path, mode="resume") as deck:
        assert deck.call("tool", "step", {"n": 1}, never) == "one"
        with pytest.raises(fd.ReplayMiss, match="seq 2: tool step") as info:
            deck.call("tool", "step", {"n": 5}, never)
    assert info.value.diff == (("args.n", 2, 5),)


def test_off_always_goes_live_and_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "off.jsonl"
    run = live(7)
    with fd.Deck(path, mode="off") as deck:
        assert deck.call("tool", "t", {"x": object()}, run) == 7
        assert deck.call("tool", "t", {}, run) == 7
    assert len(run.calls) == 2  # type: ignore[attr-defined]
    assert not path.exists()


def test_repeated_identical_calls_replay_in_recorded_order(tmp_path: Path) -> None:
    path = tmp_path / "fifo.jsonl"
    record(path, [("poll", {"job": 1}, {"state": s}) for s in ("queued", "running", "done")])
    with fd.Deck(path, mode="replay") as deck:
        states = [deck.call("tool", "poll", {"job": 1}, never)["state"] for _ in range(3)]
        assert states == ["queued", "running", "done"]
        with pytest.raises(fd.ReplayMiss, match="recorded 3 times and is now asked a 4th time"):
            deck.call("tool", "poll", {"job": 1}, never)
    report = deck.report()
    assert [(r.name, r.recorded, r.asked) for r in report.repeats] == [("poll", 3, 4)]


def test_keyed_matching_tolerates_reordering(cassette: Path) -> None:
    with fd.Deck(cassette, mode="replay") as deck:
        assert deck.call("tool", "read", {"path": "b.md"}, never) == {"bytes": 20}
        assert deck.call("tool", "read", {"path": "a.md"}, never) == {"bytes": 10}
        assert deck.call("tool", "search", {"q": "retry"}, never) == {"hits": 2}
    report = deck.report()
    assert report.order_changes == 2
    assert report.ok


def test_strict_matching_fails_on_any_reorder(cassette: Path) -> None:
    with fd.Deck(cassette, mode="replay", match="strict") as deck:
        assert deck.call("tool", "search", {"q": "retry"}, never) == {"hits": 2}
        with pytest.raises(fd.ReplayMiss, match="seq 2: tool read") as info:
            deck.call("tool", "read", {"path": "b.md"}, never)
    assert info.value.nearest is not None
    assert info.value.nearest["seq"] == 3


def test_strict_matching_replays_the_same_order(cassette: Path) -> None:
    with fd.Deck(cassette, mode="replay", match="strict") as deck:
        for _, args, out in BASE:
            assert deck.call("tool", str(_), args, never) == out
    assert deck.report().ok


def test_report_lists_unused_calls_with_their_lines(cassette: Path) -> None:
    with fd.Deck(cassette, mode="replay") as deck:
        deck.call("tool", "read", {"path": "a.md"}, never)
    report = deck.report()
    assert [(u.seq, u.name, u.line) for u in report.unused] == [(1, "search", 2), (3, "read", 4)]
    assert not report.ok
    text = str(report)
    assert "unused: seq 1 tool search" in text
    assert json.loads(json.dumps(report.to_dict()))["used"] == 1


def test_replayed_outputs_are_fresh_copies(tmp_path: Path) -> None:
    path = tmp_path / "copy.jsonl"
    record(path, [("t", {}, {"items": [1]}), ("t", {}, {"items": [1]})])
    with fd.Deck(path, mode="replay") as deck:
        first = deck.call("tool", "t", {}, never)
        first["items"].append(2)
        assert deck.call("tool", "t", {}, never) == {"items": [1]}


def test_a_non_json_argument_names_the_field(tmp_path: Path) -> None:
    args = {"messages": [{"a": 1}, {"when": datetime.datetime.now()}]}
    with fd.Deck(tmp_path / "x.jsonl", mode="record") as deck:
        with pytest.raises(fd.ArgumentError, match=r"args\.messages\[1\]\.when: datetime"):
            deck.call("model", "chat", args, never)
        with pytest.raises(fd.ArgumentError, match=r"args\.x: nan is not a JSON number"):
            deck.call("tool", "t", {"x": float("nan")}, never)
        deck.call("tool", "t", {"x": 1}, returns(1))
    # Each refused call kept its seq, and wrote no line.
    assert [e.seq for e in fd.load(tmp_path / "x.jsonl").entries] == [3]


def test_a_non_json_output_names_the_field(tmp_path: Path) -> None:
    with (
        fd.Deck(tmp_path / "x.jsonl", mode="record") as deck,
        pytest.raises(fd.ArgumentError, match=r"out of tool t at seq 1: out\.rows\[0\]: set"),
    ):
        deck.call("tool", "t", {}, lambda: {"rows": [{1, 2}]})


def test_repeats_last_gives_a_retried_call_its_answer_again(cassette: Path) -> None:
    with fd.Deck(cassette, mode="replay", repeats="last") as deck:
        assert deck.call("tool", "search", {"q": "retry"}, never) == {"hits": 2}
        assert deck.call("tool", "search", {"q": "retry"}, never) == {"hits": 2}
        with pytest.raises(fd.ReplayMiss):
            deck.call("tool", "search", {"q": "other"}, never)
    report = deck.report()
    assert [(r.name, r.recorded, r.asked) for r in report.repeats] == [("search", 1, 2)]
    with pytest.raises(fd.ConfigError, match="repeats 'always' is not one of: miss, last"):
        fd.Deck(cassette, repeats="always")  # type: ignore[arg-type]  # the wrong value is the test


# --- the mode decided, the recording read, async with -------------------------------------


@pytest.mark.parametrize(
    ("mode", "exists", "active"),
    [
        ("once", True, "replay"),
        ("once", False, "record"),
        ("replay", True, "replay"),
        ("record", True, "record"),
        ("append", True, "append"),
        ("off", False, "off"),
    ],
)
def test_active_mode_is_the_mode_decided_on_opening(
    tmp_path: Path, mode: fd.config.Mode, exists: bool, active: str
) -> None:
    path = tmp_path / "c.jsonl"
    if exists:
        with fd.Deck(path, mode="record") as deck:
            deck.call("tool", "t", {"n": 1}, lambda: 1)
    with fd.Deck(path, mode=mode) as deck:
        assert deck.active_mode == active
        recording = deck.recording
        if active in ("replay", "append"):
            assert recording is not None
            assert [e.name for e in recording.entries] == ["t"]
        else:
            assert recording is None


def test_a_deck_is_an_async_context_manager_too(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"

    async def run() -> int:
        async with fd.Deck(path, mode="record") as deck:
            return await deck.acall("tool", "t", {}, _one)

    assert asyncio.run(run()) == 1
    assert fd.load(path).end is not None, "closed with its end line"


async def _one() -> int:
    return 1
