"""Resuming an MCP session: a tool call that another task's reorder put ahead of a
recorded one waits for its turn, as ``acall`` does (docs/guarantees.md).

Under ``asyncio.gather``, replayed calls return at once, so one task can reach a call the
killed run never reached before another task asks for a recorded one. The resumed run
must replay the recorded call and send only the new one to the server.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

import faultdeck as fd
from faultdeck.mcp import Client
from tests.mcp import servers
from tests.mcp.servers import weather_server


async def weather(client: Client, city: str) -> str:
    result = await client.call_tool("get_weather", {"city": city})
    return str(result.content[0].text)  # type: ignore[union-attr]  # a text part


def killed_after_three(path: Path) -> None:
    """A killed run that asked the weather in Paris, Rome and Oslo, in that order."""
    deck = fd.Deck(path, mode="record")
    deck.open()

    async def run() -> None:
        async with Client(deck, weather_server()) as client:
            for city in ("Paris", "Rome", "Oslo"):
                await weather(client, city)

    asyncio.run(run())
    deck.abandon()
    servers.CALLS.clear()


def test_a_tool_call_a_reorder_put_early_waits_its_turn(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    killed_after_three(path)

    async def resumed(deck: fd.Deck) -> Any:
        async with Client(deck, weather_server()) as client:

            async def one() -> list[str]:
                return [await weather(client, city) for city in ("Paris", "Oslo", "Lima")]

            async def two() -> str:
                while len(deck.calls) < 2:  # until the other task had Paris and Oslo replayed
                    await asyncio.sleep(0.001)
                await asyncio.sleep(0.05)  # it asks for Lima, numbered 3, meanwhile
                return await weather(client, "Rome")

            return await asyncio.gather(one(), two())

    with fd.Deck(path, mode="resume") as deck:
        first, second = asyncio.run(resumed(deck))
    assert first == ["sunny in Paris", "sunny in Oslo", "sunny in Lima"]
    assert second == "sunny in Rome"
    assert servers.CALLS == ["get_weather"]  # Lima alone reached the server
    sources = sorted((call.seq, call.source) for call in deck.calls)
    assert sources == [(1, "replay"), (2, "replay"), (3, "live"), (4, "replay")]
    final = fd.load(path)
    assert sorted(e.args["city"] for e in final.entries) == [
        "Lima",
        "Oslo",
        "Paris",
        "Rome",
    ]
    assert not final.interrupted


def test_a_tool_call_nobody_else_asks_before_is_still_a_miss(tmp_path: Path) -> None:
    # One task alone: after Paris, a new call takes Rome's place while Rome and Oslo remain.
    path = tmp_path / "run.jsonl"
    killed_after_three(path)

    async def resumed(deck: fd.Deck) -> None:
        async with Client(deck, weather_server()) as client:
            await weather(client, "Paris")
            await weather(client, "Lima")

    with fd.Deck(path, mode="resume") as deck, pytest.raises(fd.ReplayMiss, match="seq 2"):
        asyncio.run(resumed(deck))
    assert servers.CALLS == []
