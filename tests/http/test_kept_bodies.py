"""A long recorded HTTP answer's body is kept as bytes when the cassette is read, and a
replay hands those very bytes to the client instead of serializing the body again.

The answers are recorded through ``fd.http.Transport`` over httpx's own ``MockTransport``
standing in for the upstream: one long JSON answer, one long text answer, one short JSON
answer (short lines keep no bytes).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

import faultdeck as fd
from faultdeck.http import Transport

LONG = {"id": "chatcmpl-1", "choices": [{"message": {"content": "word " * 1000}}]}
TEXT = "line of text\n" * 400
SHORT = {"ok": True}
# A fault that may land on every request (each goes through ``begin``) and lands on none.
NEVER = fd.FaultPlan([fd.faults.timeout().on(nth=10**9)])


def upstream(request: httpx.Request) -> httpx.Response:
    path = request.url.path
    if path == "/long":
        return httpx.Response(200, json=LONG)
    if path == "/text":
        return httpx.Response(200, text=TEXT)
    return httpx.Response(200, json=SHORT)


def program(client: httpx.Client) -> list[httpx.Response]:
    return [client.post(f"http://127.0.0.1:9{p}", json={"q": p}) for p in ("/long", "/text", "/s")]


@pytest.fixture(scope="module")
def cassette(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("bodies") / "bodies.jsonl"
    with (
        fd.Deck(path, mode="record") as deck,
        httpx.Client(transport=Transport(deck, transport=httpx.MockTransport(upstream))) as c,
    ):
        program(c)
    return path


def test_the_long_answers_keep_their_body_bytes_and_the_short_one_none(cassette: Path) -> None:
    recording = fd.load(cassette)
    long, text, short = recording.entries
    assert recording.bodies[long.line] == orjson.dumps(long.value["body"])
    assert orjson.loads(recording.bodies[long.line]) == LONG
    assert recording.bodies[text.line] == TEXT.encode()
    assert short.line not in recording.bodies


@pytest.mark.parametrize("plan", [None, NEVER], ids=["short route", "through begin"])
def test_a_replay_hands_the_kept_bytes_to_the_client(cassette: Path, plan: Any) -> None:
    with fd.Deck(cassette, mode="replay", faults=plan) as deck:
        with httpx.Client(transport=Transport(deck)) as client:
            long, text, short = program(client)
        kept = deck.recording.bodies  # type: ignore[union-attr]  # replaying: read
        lines = [e.line for e in deck.recording.entries]  # type: ignore[union-attr]
    assert long.json() == LONG
    assert text.text == TEXT
    assert short.json() == SHORT
    assert long.content is kept[lines[0]]
    assert text.content is kept[lines[1]]
    report = deck.report()
    assert (report.used, report.misses, report.live) == (3, (), 0)
