"""Entries that keep their line: a long cassette is held as its lines, parsed when read.

A ``HeldEntry`` must read exactly as the ``Entry`` of a full parse (every attribute, as a
tuple, as JSON, pickled), a corrupt line must be refused at load as before, and
``fresh_value()`` must give an object nothing else sees.
"""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import orjson
import pytest

import faultdeck as fd
from faultdeck._cassette.format import Entry, HeldEntry, held_after
from faultdeck._cassette.reader import HOLD_LINES_FROM, parse

HEADER = {"faultdeck": 1, "match": "keyed", "harness": {}, "env": {}, "volatile": []}


def data(*lines: dict[str, Any]) -> bytes:
    return b"".join(orjson.dumps(obj) + b"\n" for obj in (HEADER, *lines))


def call(seq: int = 1, **fields: Any) -> dict[str, Any]:
    line: dict[str, Any] = {"seq": seq, "kind": "tool", "name": "t", "key": "tool:0"}
    line.update({"args": {"q": seq}, **fields})
    return line


LINES = [
    call(1, out={"hits": ["a", "b"], "total": 2}, ms=1.5),
    call(2, out=[1, 2, {"x": None}], step="plan", schema="v2", meta={"order": 3}),
    call(3, error={"type": "TimeoutError", "message": "slow"}, fault={"fault": "timeout"}),
    call(4, stream={"events": [{"ms": 1, "data": "x"}], "status": 200, "headers": {}}),
    call(
        5, kind="http", name="GET /x", key="http:1", out={"status": 200, "headers": {}, "body": 1}
    ),
    call(6, out="text", ids=["run_1", "msg_2"]),
    call(7, out=None, ids=[]),
]
FIELDS = Entry._fields


def both() -> tuple[tuple[Entry, ...], tuple[Entry, ...]]:
    raw = data(*LINES)
    return parse(raw, "c.jsonl", hold=True).entries, parse(raw, "c.jsonl", hold=False).entries


def test_held_entries_read_as_a_full_parse() -> None:
    held, parsed = both()
    assert all(type(e) is HeldEntry for e in held)
    assert not any(isinstance(e, HeldEntry) for e in parsed)
    for h, p in zip(held, parsed, strict=True):
        assert [getattr(h, f) for f in FIELDS] == [getattr(p, f) for f in FIELDS]
        assert h == p
        assert p == h
        assert not h != p  # noqa: SIM202 - the operator itself is under test
        assert tuple(h) == tuple(p)
        assert h[4] == p.args
        assert h.to_json() == p.to_json()
        assert h._asdict() == p._asdict()
        assert repr(h) == repr(p)
        assert h._replace(ms=9.0) == p._replace(ms=9.0)
        again = pickle.loads(pickle.dumps(h))
        assert type(again) is HeldEntry
        assert again == p
    assert parsed[1].meta == {"order": 3}
    assert parsed[5].ids == ("run_1", "msg_2")
    assert parsed[6].ids == ()
    assert parsed[0].ids is None


def test_to_json_writes_ids_only_when_there_are_some() -> None:
    held, parsed = both()
    assert "ids" not in parsed[0].to_json()
    assert parsed[5].to_json()["ids"] == ["run_1", "msg_2"]
    [back] = parse(data(held[5].to_json()), hold=True).entries
    assert back.to_json() == held[5].to_json()
    assert back.ids == held[5].ids


def test_a_long_cassette_holds_its_lines_and_a_short_one_does_not(tmp_path: Path) -> None:
    short = tmp_path / "short.jsonl"
    short.write_bytes(data(*LINES))
    line = call(1, out={"pad": "x" * 200})
    count = HOLD_LINES_FROM // len(orjson.dumps(line)) + 1
    long = tmp_path / "long.jsonl"
    long.write_bytes(data(*(call(i, out={"pad": "x" * 200}) for i in range(1, count + 1))))
    assert not any(isinstance(e, HeldEntry) for e in fd.load(short).entries)
    entries = fd.load(long).entries
    assert len(entries) == count
    assert all(type(e) is HeldEntry for e in entries)
    assert entries[-1].value == {"pad": "x" * 200}
    assert entries[-1].args == {"q": count}
    assert entries[-1].name is entries[0].name  # one shared string for every line's name


@pytest.mark.parametrize("hold", [True, False])
def test_fresh_value_is_the_callers_own(hold: bool) -> None:
    [entry] = parse(data(call(out={"hits": ["a"], "n": {"k": 1}})), hold=hold).entries
    mine = entry.fresh_value()
    mine["hits"].append("changed")
    mine["n"]["k"] = 2
    assert entry.value == {"hits": ["a"], "n": {"k": 1}}
    assert entry.fresh_value() == {"hits": ["a"], "n": {"k": 1}}
    assert entry.fresh_value() is not entry.fresh_value()


def test_fresh_value_of_a_built_entry_is_a_copy() -> None:
    value = {"a": [1, 2]}
    entry = Entry(1, "tool", "t", "tool:0", {}, "out", value)  # positional, as the deck builds
    mine = entry.fresh_value()
    assert mine == value
    mine["a"].append(3)
    assert value == {"a": [1, 2]}
    assert entry.ids is None


@pytest.mark.parametrize("ids", ["run_1", [1], ["a", 2], {"a": "b"}, [["a"]], 3, True])
@pytest.mark.parametrize("hold", [True, False])
@pytest.mark.parametrize("result", [{"out": 1}, {"error": {"type": "E"}}])
def test_a_corrupt_ids_field_is_one_error_at_its_line(
    ids: Any, hold: bool, result: dict[str, Any]
) -> None:
    raw = data(call(1, out=1), call(2, ids=ids, **result))
    with pytest.raises(fd.CassetteCorrupt) as caught:
        parse(raw, "c.jsonl", hold=hold)
    message = str(caught.value)
    assert "c.jsonl:3" in message
    assert "seq 2: ids must be a list of strings" in message


def test_a_corrupt_ids_field_is_refused_by_load(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_bytes(data(call(1, out=1, ids="x")))
    with pytest.raises(fd.CassetteCorrupt, match=r"c\.jsonl:2.*ids must be a list of strings"):
        fd.load(path)


@pytest.mark.parametrize(
    ("line", "says"),
    [
        (call(out=1, ms=-1), "ms -1 is not a duration"),
        (call(out=1, kind=["tool"]), "kind ['tool'] is not one of"),
        (call(out=1, name=""), "name is missing"),
        (call(out=1, fault="quota"), "fault must be an object"),
        (call(out=1, schema=2), "schema must be a string"),
        (call(out=1, error={"type": "E"}), "exactly one of out, error, stream"),
    ],
)
def test_held_or_not_a_corrupt_line_gives_the_same_error(line: dict[str, Any], says: str) -> None:
    messages = []
    for hold in (True, False):
        with pytest.raises(fd.CassetteCorrupt) as caught:
            parse(data(line), "c.jsonl", hold=hold)
        messages.append(str(caught.value))
    assert messages[0] == messages[1]
    assert "c.jsonl:2" in messages[0]
    assert says in messages[0]


def held(raw: bytes) -> HeldEntry:
    (entry,) = parse(orjson.dumps(HEADER) + b"\n" + raw + b"\n", hold=True).entries
    assert type(entry) is HeldEntry
    assert entry.plain  # taken in one step: msgspec reads its args and answer
    return entry


def searched(raw: bytes) -> HeldEntry:
    """``raw`` held as the line-by-line route holds a line (not plain): a replay finds its
    args by searching the line."""
    fields = list(tuple.__iter__(held(raw)))
    fields[6] = None
    return tuple.__new__(HeldEntry, fields)


@pytest.mark.parametrize("hold", [held, searched])
def test_a_held_line_is_read_past_its_args_when_it_stores_them_as_written(hold: Any) -> None:
    line = call(7, out={"hits": ["a"]}, ms=0.5, ids=[])
    line["args"] = {"q": "x", "n": [1, {"args": 2}]}
    entry = hold(orjson.dumps(line))
    form = orjson.dumps(line["args"])
    first, second = held_after(entry, form), held_after(entry, form)
    assert first is not None
    assert second is not None
    assert first["out"] == {"hits": ["a"]}
    assert first["out"] is not second["out"]  # each read a fresh parse
    assert held_after(entry, orjson.dumps({"q": "x"})) is None
    assert held_after(entry, orjson.dumps({"q": "x", "n": [1, {"args": 3}]})) is None
    crlf = hold(orjson.dumps(line) + b"\r")
    assert held_after(crlf, form) == held_after(entry, form)


@pytest.mark.parametrize("hold", [held, searched])
@pytest.mark.parametrize(
    "raw",
    [
        # "args" named first inside another field: the line's own are others
        b'{"seq":1,"kind":"tool","name":"t","key":"tool:k","meta":{"args":{"q":1}},"args":{"q":2},"out":1}',
        # named twice: the last counts
        b'{"seq":1,"kind":"tool","name":"t","key":"tool:k","args":{"q":1},"out":1,"args":{"q":2}}',
        # written with a space: not as orjson writes it, so the parsed line is compared
        b'{"seq":1,"kind":"tool","name":"t","key":"tool:k","args":{"q": 1},"out":1}',
    ],
)
def test_a_held_line_that_does_not_store_the_args_as_written_is_not_read_past_them(
    raw: bytes, hold: Any
) -> None:
    assert held_after(hold(raw), orjson.dumps({"q": 1})) is None


@pytest.mark.parametrize(
    "raw",
    [
        # a brace in a string before the args
        b'{"seq":1,"kind":"tool","name":"t{","key":"tool:k","args":{"q":1},"out":1}',
        # a space before them
        b'{"seq":1,"kind":"tool","name":"t","key":"tool:k","args": {"q":1},"out":1}',
        # the args last: nothing after them
        b'{"seq":1,"kind":"tool","name":"t","key":"tool:k","out":1,"args":{"q":1}}',
        # the answer before the args
        b'{"seq":1,"kind":"tool","name":"t","key":"tool:k","out":1,"args":{"q":1},"ms":1}',
    ],
)
def test_a_line_stored_so_is_read_whole_by_msgspec_and_left_to_the_parse_when_searched(
    raw: bytes,
) -> None:
    # msgspec reads the line's own args as their bytes, wherever they stand; a search for
    # them is unsure of such a line, and the caller compares the parsed line instead.
    form = orjson.dumps({"q": 1})
    assert held_after(held(raw), form) == {"out": 1}
    assert held_after(searched(raw), form) is None


def test_args_named_again_inside_a_later_field_are_not_the_lines_own() -> None:
    raw = b'{"seq":1,"kind":"tool","name":"t","key":"tool:k","args":{"q":1},"out":{"args":1}}'
    assert held_after(held(raw), orjson.dumps({"q": 1})) == {"out": {"args": 1}}
