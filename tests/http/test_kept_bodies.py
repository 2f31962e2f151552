"""A long recorded HTTP answer's body is kept as bytes when the cassette is read, and a
replay hands those very bytes to the client instead of serializing the body again, with
the one ``Content-Length`` they have. Only a well-formed answer's body is kept: a model
line may hold anything, and what is wrong with it is named when it is replayed.

The answers are recorded through ``fd.http.Transport`` over httpx's own ``MockTransport``
standing in for the upstream: one long JSON answer, one long text answer, one short JSON
answer (short lines keep no bytes).
"""

from __future__ import annotations

from pathlib import Path

import httpx
import orjson
import pytest

import faultdeck as fd
from faultdeck.http import Transport
from faultdeck.http._shapes import request_args

LONG = {"id": "chatcmpl-1", "choices": [{"message": {"content": "word " * 1000}}]}
TEXT = "line of text\n" * 400
SHORT = {"ok": True}


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


def test_a_replay_hands_the_kept_bytes_to_the_client(cassette: Path) -> None:
    with fd.Deck(cassette, mode="replay") as deck:
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


def test_a_replayed_answer_has_one_content_length_the_recorded_one_if_kept(
    cassette: Path, tmp_path: Path
) -> None:
    with fd.Deck(cassette, mode="replay") as deck:
        with httpx.Client(transport=Transport(deck)) as client:
            answers = program(client)
    for answer in answers:
        assert answer.headers.get_list("content-length") == [str(len(answer.content))]
    edited = tmp_path / "length.jsonl"
    lines = cassette.read_bytes().splitlines()
    call = orjson.loads(lines[1])
    call["out"]["headers"]["Content-Length"] = "7"  # a hand edit, in another case
    edited.write_bytes(b"\n".join([lines[0], orjson.dumps(call), *lines[2:]]) + b"\n")
    with fd.Deck(edited, mode="replay") as deck:
        with httpx.Client(transport=Transport(deck)) as client:
            long, _, _ = program(client)
    assert long.headers.get_list("content-length") == ["7"]
    assert long.json() == LONG


def test_a_long_model_line_that_is_no_http_answer_keeps_no_body_and_is_named(
    tmp_path: Path,
) -> None:
    path = tmp_path / "model.jsonl"
    url = "http://127.0.0.1:9/v1/chat/completions"
    with (
        fd.Deck(path, mode="record") as deck,
        httpx.Client(transport=Transport(deck, transport=httpx.MockTransport(upstream))) as c,
    ):
        c.post(url, json={"q": 1})
    lines = path.read_bytes().splitlines()
    call = orjson.loads(lines[1])
    call["out"]["body"] = LONG  # long: its line keeps its body's bytes, when well-formed
    call["out"]["headers"] = {"content-type": 1}  # a hand edit: a model line may hold it
    path.write_bytes(b"\n".join([lines[0], orjson.dumps(call), *lines[2:]]) + b"\n")
    recording = fd.load(path)
    assert recording.entries[0].kind == "model"
    assert recording.bodies == {}
    with fd.Deck(path, mode="replay") as deck:
        with (
            httpx.Client(transport=Transport(deck)) as client,
            pytest.raises(fd.CassetteCorrupt, match=r"seq 1: an HTTP answer needs 'headers'"),
        ):
            client.post(url, json={"q": 1})


class _RawOnly:
    """Headers that offer only what httpx's headers promise: ``raw`` and ``encoding``."""

    def __init__(self, headers: httpx.Headers) -> None:
        self.raw = headers.raw
        self.encoding = headers.encoding


def test_request_args_read_any_headers_as_httpx_headers() -> None:
    headers = httpx.Headers(
        [
            ("Anthropic-Version", "2023-06-01"),
            ("OpenAI-Beta", "a=1"),
            ("openai-beta", "b=2"),
            ("X-Other", "left out"),
        ]
    )
    keep = frozenset({"anthropic-version", "openai-beta"})
    args = request_args("POST", "/v1/messages", [], headers, keep)
    assert args == {
        "method": "POST",
        "path": "/v1/messages",
        "headers": {"anthropic-version": "2023-06-01", "openai-beta": "a=1, b=2"},
    }
    assert request_args("POST", "/v1/messages", [], _RawOnly(headers), keep) == args
