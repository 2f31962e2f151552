"""Cassette format v1: what is written, and every way reading can fail."""

from __future__ import annotations

import hashlib
import json
import pickle
from pathlib import Path
from typing import Any

import pytest

import faultdeck as fd
from faultdeck._keys.canonical import make_key
from tests.support.calls import returns, rules


def record_three(path: Path) -> None:
    with fd.Deck(path, mode="record", on_harness_change="ignore") as deck:
        for i in range(3):
            deck.call("tool", "echo", {"i": i}, returns({"echo": i}))


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_written_lines_follow_the_format(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    record_three(path)
    lines = [json.loads(line) for line in path.read_text("utf-8").splitlines()]
    header, *calls, end = lines
    assert header["faultdeck"] == 1
    assert header["match"] == "keyed"
    assert {"harness", "env", "volatile"} <= header.keys()
    assert [c["seq"] for c in calls] == [1, 2, 3]
    for i, call in enumerate(calls):
        assert call["kind"] == "tool"
        assert call["name"] == "echo"
        assert call["key"] == make_key("tool", "echo", {"i": i})
        assert call["args"] == {"i": i}
        assert call["out"] == {"echo": i}
        assert isinstance(call["ms"], (int, float))
        assert "error" not in call
        assert "stream" not in call
    assert end == {"end": {"calls": 3, "status": "ok", "rules": rules()}}


def test_provider_times_are_placeholders_and_content_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    answer = {"created": 1732873000, "text": "yo, it is 2026-11-29T10:25:48Z", "time": 1732873000}
    with fd.Deck(path, mode="record") as deck:
        deck.call("model", "chat", {"q": "hi"}, lambda: answer)
    header, call, _ = (json.loads(line) for line in path.read_text("utf-8").splitlines())
    assert call["out"] == {**answer, "created": 946684800 + 1}
    assert {"created", "created_at", "completed_at", "createTime"} <= set(header["volatile"])


def test_load_round_trips_entries(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    record_three(path)
    recording = fd.load(path)
    assert not recording.interrupted
    assert [e.seq for e in recording.entries] == [1, 2, 3]
    assert [e.line for e in recording.entries] == [2, 3, 4]
    assert recording.entries[2].result == "out"
    assert recording.entries[2].value == {"echo": 2}
    assert recording.entries[2].ids == ()  # the line lists the ids its answer hands out
    mine = recording.entries[2].fresh_value()
    mine["echo"] = "changed"
    assert recording.entries[2].value == {"echo": 2}
    assert recording.entries[2].fresh_value() is not recording.entries[2].fresh_value()
    assert pickle.loads(pickle.dumps(recording.entries)) == fd.load(path).entries


def write_lines(path: Path, *lines: str) -> None:
    path.write_text("".join(line + "\n" for line in lines), "utf-8")


HEADER = '{"faultdeck": 1, "match": "keyed", "harness": {}, "env": {}, "volatile": []}'
CALL = (
    '{"seq": 1, "kind": "tool", "name": "t", "key": "tool:0000000000000000", '
    '"args": {}, "out": 1, "ms": 0}'
)


@pytest.mark.parametrize(
    ("lines", "line", "says"),
    [
        ([HEADER, CALL, "{not json"], 3, "not JSON"),
        ([HEADER, "[1, 2]"], 2, "must be a JSON object"),
        ([HEADER, '{"hello": 1}'], 2, "neither a call"),
        ([HEADER, CALL.replace('"kind": "tool"', '"kind": "tol"')], 2, "kind 'tol'"),
        ([HEADER, CALL.replace('"out": 1, ', "")], 2, "exactly one of out, error, stream"),
        ([HEADER, CALL.replace('"out": 1', '"out": 1, "error": {"type": "X"}')], 2, "found out"),
        ([HEADER, CALL.replace('"seq": 1', '"seq": 0')], 2, "seq 0 is not a positive"),
        ([HEADER, CALL.replace('"ms": 0', '"ms": -3')], 2, "not a duration"),
        ([HEADER, CALL.replace('"out": 1', '"out": 1e400')], 2, "not JSON"),
        ([HEADER, CALL.replace('"name": "t"', '"name": ""')], 2, "name is missing"),
        ([HEADER, CALL.replace('"ms": 0', '"ms": 0, "ids": ["a", 2]')], 2, "seq 1: ids must"),
        ([HEADER, CALL, CALL.replace('"ms": 0', '"ms": 0, "ids": "a"')], 3, "ids must be a list"),
        ([HEADER, CALL.replace("tool:0000", "model:00")], 2, "does not start with 'tool:'"),
        (['{"seq": 1}'], 1, "no header"),
        (["garbage"], 1, "header is not JSON"),
    ],
)
def test_corrupt_lines_name_file_and_line(
    tmp_path: Path, lines: list[str], line: int, says: str
) -> None:
    path = tmp_path / "bad.jsonl"
    write_lines(path, *lines)
    with pytest.raises(fd.CassetteCorrupt) as info:
        fd.load(path)
    message = str(info.value)
    assert message.startswith(f"{path}:{line}: ")
    assert says in message
    assert "restore it" in message or "faultdeck cassette" in message
    assert info.value.line == line


@pytest.mark.parametrize("bad", [b"1e400", b'"\xff"'], ids=["too large", "not UTF-8"])
def test_a_bad_line_among_thousands_is_named_by_its_own_number(tmp_path: Path, bad: bytes) -> None:
    lines = [CALL.encode().replace(b'"seq": 1', b'"seq": %d' % n) for n in range(1, 3001)]
    lines[2500] = lines[2500].replace(b'"out": 1', b'"out": ' + bad)
    path = tmp_path / "long.jsonl"
    path.write_bytes(b"\n".join([HEADER.encode(), *lines]) + b"\n")
    with pytest.raises(fd.CassetteCorrupt, match=r"long\.jsonl:2502: not JSON") as info:
        fd.load(path)
    assert info.value.line == 2502


def test_newer_format_version_is_refused_with_the_version_we_read(tmp_path: Path) -> None:
    path = tmp_path / "future.jsonl"
    write_lines(path, HEADER.replace('"faultdeck": 1', '"faultdeck": 2'))
    with pytest.raises(fd.CassetteVersionError, match=r"format 2; this faultdeck reads format 1"):
        fd.load(path)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(fd.CassetteNotFound, match=r"nope\.jsonl: no such cassette; record it"):
        fd.load(tmp_path / "nope.jsonl")


def test_truncated_last_line_is_reported_and_skipped(tmp_path: Path) -> None:
    path = tmp_path / "crash.jsonl"
    record_three(path)
    lines = path.read_bytes().splitlines(keepends=True)
    # Drop the end line and cut the last call in half, as a crash mid-write leaves it.
    path.write_bytes(b"".join(lines[:3]) + lines[3][:20])
    with pytest.warns(fd.CassetteWarning, match=r"crash\.jsonl:4: truncated last line skipped"):
        recording = fd.load(path)
    assert [e.seq for e in recording.entries] == [1, 2]
    assert recording.truncated_line == 4
    assert recording.interrupted


@pytest.mark.parametrize("mode", ["replay", "append", "resume", "once"])
def test_a_corrupt_cassette_is_left_untouched_in_every_mode(
    tmp_path: Path, mode: fd.config.Mode
) -> None:
    path = tmp_path / "bad.jsonl"
    write_lines(path, HEADER, CALL, "{oops")
    before = digest(path)
    with pytest.raises(fd.CassetteCorrupt, match=r"bad\.jsonl:3: not JSON"):
        fd.Deck(path, mode=mode).open()
    assert digest(path) == before
    assert not Path(str(path) + ".lock").exists()


def test_an_unknown_mode_touches_nothing(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    record_three(path)
    before = digest(path)
    with pytest.raises(fd.ConfigError, match=r"mode 'recrod' is not one of: replay, record"):
        fd.Deck(path, mode="recrod")  # type: ignore[arg-type]  # the wrong value is the test
    assert digest(path) == before


def test_fsync_durability_writes_the_same_lines(tmp_path: Path) -> None:
    flushed, synced = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    for path, durability in ((flushed, "flush"), (synced, "fsync")):
        with fd.Deck(path, mode="record", durability=durability) as deck:  # type: ignore[arg-type]
            deck.call("tool", "t", {"x": 1}, lambda: [1, 2])

    def without_ms(path: Path) -> list[dict[str, object]]:
        lines = [json.loads(line) for line in path.read_text("utf-8").splitlines()]
        return [{k: v for k, v in line.items() if k != "ms"} for line in lines]

    assert without_ms(flushed) == without_ms(synced)


def test_each_line_is_on_disk_before_the_call_returns(tmp_path: Path) -> None:
    path = tmp_path / "wal.jsonl"

    def read() -> list[dict[str, Any]]:
        return [json.loads(line) for line in path.read_text("utf-8").splitlines()]

    deck = fd.Deck(path, mode="record")
    deck.open()
    deck.call("tool", "t", {"x": 1}, lambda: 1)
    # Another reader sees the line while the deck is still open (after the call's intent).
    assert [next(iter(line)) for line in read()] == ["faultdeck", "begin", "seq"]
    assert fd.load(path).entries[0].value == 1
    deck.call("env", "clock", {}, lambda: 5)  # an environment read writes no intent
    seen: list[dict[str, Any]] = []
    deck.call("tool", "t", {"x": 2}, lambda: seen.extend(read()))  # the intent is on disk first
    assert [next(iter(line)) for line in seen[1:]] == ["begin", "seq", "seq", "begin"]
    assert seen[-1]["begin"] == 3
    deck.close()
