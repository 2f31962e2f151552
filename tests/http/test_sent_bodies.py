"""A replayed request's body is matched by what it means: any spelling of the recorded JSON
(spaces, escapes, another field order, a number written otherwise) replays the same answer,
and so does the very bytes the cassette stores; a body that is not JSON replays as its
text; a body that means something else is a miss.

The upstream is httpx's ``MockTransport``, answering each request with what it was sent.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import faultdeck as fd
from faultdeck.http import Transport

URL = "http://127.0.0.1:9/v1/chat/completions"


def echo(request: httpx.Request) -> httpx.Response:
    return httpx.Response(200, json={"got": request.content.decode("utf-8", "replace")})


def record(path: Path, bodies: list[bytes]) -> list[Any]:
    with (
        fd.Deck(path, mode="record") as deck,
        httpx.Client(transport=Transport(deck, transport=httpx.MockTransport(echo))) as c,
    ):
        return [c.post(URL, content=body).json() for body in bodies]


def replay(path: Path, bodies: list[bytes]) -> tuple[list[Any], fd.Report]:
    """The answers, and the report."""
    with fd.Deck(path, mode="replay") as deck:
        with httpx.Client(transport=Transport(deck)) as client:
            answers = [client.post(URL, content=body).json() for body in bodies]
    return answers, deck.report()


COMPACT = [
    orjson.dumps({"model": "m", "messages": [{"role": "user", "content": f"q{i}"}]})
    for i in range(3)
]


def test_bodies_sent_as_stored_replay_their_answers(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    recorded = record(path, COMPACT)
    answers, report = replay(path, COMPACT)
    assert answers == recorded
    assert (report.used, report.misses, report.live) == (3, (), 0)


@pytest.mark.parametrize(
    ("sent", "again"),
    [
        pytest.param(b'{"q": 1, "r": [1, 2]}', b'{"q":1,"r":[1,2]}', id="spaces, then compact"),
        pytest.param(b'{"q":1,"r":[1,2]}', b'{ "r" : [1,2], "q" : 1 }', id="another order"),
        pytest.param('{"q":"é"}'.encode(), b'{"q":"\\u00e9"}', id="an escape"),
        pytest.param(b'{"q":1e2}', b'{"q":100.0}', id="a number written otherwise"),
        pytest.param(
            b'{"seed":123456789012345678901234567890}',
            b'{"seed":123456789012345678901234567890}',
            id="an integer past 64 bits",
        ),
        pytest.param(b"plain text, not JSON", b"plain text, not JSON", id="text"),
        pytest.param(b'{"q":', b'{"q":', id="JSON cut short"),
        pytest.param(b'"a JSON string"', b'"a JSON string"', id="a JSON string"),
    ],
)
def test_a_body_spelled_otherwise_replays_by_its_meaning(
    tmp_path: Path, sent: bytes, again: bytes
) -> None:
    path = tmp_path / "c.jsonl"
    recorded = record(path, [sent])
    answers, report = replay(path, [again])
    assert answers == recorded
    assert (report.used, report.misses) == (1, ())


def test_a_body_that_means_something_else_is_a_miss_naming_the_field(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    record(path, COMPACT)
    changed = orjson.dumps({"model": "m", "messages": [{"role": "user", "content": "other"}]})
    with fd.Deck(path, mode="replay") as deck:
        with (
            httpx.Client(transport=Transport(deck)) as client,
            pytest.raises(
                fd.ReplayMiss,
                match=r'args\.body\.messages\[0\]\.content: recorded "q0", now "other"',
            ),
        ):
            client.post(URL, content=changed)
        assert [c.source for c in deck.calls] == ["miss"]


def test_a_body_the_text_of_a_stored_string_is_that_string(tmp_path: Path) -> None:
    """Recorded as text (not JSON), a body is stored as a JSON string; sent as that string's
    JSON, it is JSON for the same string, and replays the same."""
    path = tmp_path / "c.jsonl"
    recorded = record(path, [b"abc"])
    answers, report = replay(path, [b'"abc"'])
    assert answers == recorded
    assert report.misses == ()


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)
_SPELLINGS: dict[str, Callable[[Any], bytes]] = {
    "orjson": orjson.dumps,
    "json": lambda v: json.dumps(v).encode(),
    "json, compact, UTF-8": lambda v: json.dumps(
        v, separators=(",", ":"), ensure_ascii=False
    ).encode(),
    "json, sorted, indented": lambda v: json.dumps(v, sort_keys=True, indent=1).encode(),
}


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    value=st.dictionaries(st.sampled_from(["model", "q", "tools"]), _JSON, min_size=1),
    first=st.sampled_from(sorted(_SPELLINGS)),
    then=st.sampled_from(sorted(_SPELLINGS)),
)
def test_any_spelling_of_the_recorded_json_replays_its_answer(
    tmp_path: Path, value: dict[str, Any], first: str, then: str
) -> None:
    path = tmp_path / f"{first}-{then}.jsonl"
    path.unlink(missing_ok=True)
    written = _SPELLINGS[first](value)
    recorded = record(path, [written])
    sent = _SPELLINGS[then](value)
    answers, report = replay(path, [sent])
    assert answers == recorded
    assert report.misses == ()
