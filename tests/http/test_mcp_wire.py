"""An MCP session recorded and replayed at the wire: the real mcp SDK's streamable HTTP
client on an ``httpx2.AsyncClient`` whose transport is faultdeck's, against the real weather
server on 127.0.0.1. The server's ``mcp-session-id`` answer header is what makes the client
open its GET stream and send its DELETE, so replay takes the recorded path only if the
header is kept; the GET stream's end keeps its place among the requests. Every other
answer header is kept too (but the hop-by-hop ones and ``date``), redacted like every
recorded value.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, StreamingResponse
from starlette.routing import Route

import faultdeck as fd
from faultdeck.http import AsyncTransport, Transport
from tests.mcp.servers import http_server
from tests.support.fake_upstream import Upstream
from tests.support.sdk import NetworkGuard, assert_clean_replay, assert_dead

SESSION_HEADER = "mcp-session-id"
ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
LEAKED = "sk-" + "proj-" + ALNUM[::-1] * 2  # a key-shaped value in an answer header
RECONNECTING = "GET stream disconnected"  # what the SDK logs when its GET stream ends


async def session(url: str, transport: AsyncTransport) -> dict[str, Any]:
    """list_tools, two tool calls, and the exit that sends the DELETE."""
    async with httpx2.AsyncClient(transport=transport) as http:
        wire = streamable_http_client(url, http_client=http)
        async with Client(wire, mode="legacy") as client:
            tools = await client.list_tools()
            weather = await client.call_tool("get_weather", {"city": "Paris"})
            notes = await client.call_tool("search_notes", {"query": "rain"})
    return {
        "tools": [tool.name for tool in tools.tools],
        "weather": weather.model_dump(mode="json"),
        "notes": notes.model_dump(mode="json"),
    }


def record(path: Path) -> tuple[str, dict[str, Any], list[tuple[str, str]]]:
    """Record one session; return the URL (dead once this returns), results and calls."""
    with http_server() as url:
        with fd.Deck(path, mode="record") as deck:
            results = asyncio.run(session(url, AsyncTransport(deck, httpx=httpx2)))
    return url, results, wire_calls(deck)


def wire_calls(deck: fd.Deck) -> list[tuple[str, str]]:
    """The (method, path) of each HTTP call, in the order the deck began them."""
    calls = sorted(deck.calls, key=lambda call: call.seq)
    assert all(call.kind == "http" for call in calls)
    return [(call.name.split(" ")[0], call.name.split(" ")[1]) for call in calls]


def lines(path: Path) -> list[dict[str, Any]]:
    """The cassette's call lines, by seq (they are written as calls end)."""
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    return sorted((row for row in rows if "seq" in row and "key" in row), key=lambda r: r["seq"])


def answer(row: dict[str, Any]) -> dict[str, Any]:
    value = row.get("stream", row.get("out"))
    assert isinstance(value, dict), row
    return value


def test_a_session_replays_the_recorded_path(tmp_path: Path) -> None:
    path = tmp_path / "mcp.jsonl"
    url, recorded, recorded_calls = record(path)
    assert ("GET", "/mcp") in recorded_calls
    assert recorded_calls[-1] == ("DELETE", "/mcp")
    assert_dead(url.removesuffix("/mcp"))

    guard = NetworkGuard()
    with fd.Deck(path, mode="replay") as deck:
        replayed = asyncio.run(session(url, AsyncTransport(deck, httpx=httpx2, transport=guard)))

    assert replayed == recorded
    assert replayed["weather"]["structured_content"] == {"result": "sunny in Paris"}
    assert wire_calls(deck) == recorded_calls
    assert {call.source for call in deck.calls} == {"replay"}
    assert guard.calls == 0
    assert_clean_replay(deck.report(), recorded=len(recorded_calls))


def test_the_session_header_is_recorded_and_never_keyed(tmp_path: Path) -> None:
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    record(first)
    record(second)

    ids = []
    for path in (first, second):
        rows = lines(path)
        initialize = next(
            r for r in rows if r["args"].get("body", {}).get("method") == "initialize"
        )
        session_id = answer(initialize)["headers"].get(SESSION_HEADER)
        assert isinstance(session_id, str), "the initialize answer lost mcp-session-id"
        assert re.fullmatch(r"[0-9a-f]{32}", session_id), session_id
        # The client sends it back as a request header: never in args, so never in a key.
        assert all(session_id not in json.dumps(r["args"]) for r in rows)
        ids.append(session_id)

    assert ids[0] != ids[1]  # a fresh id per recording ...
    assert [r["key"] for r in lines(first)] == [r["key"] for r in lines(second)]  # ... same keys


def test_the_get_stream_stays_open_until_the_session_ends(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "mcp.jsonl"
    url, _, _ = record(path)
    get = next(r for r in lines(path) if r["name"] == "GET /mcp")
    delete = next(r for r in lines(path) if r["name"] == "DELETE /mcp")
    assert answer(get)["events"] == []
    assert get["meta"] == {"ends_after": len(lines(path))}  # it ended once the DELETE began
    assert delete["seq"] == len(lines(path))

    seen_before_exit: list[str] = []

    async def replay(deck: fd.Deck) -> None:
        transport = AsyncTransport(deck, httpx=httpx2, transport=NetworkGuard())
        async with httpx2.AsyncClient(transport=transport) as http:
            async with Client(streamable_http_client(url, http_client=http), mode="legacy") as c:
                await c.list_tools()
                await c.call_tool("get_weather", {"city": "Paris"})
                await c.call_tool("search_notes", {"query": "rain"})
                for _ in range(20):  # let the GET task run: an ended stream would show now
                    await asyncio.sleep(0)
                seen_before_exit.extend(r.getMessage() for r in caplog.records)

    caplog.set_level(logging.INFO, logger="mcp.client.streamable_http")
    with fd.Deck(path, mode="replay") as deck:
        asyncio.run(replay(deck))

    # Replayed at once, the GET stream would end right after it opened, and the client
    # would reconnect a second later with a GET the recording never made.
    assert not [m for m in seen_before_exit if RECONNECTING in m]
    assert [c.source for c in deck.calls].count("replay") == len(lines(path))


async def custom(request: Request) -> JSONResponse:
    headers = {"X-Custom": "shard-7", "X-Leak": f"token={LEAKED}", "X-Other": "left-out"}
    return JSONResponse({"ok": True}, headers=headers)


async def custom_stream(request: Request) -> StreamingResponse:
    async def events() -> AsyncIterator[bytes]:
        yield b'data: {"n": 1}\n\n'
        yield b'data: {"n": 2}\n\n'

    headers = {"X-Custom": "shard-8", "X-Leak": f"token={LEAKED}", "X-Other": "left-out"}
    return StreamingResponse(events(), media_type="text/event-stream", headers=headers)


def custom_app() -> Starlette:
    return Starlette(routes=[Route("/thing", custom), Route("/events", custom_stream)])


def test_every_answer_header_is_recorded_redacted(tmp_path: Path) -> None:
    path = tmp_path / "custom.jsonl"
    with Upstream(app=custom_app()) as up:
        with fd.Deck(path, mode="record") as deck:
            with httpx2.Client(transport=Transport(deck, httpx=httpx2)) as client:
                base = up.url
                live = client.get(f"{base}/thing")
                live_stream = client.get(f"{base}/events")
    assert live.headers["x-leak"] == f"token={LEAKED}"  # the caller gets the real answer
    assert live_stream.status_code == 200

    data = path.read_bytes()
    assert LEAKED.encode() not in data
    assert b"redacted:sha256:" in data
    headers = [answer(row)["headers"] for row in lines(path)]
    assert headers[0]["x-custom"] == "shard-7"
    assert headers[0]["x-leak"].startswith("token=\u00abredacted:sha256:")
    assert headers[1]["x-custom"] == "shard-8"  # a stream's headers too
    assert headers[1]["x-leak"].startswith("token=\u00abredacted:sha256:")
    assert headers[0]["x-other"] == "left-out"  # no header is left out but the denylist's
    assert headers[1]["x-other"] == "left-out"
    assert "date" not in headers[0]
    assert "content-length" not in headers[0]  # made again from the body on replay

    async def replay() -> tuple[httpx2.Response, httpx2.Response]:
        with fd.Deck(path, mode="replay") as deck:
            transport = AsyncTransport(deck, httpx=httpx2, transport=NetworkGuard())
            async with httpx2.AsyncClient(transport=transport) as client:
                thing = await client.get(f"{base}/thing")
                events = await client.get(f"{base}/events")
        return thing, events

    thing, events = asyncio.run(replay())
    assert thing.headers["x-custom"] == "shard-7"
    assert thing.headers["x-leak"] == headers[0]["x-leak"]  # the mask, sent as UTF-8
    assert thing.headers["x-other"] == "left-out"
    assert thing.json() == {"ok": True}
    assert events.headers["x-custom"] == "shard-8"
    assert events.headers["x-leak"] == headers[1]["x-leak"]
    assert events.text == 'data: {"n":1}\n\ndata: {"n":2}\n\n'  # parsed JSON, re-sent
