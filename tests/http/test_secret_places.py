"""At the HTTP boundary, secrets hide in URL paths, query parameters, echoed error bodies,
streams whose secret is split across events, and tool outputs that go back into the next
request. None reaches the cassette, and each run replays offline through the real SDK.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx2
import openai
import pytest
from openai.types.chat import ChatCompletionMessageFunctionToolCall
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.routing import Route

import faultdeck as fd
from faultdeck.http import Transport
from tests.support.fake_upstream import OPENAI_TOOLS, Upstream
from tests.support.sdk import NetworkGuard, assert_dead, openai_sync

ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
TELEGRAM = "AA" + (ALNUM * 2)[3:36]
BOT_PATH = "/bot123456789:" + TELEGRAM + "/getMe"
SLACK_PATH = "/services/T0ABCDEFGH/B0IJKLMNOP/" + ALNUM[10:34]
ACCESS = "ya29" + "." + ALNUM[5:45]
API_KEY = "sk-" + "proj-" + ALNUM * 2
LEAKED = "sk-" + "proj-" + ALNUM[::-1] * 2  # what the model "says" in its stream


async def leaky_stream(request: Request) -> StreamingResponse:
    """A chat-completion stream that spells a key out across five events."""
    text = f"the key is {LEAKED} ok"
    cut = len("the key is ") + 9
    pieces = [text[:cut], text[cut : cut + 11], text[cut + 11 : cut + 30], text[cut + 30 :]]

    async def events() -> AsyncIterator[bytes]:
        for piece in pieces:
            chunk = {
                "id": "chatcmpl-leak",
                "object": "chat.completion.chunk",
                "created": 1700000000,
                "model": "gpt-fake",
                "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}],
            }
            yield f"data: {json.dumps(chunk)}\n\n".encode()
        yield b"data: [DONE]\n\n"

    return StreamingResponse(events(), media_type="text/event-stream")


@pytest.fixture
def upstream() -> Iterator[Upstream]:
    server = Upstream()
    server.app.router.routes.insert(
        0, Route("/leak/chat/completions", leaky_stream, methods=["POST"])
    )
    with server:
        yield server


def secrets_absent(path: Path, *secrets: str) -> bytes:
    data = path.read_bytes()
    for secret in secrets:
        assert secret.encode() not in data, secret
        assert json.dumps(secret)[1:-1].encode() not in data
    return data


def get_all(client: httpx2.Client, base: str) -> list[int]:
    query = f"?access_token={ACCESS}&api_key={API_KEY}&page_token=next-{ALNUM}"
    return [
        client.get(base + BOT_PATH).status_code,
        client.post(base + SLACK_PATH, json={"text": "deploy done"}).status_code,
        client.get(base + "/v1/models" + query).status_code,
    ]


def test_tokens_in_paths_queries_and_echoed_bodies_never_reach_the_cassette(
    tmp_path: Path, upstream: Upstream
) -> None:
    path = tmp_path / "places.jsonl"
    url = upstream.url
    with (
        fd.Deck(path, mode="record") as deck,
        httpx2.Client(transport=Transport(deck, httpx=httpx2)) as client,
    ):
        recorded = get_all(client, url)
    assert recorded == [404, 404, 200]
    upstream.stop()
    assert_dead(url)
    secrets_absent(path, TELEGRAM, SLACK_PATH[10:], ACCESS, API_KEY)
    entries = fd.load(path).entries
    assert all("«redacted:sha256:" in e.name for e in entries[:2])
    query = dict(entries[2].args["query"])
    assert query["page_token"] == f"next-{ALNUM}"  # pagination stays readable

    guard = NetworkGuard()
    with (
        fd.Deck(path, mode="replay") as deck,
        httpx2.Client(transport=Transport(deck, httpx=httpx2, transport=guard)) as client,
    ):
        assert get_all(client, url) == recorded
        assert deck.report().ok
    assert [c.error for c in deck.calls] == ["APIStatusError", "APIStatusError", None]
    assert guard.calls == 0


def test_a_secret_split_across_stream_events_is_masked_and_replays(
    tmp_path: Path, upstream: Upstream
) -> None:
    path = tmp_path / "stream.jsonl"
    url = upstream.url

    def run(deck: fd.Deck, inner: Any) -> str:
        client = openai.OpenAI(
            base_url=f"{url}/leak",
            api_key=API_KEY,
            max_retries=0,
            http_client=httpx2.Client(transport=Transport(deck, httpx=httpx2, transport=inner)),
        )
        with client:
            stream = client.chat.completions.create(
                model="gpt-fake", messages=[{"role": "user", "content": "key?"}], stream=True
            )
            return "".join(chunk.choices[0].delta.content or "" for chunk in stream)

    with fd.Deck(path, mode="record") as deck:
        assert run(deck, None) == f"the key is {LEAKED} ok"
    upstream.stop()
    secrets_absent(path, LEAKED, LEAKED[:24], LEAKED[-24:], API_KEY)
    mask = fd.Redactor().mask(LEAKED)
    with fd.Deck(path, mode="replay") as deck:
        assert run(deck, NetworkGuard()) == f"the key is {mask} ok"
        assert deck.report().ok


def test_a_tool_output_with_a_key_goes_back_to_the_model_and_replays(
    tmp_path: Path, upstream: Upstream
) -> None:
    # The tool returns a credential; the loop puts json.dumps(output) into the tool message.
    path = tmp_path / "loop.jsonl"
    url = upstream.url
    secret = "gh" + "p_" + ALNUM[:36]

    def loop(deck: fd.Deck, inner: Any) -> str:
        messages: list[Any] = [{"role": "user", "content": "Weather in Paris?"}]
        with openai_sync(url, deck, inner) as client:
            for _ in range(3):
                reply = client.chat.completions.create(
                    model="gpt-fake", messages=messages, tools=OPENAI_TOOLS
                )
                message = reply.choices[0].message
                if not message.tool_calls:
                    return message.content or ""
                messages.append(message.model_dump(exclude_none=True))
                for call in message.tool_calls:
                    assert isinstance(call, ChatCompletionMessageFunctionToolCall)
                    out = deck.call(
                        "tool",
                        "get_weather",
                        json.loads(call.function.arguments),
                        lambda: {"weather": "sunny", "session": secret},
                    )
                    content = json.dumps(out)  # ASCII escapes: a mask arrives as \u00ab…
                    messages.append({"role": "tool", "tool_call_id": call.id, "content": content})
        raise AssertionError("no final answer")

    with fd.Deck(path, mode="record") as deck:
        recorded = loop(deck, None)
    upstream.stop()
    secrets_absent(path, secret)
    with fd.Deck(path, mode="replay") as deck:
        replayed = loop(deck, NetworkGuard())
        report = deck.report()
    assert report.misses == ()
    assert report.ok
    assert secret not in replayed
    # The model's answer echoes the tool output: as recorded, with the key as its mask.
    assert secret in recorded
    assert replayed == recorded.replace(secret, fd.Redactor().mask(secret))


def test_the_async_transport_masks_the_same_places(tmp_path: Path, upstream: Upstream) -> None:
    path = tmp_path / "async.jsonl"
    url = upstream.url

    async def main(deck: fd.Deck, inner: Any) -> int:
        transport = fd.http.AsyncTransport(deck, httpx=httpx2, transport=inner)
        async with httpx2.AsyncClient(transport=transport) as client:
            return int((await client.get(url + BOT_PATH)).status_code)

    with fd.Deck(path, mode="record") as deck:
        assert asyncio.run(main(deck, None)) == 404
    upstream.stop()
    secrets_absent(path, TELEGRAM)
    with fd.Deck(path, mode="replay") as deck:
        assert asyncio.run(main(deck, NetworkGuard())) == 404
        assert deck.report().ok
