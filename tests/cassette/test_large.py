"""A large cassette is read lean: short lines are held as their bytes and parsed when first
read, long answers stay parsed, and the bytes a replay hands a client for a long HTTP answer
are made when first asked for, once. None of it changes what a replay gives back: byte for
byte what the upstream sent.

``reader.HOLD_LINES_FROM`` is lowered so that a cassette of a few calls is read as a large
one (4 MiB and more) is; each test also reads it as a small one, to compare.
"""

from __future__ import annotations

import random
import tracemalloc
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

import faultdeck as fd
from faultdeck._cassette import reader
from faultdeck.http import Transport

URL = "http://127.0.0.1:9"
CALLS = 4
BINARY = random.Random(7).randbytes(6000)
TEXT = "a line of text, long enough to keep\n" * 200


def completion(i: int) -> dict[str, Any]:
    """A chat completion of ~8 KB with ids of its own."""
    return {
        "id": f"chatcmpl-{i:04d}x8Yq2ZkT1aB3cD4eF5",
        "object": "chat.completion",
        "created": 1764411948,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": f"{i}: " + "retry budgets " * 600},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 12, "completion_tokens": 1630, "total_tokens": 1642},
    }


def sent(request: httpx.Request) -> httpx.Response:
    """What the upstream sends: the bytes a replay must give back."""
    path = request.url.path
    if path == "/v1/chat/completions":
        i = orjson.loads(request.content)["i"]
        body = {**completion(i), "created": 946684800 + i + 1}  # as the cassette stores it
        return httpx.Response(200, content=orjson.dumps(body), headers=JSON)
    if path == "/text":
        return httpx.Response(200, text=TEXT)
    if path == "/bin":
        return httpx.Response(200, content=BINARY, headers={"content-type": "image/png"})
    return httpx.Response(200, json={"ok": True})


JSON = {"content-type": "application/json"}


def program(client: httpx.Client) -> list[bytes]:
    got = [client.post(f"{URL}/v1/chat/completions", json={"i": i}).content for i in range(CALLS)]
    return [*got, *(client.get(f"{URL}{p}").content for p in ("/text", "/bin", "/short"))]


@pytest.fixture(scope="module")
def cassette(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("large") / "answers.jsonl"
    with (
        fd.Deck(path, mode="record") as deck,
        httpx.Client(transport=Transport(deck, transport=httpx.MockTransport(sent))) as client,
    ):
        program(client)
    return path


def upstream_bytes() -> list[bytes]:
    with httpx.Client(transport=httpx.MockTransport(sent)) as client:
        return program(client)


@pytest.mark.parametrize("large", [True, False], ids=["read as large", "read as small"])
def test_a_replay_gives_back_what_the_upstream_sent_byte_for_byte(
    cassette: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, large: bool
) -> None:
    if large:
        monkeypatch.setattr(reader, "HOLD_LINES_FROM", 0)
    copy = tmp_path / "copy.jsonl"  # a file no deck in this process has read
    copy.write_bytes(cassette.read_bytes())
    replays = []
    for _ in range(2):  # the second reads the recording the first read, its bodies made
        with (
            fd.Deck(copy, mode="replay") as deck,
            httpx.Client(transport=Transport(deck)) as client,
        ):
            replays.append(program(client))
        report = deck.report()
        assert (report.used, report.misses, report.live) == (CALLS + 3, (), 0)
    assert replays == [upstream_bytes()] * 2


def test_a_large_cassette_reads_as_a_small_one(
    cassette: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = cassette.read_bytes()
    small = reader.parse(data)
    monkeypatch.setattr(reader, "HOLD_LINES_FROM", 0)
    large = reader.parse(data)
    assert large.entries == small.entries
    for held, parsed in zip(large.entries, small.entries, strict=True):
        assert (held.args, held.value, held.meta) == (parsed.args, parsed.value, parsed.meta)
        assert held.value is held.value  # parsed once, then kept
        assert held.args_json() == orjson.dumps(parsed.args)
        assert held.args_json() is held.args_json()
    assert dict(large.bodies) == dict(small.bodies)


def test_a_long_answers_body_is_made_when_first_asked_for_and_kept(cassette: Path) -> None:
    recording = reader.parse(cassette.read_bytes())
    lines = [e.line for e in recording.entries]
    chats, text, binary, short = lines[:CALLS], lines[CALLS], lines[CALLS + 1], lines[CALLS + 2]
    assert set(recording.bodies) == {*chats, text, binary}
    assert short not in recording.bodies
    assert recording.bodies.get(short) is None
    for line, entry in zip(chats, recording.entries, strict=False):
        made = recording.bodies[line]
        assert made == orjson.dumps(entry.value["body"])
        assert recording.bodies[line] is made
        assert recording.bodies.get(line) is made
    assert recording.bodies[text] == TEXT.encode()
    assert recording.bodies[binary] == BINARY


def test_a_kept_body_costs_about_its_length(cassette: Path) -> None:
    # orjson hands back what it writes in a buffer 4 KB long at least, up to eight times
    # what it wrote: a body kept in it would cost a long recording that much per answer.
    recording = reader.parse(cassette.read_bytes())
    line = recording.entries[0].line
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        made = recording.bodies[line]
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(made) > 8000
    assert kept < len(made) * 1.25
    tracemalloc.start()
    try:  # a short line's args as orjson writes them, kept for every line a replay reads
        before = tracemalloc.get_traced_memory()[0]
        form = recording.entries[CALLS + 2].args_json()
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(form) < 100
    assert kept < 500


def test_a_bad_binary_body_on_a_long_line_is_refused_as_the_cassette_is_read(
    cassette: Path, tmp_path: Path
) -> None:
    lines = cassette.read_bytes().splitlines()
    number = CALLS + 3  # the binary answer's line (after the header and the others)
    call = orjson.loads(lines[number - 1])
    assert "binary" in call["out"]
    call["out"]["binary"]["sha256"] = "0" * 64
    lines[number - 1] = orjson.dumps(call)
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b"\n".join(lines) + b"\n")
    with pytest.raises(fd.CassetteCorrupt, match=rf"bad\.jsonl:{number}: seq \d+: .*sha256"):
        fd.load(bad)
