"""A large cassette's common lines, read in one step (``_cassette/held.py``), read exactly as
the line-by-line route reads them: the same entries, field for field and type for type, and
the same error, naming the same line, for a line either route refuses.

``parse(data, hold=True)`` takes the one-step route for the lines it can; ``hold=False``
reads every line with orjson and checks it line by line. Values msgspec skips over without
orjson's checks (bytes that are not UTF-8, numbers too large for a float, integers past 64
bits) are planted on purpose, at every place a line holds a value, and random byte edits of
whole cassettes do the rest.
"""

from __future__ import annotations

import warnings
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from faultdeck._base.errors import CassetteCorrupt
from faultdeck._cassette import held
from faultdeck._cassette.format import HeldEntry
from faultdeck._cassette.reader import HOLD_LINES_BELOW, parse

HEADER = b'{"faultdeck":1,"match":"keyed","harness":{},"env":{},"volatile":[]}'
END = b'{"end":{"status":"ok","calls":3}}'


def line(seq: int, args: bytes = b'{"q":1}', out: bytes = b"[1]", extra: bytes = b"") -> bytes:
    return (
        b'{"seq":%d,"kind":"tool","name":"search","key":"tool:7e513a","args":%s,"out":%s,'
        b'"ms":0.5%s}' % (seq, args, out, extra)
    )


def cassette(*lines: bytes) -> bytes:
    return b"\n".join((HEADER, *lines, END)) + b"\n"


KEPT = ("seq", "kind", "name", "key", "ms", "step", "schema", "ids")


def read(data: bytes, *, hold: bool) -> tuple[str, Any]:
    """What reading ``data`` gives: its entries and the rest, each field with its type, or
    the error."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            rec = parse(data, "c.jsonl", hold=hold)
        except CassetteCorrupt as exc:
            return "error", str(exc)
    # The line as JSON tells 1 from 1.0 and true; the fields kept parsed, by their types too.
    entries = [
        (e.line, orjson.dumps(e.to_json()), [type(getattr(e, f)) for f in KEPT])
        for e in rec.entries
    ]
    rest = (rec.end, rec.intents, rec.aborted, rec.truncated_line, rec.rules, dict(rec.bodies))
    return "read", (entries, rest)


def same(data: bytes) -> tuple[str, Any]:
    held_read = read(data, hold=True)
    assert held_read == read(data, hold=False)
    return held_read


def test_common_lines_are_taken_in_one_step_and_read_as_parsed() -> None:
    raws = [line(n) for n in range(1, 3)] + [
        line(3, args='{"q":"café ☕"}'.encode()),
        line(4, extra=b',"step":{"n":[1,2.5,null]},"schema":"v2","meta":{"m":1},"ids":["a"]'),
    ]
    made, every = held.entries(raws, 2, HOLD_LINES_BELOW)
    assert every
    assert all(type(e) is HeldEntry for e in made)
    kind, _ = same(cassette(*raws))
    assert kind == "read"
    rec = parse(cassette(*raws), hold=True)
    assert rec.entries[3].step == {"n": [1, 2.5, None]}
    assert rec.entries[3].ids == ("a",)
    assert rec.entries[0].ids is None
    assert rec.entries[3].schema == "v2"


# Values orjson refuses or reads otherwise than msgspec would, at every place a value goes.
PLANTED = [
    b"1e400",
    b"-1.8e308",
    b"1.7976931348623159e308",
    b"1E+309",
    b"1" + b"0" * 400,
    b"-" + b"9" * 309,
    b"18446744073709551616",
    b"123456789012345678901234567890",
    b'"\xff"',
    b'"\xed\xa0\x80"',
    b'"\xc0\x80"',
    b'"\\ud800"',
    b"[" * 1100 + b"]" * 1100,
    b"1e-400",
    b'"7e513"',
    b'"digits 0e000 and ' + b"5" * 120 + b'"',
]
PLACES = [
    lambda v: line(2, args=b'{"q":%s}' % v),
    lambda v: line(2, out=b"[%s]" % v),
    lambda v: line(2, extra=b',"meta":%s' % v),
    lambda v: line(2, extra=b',"step":{"s":%s}' % v),
    lambda v: line(2, extra=b',"ids":[%s]' % v),
    lambda v: line(2, extra=b',"schema":%s' % v),
    lambda v: line(2, extra=b',"ms":%s' % v.lstrip(b"-")),
    lambda v: line(2).replace(b'"seq":2', b'"seq":%s' % v.lstrip(b"-")),
    lambda v: line(2).replace(b'"search"', v),
]


@pytest.mark.parametrize("value", PLANTED, ids=range(len(PLANTED)))
@pytest.mark.parametrize("place", range(len(PLACES)))
def test_a_value_msgspec_would_let_through_is_read_as_orjson_reads_it(
    value: bytes, place: int
) -> None:
    same(cassette(line(1), PLACES[place](value), line(3)))


def test_a_number_too_large_is_refused_naming_its_line_among_many() -> None:
    lines = [line(n) for n in range(1, 3001)]
    lines[2500] = line(2501, out=b'{"total":1e400}')
    kind, message = same(cassette(*lines))
    assert kind == "error"
    assert "c.jsonl:2502" in message
    assert "not JSON" in message


def test_bytes_that_are_not_utf8_are_refused_naming_their_line() -> None:
    kind, message = same(cassette(line(1), line(2, args=b'{"q":"\xff"}'), line(3)))
    assert kind == "error"
    assert "c.jsonl:3" in message


def test_other_lines_among_common_ones_read_line_by_line() -> None:
    lines = [line(n) for n in range(1, 2000)]
    lines[10] = b'{"begin":11,"kind":"tool","name":"search","key":"tool:7e513a"}'
    lines[20] = line(21, out=b'{"type":"E"}').replace(b'"out"', b'"error"')
    lines[1500] = END
    lines[1501] = line(1502, out=b"[" + b"1" * 150 + b"]")
    kind, (entries, rest) = same(cassette(*lines))
    assert kind == "read"
    assert len(entries) == 1997
    assert rest[1][0].seq == 11


def test_a_long_line_stays_parsed() -> None:
    long = line(2, out=b'"' + b"x" * HOLD_LINES_BELOW + b'"')
    made, every = held.entries([line(1), long], 2, HOLD_LINES_BELOW)
    assert made[1] is None
    assert not every
    same(cassette(line(1), long, line(3)))


# Bytes an edit puts in: what JSON is made of, and what is not UTF-8.
BYTES = st.sampled_from([bytes([b]) for b in b'019eE+-."\\{}[],: unt\n\x00\xff\xc3\xa9'])
VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)


@st.composite
def cassettes(draw: st.DrawFn) -> bytes:
    lines = []
    for seq in range(1, draw(st.integers(1, 6)) + 1):
        obj: dict[str, Any] = {"seq": seq, "kind": draw(st.sampled_from(["tool", "model", "env"]))}
        obj["name"] = draw(st.text(min_size=1, max_size=6))
        obj["key"] = obj["kind"] + ":" + draw(st.text("0123456789abcdef", max_size=16))
        for field in ("args", "out", "step", "meta"):
            if field in ("args", "out") or draw(st.booleans()):
                obj[field] = draw(VALUES)
        obj["ms"] = draw(st.integers(0, 2**64) | st.floats(0, 1e300))
        if draw(st.booleans()):
            obj["ids"] = draw(st.lists(st.text(max_size=6), max_size=2))
        try:
            lines.append(orjson.dumps(obj, option=orjson.OPT_NON_STR_KEYS))
        except orjson.JSONEncodeError:  # an integer past 64 bits
            lines.append(repr(obj).encode())
    data = cassette(*lines)
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.integers(len(HEADER) + 1, len(data) - 1))
        edit = draw(st.sampled_from(["insert", "replace", "delete"]))
        byte = draw(BYTES)
        if edit == "insert":
            data = data[:at] + byte + data[at:]
        elif edit == "replace":
            data = data[:at] + byte + data[at + 1 :]
        else:
            data = data[:at] + data[at + 1 :]
    return data


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cassettes())
def test_any_cassette_reads_the_same_either_way(data: bytes) -> None:
    same(data)
