"""The HTTP transport's short route for a plain replay (``deck.take_recorded``) answers what
the full route (``deck.begin``) answers, request for request.

One recording through the real openai SDK and a plain httpx client, against the local fake
upstream: a tool call whose id the next request sends back, a plain answer, a stream, a
404 and a GET. It is replayed by a plain deck (the short route, for the answers under 400
that are no stream) and by one whose fault plan may land on every request and lands on
none (every request through ``begin``), sync and async: what the program got, the call
log and the report are equal.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx2
import openai
import pytest

import faultdeck as fd
from faultdeck.http import AsyncTransport, Transport
from tests.support.fake_upstream import Upstream
from tests.support.sdk import OPENAI_KEY, OPENAI_MODEL, QUESTION, NetworkGuard

# A fault that may land on every call (so each goes through ``begin``) and lands on none.
NEVER = fd.FaultPlan([fd.faults.timeout().on(nth=10**9)])
TOOLS: list[Any] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]


def run(client: httpx2.Client, url: str) -> list[Any]:
    """The program: each answer as the program read it."""
    sdk = openai.OpenAI(
        base_url=f"{url}/v1",
        api_key=OPENAI_KEY,
        max_retries=0,
        _strict_response_validation=True,
        http_client=client,
    )
    messages: list[Any] = [{"role": "user", "content": QUESTION}]
    first = sdk.chat.completions.create(model=OPENAI_MODEL, messages=messages, tools=TOOLS)
    call = first.choices[0].message.tool_calls[0]  # type: ignore[index]
    messages += [
        first.choices[0].message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": "sunny"},
    ]
    second = sdk.chat.completions.create(model=OPENAI_MODEL, messages=messages)
    streamed = sdk.chat.completions.create(model=OPENAI_MODEL, messages=messages, stream=True)
    pieces = [c.choices[0].delta.content for c in streamed if c.choices]
    models = client.get("/v1/models")
    missing = client.get("/nope")  # a failure: from here on, a retry is watched for
    again = client.get("/v1/models")
    return [
        first.model_dump(),
        second.model_dump(),
        pieces,
        (models.status_code, models.headers.get("content-type"), models.json()),
        (missing.status_code, missing.text),
        (again.status_code, again.headers.get("content-type")),
    ]


async def run_async(client: httpx2.AsyncClient) -> list[Any]:
    models = await client.get("/v1/models")
    missing = await client.get("/nope")
    return [
        (models.status_code, models.headers.get("content-type"), models.json()),
        (missing.status_code, missing.text),
    ]


@pytest.fixture
def recorded(tmp_path: Path) -> tuple[Path, Path, str]:
    path, other = tmp_path / "sync.jsonl", tmp_path / "async.jsonl"
    with Upstream() as upstream:
        url = upstream.url
        with fd.Deck(path, mode="record") as deck:
            with httpx2.Client(base_url=url, transport=Transport(deck, httpx=httpx2)) as c:
                run(c, url)
        with fd.Deck(other, mode="record") as deck:
            transport = AsyncTransport(deck, httpx=httpx2)

            async def go() -> None:
                async with httpx2.AsyncClient(base_url=url, transport=transport) as c:
                    await run_async(c)

            asyncio.run(go())
    return path, other, url


def replay(path: Path, url: str, plan: fd.FaultPlan | None) -> tuple[list[Any], fd.Deck]:
    deck = fd.Deck(path, mode="replay", clock=fd.VirtualClock(), faults=plan)
    transport = Transport(deck, httpx=httpx2, transport=NetworkGuard())
    with deck, httpx2.Client(base_url=url, transport=transport) as client:
        got = run(client, url)
    return got, deck


def replay_async(path: Path, url: str, plan: fd.FaultPlan | None) -> tuple[list[Any], fd.Deck]:
    deck = fd.Deck(path, mode="replay", clock=fd.VirtualClock(), faults=plan)
    transport = AsyncTransport(deck, httpx=httpx2, transport=NetworkGuard())

    async def go() -> list[Any]:
        async with httpx2.AsyncClient(base_url=url, transport=transport) as client:
            return await run_async(client)

    with deck:
        got = asyncio.run(go())
    return got, deck


def test_both_routes_answer_alike(recorded: tuple[Path, Path, str]) -> None:
    path, _, url = recorded
    short, plain = replay(path, url, None)
    full, planned = replay(path, url, NEVER)
    assert short == full
    assert short[0]["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "get_weather"
    assert short[2]
    assert short[3][:2] == (200, "application/json")
    assert short[4][0] == 404
    assert short[5] == (200, "application/json")
    assert plain.calls == planned.calls
    assert plain.report() == planned.report()
    assert [c.source for c in plain.calls] == ["replay"] * 6
    assert [c.error for c in plain.calls] == [None, None, None, None, "APIStatusError", None]
    assert [c.streamed for c in plain.calls] == [False, False, True, False, False, False]


def test_both_async_routes_answer_alike(recorded: tuple[Path, Path, str]) -> None:
    _, path, url = recorded
    short, plain = replay_async(path, url, None)
    full, planned = replay_async(path, url, NEVER)
    assert short == full
    assert short[0][:2] == (200, "application/json")
    assert short[1][0] == 404
    assert plain.calls == planned.calls
    assert plain.report() == planned.report()


def test_a_changed_request_misses_on_both_routes(recorded: tuple[Path, Path, str]) -> None:
    path, _, url = recorded
    for plan in (None, NEVER):
        deck = fd.Deck(path, mode="replay", faults=plan)
        transport = Transport(deck, httpx=httpx2, transport=NetworkGuard())
        with deck, httpx2.Client(base_url=url, transport=transport) as client:
            with pytest.raises(fd.ReplayMiss):
                client.get("/v1/models?page=2")
            assert [c.source for c in deck.calls] == ["miss"]
