"""The fused walk that stores a live output, against the three walks it stands for.

``store_output`` must store what ``redact(scrub(out, seq))`` stores, with the ids
``collect_ids`` finds in that, for any output: the frozen reference's walks are the oracle.
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
from faultdeck._keys.outputs import check_json
from faultdeck._keys.redact import Redactor
from faultdeck._keys.stored import NotJSON, store_output
from tests.keys.reference.ids import collect_ids
from tests.keys.reference.outputs import scrub
from tests.keys.reference.redact import Redactor as ReferenceRedactor
from tests.keys.test_differential import EXTRA, JSON, KEY, LEAF, OUTPUT


def reference(out: Any, seq: int, redactor: ReferenceRedactor, scrubs: bool, ids: bool) -> Any:
    stored = redactor.redact(scrub(out, seq) if scrubs else out)
    found: list[str] = []
    if ids:
        collect_ids(stored, None, found)
    return stored, found


@pytest.mark.parametrize("extra", [(), EXTRA])
@settings(max_examples=300, deadline=None)
@given(
    out=OUTPUT | JSON | st.lists(OUTPUT, max_size=3) | st.tuples(OUTPUT, JSON),
    seq=st.integers(min_value=1, max_value=5000),
    scrubs=st.booleans(),
    ids=st.booleans(),
)
def test_one_walk_stores_what_the_three_walks_store(
    extra: Any, out: Any, seq: int, scrubs: bool, ids: bool
) -> None:
    expected = reference(out, seq, ReferenceRedactor(extra_patterns=extra), scrubs, ids)
    got = store_output(out, seq, Redactor(extra_patterns=extra), scrub=scrubs, ids=ids)
    # Byte for byte as written (key order and types), and the same ids in the same order.
    assert orjson.dumps(got[0]) == orjson.dumps(expected[0])
    assert got[1] == expected[1]


def test_a_stored_output_is_masked_scrubbed_and_its_ids_found() -> None:
    out = {
        "id": "chatcmpl-9x8Yq2ZkT1",
        "created": 1764411948,
        "authorization": "Bearer abc",
        "items": [{"call_id": "call_a1b2c3d4e5f6", "at": "2026-05-01T10:00:00Z"}],
        "pair": ("sk-" + "live" + "Zq7Xw9" * 6, 1),
    }
    stored, found = store_output(out, 3, Redactor(), scrub=True, ids=True)
    assert stored["created"] == 946684803
    assert "authorization" not in stored
    assert stored["items"][0]["at"] == "2000-01-01T00:00:03Z"
    assert stored["pair"][0].startswith("«redacted:")
    assert found == ["chatcmpl-9x8Yq2ZkT1", "call_a1b2c3d4e5f6"]


# -- the JSON check the walk does as it goes -------------------------------------------------

NOT_JSON = st.sampled_from([object(), float("nan"), float("inf"), 2**64, -(2**63) - 1, {1: "x"}])
"""Values an answer cannot hold as JSON: each is refused where check_json refuses it."""

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
@given(out=MAYBE_JSON, scrubs=st.booleans(), ids=st.booleans())
def test_the_walk_refuses_exactly_what_check_json_refuses(
    out: Any, scrubs: bool, ids: bool
) -> None:
    try:
        check_json(out, "out")
    except ArgumentError:
        refused = True
    else:
        refused = False
    if refused:
        with pytest.raises(NotJSON):
            store_output(out, 1, Redactor(), scrub=scrubs, ids=ids)
    else:
        store_output(out, 1, Redactor(), scrub=scrubs, ids=ids)


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
    assert [e.args for e in entries] == [{"q": 2}]


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
        stored, found = store_output(out, line["seq"], Redactor(), scrub=True, ids=True)
        assert line["out"] == stored
        assert line["ids"] == found
    assert [line["ids"] for line in lines] == [
        ["chatcmpl-9x8Yq2ZkT1"],
        [],
        ["call_a1b2c3d4e5f6"],
        ["chatcmpl-7a6B5c4D3e2"],
    ]
    assert lines[0]["out"]["created"] != lines[3]["out"]["created"]  # each call's own seq
