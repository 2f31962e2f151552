"""``faultdeck.mcp.Client`` against a real MCP server: record a session, replay it offline.

The server is ``tests.mcp.servers.weather_server()``, reached the three ways the SDK reaches
one (in memory, a stdio subprocess, streamable HTTP on 127.0.0.1). Each test records a
session, stops the server, and replays the session with nothing to connect to.
"""

from __future__ import annotations

import asyncio
import json
import os
import warnings
from pathlib import Path
from typing import Any

import httpx
import pytest

import faultdeck as fd
from faultdeck.mcp import Client
from tests.mcp import servers
from tests.mcp.servers import http_server, stdio_params, weather_server

Dumped = list[dict[str, Any]]


async def whole_session(client: Client) -> Dumped:
    """Every request the client makes, in a fixed order; each result as ``model_dump()``."""
    results = [
        await client.list_tools(),
        await client.call_tool("get_weather", {"city": "Paris"}),
        await client.call_tool("search_notes", {"query": "rain"}),
        await client.list_resources(),
        await client.read_resource("notes://today"),
        await client.list_prompts(),
        await client.get_prompt("greet", {"name": "Ada"}),
    ]
    return [result.model_dump() for result in results]


async def two_tools(client: Client) -> Dumped:
    """The two tool calls alone."""
    weather = await client.call_tool("get_weather", {"city": "Paris"})
    notes = await client.call_tool("search_notes", {"query": "rain"})
    return [weather.model_dump(), notes.model_dump()]


def record(path: Path, server: Any, *, mode: fd.config.Mode = "record") -> Dumped:
    """Record ``whole_session`` against ``server`` into ``path``."""

    async def go() -> Dumped:
        async with fd.Deck(path, mode=mode) as deck, Client(deck, server) as client:
            return await whole_session(client)

    return asyncio.run(go())


def replay(path: Path, server: Any = None) -> tuple[Dumped, fd.Report]:
    """Replay ``whole_session`` from ``path``; ``server`` is given but must not be reached."""

    async def go() -> tuple[Dumped, fd.Deck]:
        async with fd.Deck(path, mode="replay") as deck, Client(deck, server) as client:
            assert client.live is None
            return await whole_session(client), deck

    results, deck = asyncio.run(go())
    return results, deck.report()


def assert_clean(report: fd.Report, calls: int) -> None:
    """Every call answered from the cassette, every recorded call used."""
    assert (report.live, report.used, report.unused, report.misses) == (0, calls, (), ())


def lines(path: Path) -> list[dict[str, Any]]:
    """The cassette's call lines (no header, no end)."""
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    return [row for row in rows if "seq" in row and "key" in row]


def server_children() -> list[int]:
    """Live (not zombie) child processes of this one running the test server."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        state, ppid = stat.rsplit(")", 1)[1].split()[:2]
        if int(ppid) == os.getpid() and state != "Z" and b"tests.mcp.servers" in cmdline:
            found.append(int(entry.name))
    return found


# -- the three transports ------------------------------------------------------------------


def test_in_memory_session_replays_without_the_server(tmp_path: Path) -> None:
    cassette = tmp_path / "memory.jsonl"
    before = len(servers.CALLS)
    recorded = record(cassette, weather_server())
    assert servers.CALLS[before:] == ["get_weather", "search_notes"]
    after = len(servers.CALLS)

    replayed, report = replay(cassette)

    assert replayed == recorded
    assert_clean(report, 7)
    assert len(servers.CALLS) == after


def test_stdio_session_replays_after_the_subprocess_is_gone(tmp_path: Path) -> None:
    cassette = tmp_path / "stdio.jsonl"
    seen: list[list[int]] = []

    async def go() -> Dumped:
        async with fd.Deck(cassette, mode="record") as deck:
            async with Client(deck, stdio_params()) as client:
                results = await whole_session(client)
                seen.append(server_children())
            return results

    recorded = asyncio.run(go())
    assert len(seen[0]) == 1  # the server ran as our child while recording
    assert server_children() == []  # and is gone once the client exited

    replayed, report = replay(cassette, stdio_params())

    assert replayed == recorded
    assert_clean(report, 7)
    assert server_children() == []  # replay never started it


def test_http_session_replays_against_a_dead_url(tmp_path: Path) -> None:
    cassette = tmp_path / "http.jsonl"
    with http_server() as url:
        recorded = record(cassette, url)
    with pytest.raises(httpx.ConnectError):
        httpx.post(url, json={})

    replayed, report = replay(cassette, url)

    assert replayed == recorded
    assert_clean(report, 7)


# -- what the cassette holds -----------------------------------------------------------------


def test_cassette_lines_are_tool_calls_and_listings_in_mcp_shape(tmp_path: Path) -> None:
    cassette = tmp_path / "lines.jsonl"
    record(cassette, weather_server())
    rows = lines(cassette)

    assert [(row["kind"], row["name"]) for row in rows] == [
        ("tool", "mcp:tools/list"),
        ("tool", "get_weather"),
        ("tool", "search_notes"),
        ("tool", "mcp:resources/list"),
        ("tool", "mcp:resources/read"),
        ("tool", "mcp:prompts/list"),
        ("tool", "mcp:prompts/get"),
    ]
    listing, weather, notes, _, read, _, prompt = rows
    assert [tool["name"] for tool in listing["out"]["tools"]] == ["get_weather", "search_notes"]
    assert weather["args"] == {"city": "Paris"}
    assert weather["schema"].startswith("mcp-")
    assert weather["schema"] == fd.mcp.schema_version(listing["out"]["tools"][0]["inputSchema"])
    assert notes["schema"].startswith("mcp-")
    assert notes["schema"] != weather["schema"]
    assert "schema" not in listing  # listings are not versioned by a tool's schema
    assert weather["out"]["content"] == [{"type": "text", "text": "sunny in Paris"}]
    assert weather["out"]["isError"] is False
    assert notes["out"]["structuredContent"] == {
        "query": "rain",
        "hits": ["rain: bring an umbrella"],
    }
    assert read["args"] == {"uri": "notes://today"}
    assert read["out"]["contents"][0]["text"] == "buy milk"
    assert prompt["args"] == {"name": "greet", "arguments": {"name": "Ada"}}


def test_changed_arguments_miss_naming_the_call_and_the_change(tmp_path: Path) -> None:
    cassette = tmp_path / "miss.jsonl"
    record(cassette, weather_server())

    async def go() -> None:
        async with fd.Deck(cassette, mode="replay") as deck, Client(deck) as client:
            await client.list_tools()
            await client.call_tool("get_weather", {"city": "London"})

    with pytest.raises(fd.ReplayMiss) as caught:
        asyncio.run(go())
    miss = caught.value
    assert (miss.seq, miss.kind, miss.name, miss.agreed) == (2, "tool", "get_weather", 1)
    assert [(path, was, now) for path, was, now in miss.diff if "city" in path] != []
    (_, was, now) = next(change for change in miss.diff if "city" in change[0])
    assert (was, now) == ("Paris", "London")
    text = str(miss)
    assert "get_weather" in text
    assert "1 call agreed" in text
    assert "city" in text


# -- schema drift ----------------------------------------------------------------------------


def drifted(cassette: Path, mode: fd.config.Mode) -> tuple[list[str], Any]:
    """Run ``two_tools`` in ``mode`` against the drifted server; the SchemaChanged messages
    and the deck (or the exception the run ended with)."""
    outcome: Any = None

    async def go() -> fd.Deck:
        async with fd.Deck(cassette, mode=mode) as deck:
            async with Client(deck, weather_server(drift=True)) as client:
                await two_tools(client)
        return deck

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            outcome = asyncio.run(go())
        except fd.ReplayMiss as miss:
            outcome = miss
    messages = [str(w.message) for w in caught if issubclass(w.category, fd.SchemaChanged)]
    return messages, outcome


def recorded_two(cassette: Path) -> None:
    async def go() -> None:
        async with fd.Deck(cassette, mode="record") as deck:
            async with Client(deck, weather_server()) as client:
                await two_tools(client)

    asyncio.run(go())


@pytest.mark.parametrize("mode", ["append", "record"])
def test_a_changed_tool_schema_warns_once_and_gets_a_new_key(
    tmp_path: Path, mode: fd.config.Mode
) -> None:
    cassette = tmp_path / "drift.jsonl"
    recorded_two(cassette)
    old = {row["name"]: row for row in lines(cassette)}

    messages, deck = drifted(cassette, mode)

    assert len(messages) == 1
    assert "'get_weather'" in messages[0]
    assert "search_notes" not in messages[0]
    sources = {call.name: call.source for call in deck.calls}
    assert sources["get_weather"] == "live"
    assert sources["search_notes"] == ("replay" if mode == "append" else "live")
    new = [row for row in lines(cassette) if row["name"] == "get_weather"][-1]
    assert new["key"] != old["get_weather"]["key"]
    assert new["schema"] != old["get_weather"]["schema"]
    assert new["out"]["content"][0]["text"] == "sunny in Paris (C)"
    notes = [row for row in lines(cassette) if row["name"] == "search_notes"]
    assert {row["key"] for row in notes} == {old["search_notes"]["key"]}


def test_resume_warns_of_the_changed_schema_and_misses_with_it(tmp_path: Path) -> None:
    cassette = tmp_path / "resume.jsonl"
    recorded_two(cassette)

    messages, miss = drifted(cassette, "resume")

    assert len(messages) == 1
    assert "'get_weather'" in messages[0]
    # A resumed run replays what was recorded; a call keyed by a new schema is not in it.
    assert isinstance(miss, fd.ReplayMiss)
    assert miss.name == "get_weather"
    assert "schema version differs" in str(miss)


def test_an_unchanged_server_warns_nothing(tmp_path: Path) -> None:
    cassette = tmp_path / "same.jsonl"
    recorded_two(cassette)

    async def go() -> fd.Deck:
        async with fd.Deck(cassette, mode="append") as deck:
            async with Client(deck, weather_server()) as client:
                await two_tools(client)
        return deck

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        deck = asyncio.run(go())
    assert [w for w in caught if issubclass(w.category, fd.SchemaChanged)] == []
    assert [call.source for call in deck.calls] == ["replay", "replay"]
