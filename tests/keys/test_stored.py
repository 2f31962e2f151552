"""How a live output is stored: masked, its provider times scrubbed, its ids found, in one
walk that refuses what JSON cannot hold and names where. Only volatile fields are scrubbed:
a date-time anywhere else is content.
"""

from __future__ import annotations

import copy
import functools
import re
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import faultdeck as fd
from faultdeck import ArgumentError
from faultdeck._keys.outputs import PROVIDER_TIMES, check_json
from faultdeck._keys.redact import Redactor
from faultdeck._keys.stored import NotJSON, store_output


def test_the_provider_times_are_the_documented_list() -> None:
    assert frozenset({"created", "created_at", "completed_at", "createTime"}) == PROVIDER_TIMES


VOLATILE_SETS = st.sampled_from(
    [
        frozenset(),
        PROVIDER_TIMES,
        PROVIDER_TIMES | {"nonce", "trace"},
        frozenset({"nonce", "time", "date"}),  # declared by a project: any value scrubbed
    ]
)


def stored_as(out: Any, seq: int = 3, declared: frozenset[str] = frozenset()) -> Any:
    """``out`` as a recording with the default rules, plus ``declared``, stores it."""
    volatile = PROVIDER_TIMES | declared
    return store_output(out, seq, Redactor(), volatile=volatile, declared=declared, ids=True)


def test_a_stored_output_is_masked_its_provider_time_scrubbed_and_its_ids_found() -> None:
    out = {
        "id": "chatcmpl-9x8Yq2ZkT1",
        "created": 1764411948,
        "authorization": "Bearer abc",
        "items": [{"call_id": "call_a1b2c3d4e5f6", "at": "2026-05-01T10:00:00Z"}],
        "pair": ("sk-" + "live" + "Zq7Xw9" * 6, 1),
    }
    stored, found = stored_as(out)
    assert stored["created"] == 946684803
    assert "authorization" not in stored
    assert stored["items"][0]["at"] == "2026-05-01T10:00:00Z"  # content, as it came
    assert stored["pair"][0].startswith("«redacted:")
    assert found == ["chatcmpl-9x8Yq2ZkT1", "call_a1b2c3d4e5f6"]


CONTENT = {
    "timezone": "Asia/Tokyo",
    "datetime": "2026-12-06T16:14:01+09:00",
    "is_dst": False,
    "time": 1764411948,
    "date": "2026-12-06",
    "timestamp": 1764411948123,
    "updated_at": "2026-12-06 16:14",
    "text": "2026-12-06T16:14:01+09:00",
    "events": [{"at": "2026-12-06T07:14:01Z", "ts": 1.7644e9}],
    "stream": {"events": [{"ms": 3, "data": {"delta": {"content": "2026-12-06T07:14:01Z"}}}]},
}
"""A tool's result full of wall-clock values, none of them in a volatile field."""


def test_date_times_and_epochs_in_content_are_stored_byte_for_byte() -> None:
    stored, _ = stored_as(CONTENT)
    assert orjson.dumps(stored) == orjson.dumps(CONTENT)


@pytest.mark.parametrize(
    ("value", "placeholder"),
    [
        (1764411948, 946684803),  # OpenAI's epoch seconds
        (1764411948.5, 946684803.0),
        (1764411948123, 946684803000),  # milliseconds
        ("2023-08-04T08:52:19.385406455-07:00", "2000-01-01T00:00:03.000000000-07:00"),  # Ollama
        ("2026-12-06", "2000-01-01"),
        ("soon", "soon"),  # not a time: a provider name scrubs wall-clock values only
        (3, 3),
        (None, None),
        (True, True),
    ],
)
def test_a_provider_time_field_keeps_its_type_and_format(value: Any, placeholder: Any) -> None:
    for name in sorted(PROVIDER_TIMES):
        out = {"content": "2026-12-06T16:14:01Z", "nested": [{name: value}]}
        stored, _ = stored_as(out)
        assert orjson.dumps(stored["nested"][0][name]) == orjson.dumps(placeholder)
        assert stored["content"] == "2026-12-06T16:14:01Z"


def test_a_declared_volatile_field_is_scrubbed_whatever_it_holds() -> None:
    out = {"trace": "t-8f3k2", "nonce": 12345, "at": [{"trace": "2026-12-06T16:14:01Z"}]}
    stored, _ = stored_as(out, 4, frozenset({"trace", "nonce"}))
    assert stored == {
        "trace": "«volatile»",
        "nonce": 0,
        "at": [{"trace": "2000-01-01T00:00:04Z"}],
    }
    assert stored_as(out)[0] == out  # undeclared, the same fields are content


# -- the JSON check the walk does as it goes -------------------------------------------------

NOT_JSON = st.sampled_from([object(), float("nan"), float("inf"), 2**64, -(2**63) - 1, {1: "x"}])
"""Values an answer cannot hold as JSON: each is refused where check_json refuses it."""

LEAF = st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.floats() | st.text()
KEY = st.sampled_from(["id", "created", "created_at", "nonce", "password", "q"]) | st.text()
MAYBE_JSON = st.recursive(
    LEAF | NOT_JSON,
    lambda kids: (
        st.lists(kids, max_size=3)
        | st.lists(kids, max_size=3).map(tuple)
        | st.dictionaries(KEY | st.sampled_from(["authorization", "api_key"]), kids, max_size=4)
    ),
    max_leaves=8,
)


@settings(max_examples=400, deadline=None)
@given(out=MAYBE_JSON, volatile=VOLATILE_SETS, ids=st.booleans())
def test_the_walk_refuses_exactly_what_check_json_refuses(
    out: Any, volatile: frozenset[str], ids: bool
) -> None:
    try:
        check_json(out, "out")
    except ArgumentError:
        refused = True
    else:
        refused = False
    declared = volatile - PROVIDER_TIMES
    if refused:
        with pytest.raises(NotJSON):
            store_output(out, 1, Redactor(), volatile=volatile, declared=declared, ids=ids)
    else:
        store_output(out, 1, Redactor(), volatile=volatile, declared=declared, ids=ids)


@pytest.mark.parametrize(
    ("out", "path"),
    [
        ({"authorization": object()}, "out.authorization"),  # dropped, still not JSON
        ({"rows": ({"n": float("nan")},)}, "out.rows[0].n"),  # inside a tuple
        ({"total": 2**64}, "out.total"),
    ],
)
def test_a_live_answer_json_cannot_hold_is_named_and_not_written(
    tmp_path: Any, out: Any, path: str
) -> None:
    cassette = tmp_path / "c.jsonl"
    with fd.Deck(cassette, mode="record") as deck:
        with pytest.raises(ArgumentError, match=re.escape(path)):
            deck.call("tool", "search", {"q": 1}, lambda: out)
        deck.call("tool", "search", {"q": 2}, lambda: {"ok": True})
    entries = fd.load(cassette).entries
    assert [(e.seq, e.args) for e in entries] == [(2, {"q": 2})]


def test_a_recording_stores_each_answer_on_its_own_line_with_its_own_ids(tmp_path: Any) -> None:
    # A run makes its walk once (``output_store``): every line still gets what
    # ``store_output`` makes of that answer alone, at that call's seq, and only its ids.
    outs = [
        {"id": "chatcmpl-9x8Yq2ZkT1", "created": 1764411948, "text": "retry budget, section two"},
        {"hits": ["docs/retry-budget.md"], "at": "2026-05-01T10:00:00Z"},
        {"items": [{"call_id": "call_a1b2c3d4e5f6"}], "key": "sk-" + "live" + "Zq7Xw9" * 6},
        {"id": "chatcmpl-7a6B5c4D3e2", "created": 1764411999},
    ]
    cassette = tmp_path / "c.jsonl"
    with fd.Deck(cassette, mode="record") as deck:
        for i, out in enumerate(outs):
            deck.call("tool", "search", {"q": i}, functools.partial(copy.deepcopy, out))
    lines = [orjson.loads(line) for line in cassette.read_bytes().splitlines()[1:-1]]
    assert [line["seq"] for line in lines] == [1, 2, 3, 4]
    for line, out in zip(lines, outs, strict=True):
        stored, found = stored_as(out, line["seq"])
        assert line["out"] == stored
        assert line["ids"] == found
    assert [line["ids"] for line in lines] == [
        ["chatcmpl-9x8Yq2ZkT1"],
        [],
        ["call_a1b2c3d4e5f6"],
        ["chatcmpl-7a6B5c4D3e2"],
    ]
    assert lines[0]["out"]["created"] != lines[3]["out"]["created"]  # each call's own seq
    assert lines[1]["out"]["at"] == "2026-05-01T10:00:00Z"  # content, as it came
