"""The MCP agent: record one run (model over HTTP, tools over MCP) into one cassette, replay
it offline, and rehearse a failing tool."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

import pytest

import faultdeck as fd
from faultdeck import faults
from faultdeck.mcp import Client
from tests.support.fake_upstream import Upstream, tool_result_text

from . import server
from .agent import model_client, run

QUESTION = "What's the weather in Paris?"
DEAD = "http://127.0.0.1:9/v1"  # nothing listens there: replay must not need it


class NoNetwork:
    """The real transport's stand-in: replay must never reach it."""

    async def handle_async_request(self, request: object) -> object:
        raise AssertionError("replay opened the network")

    async def aclose(self) -> None:
        pass


async def agent(deck: fd.Deck, tools_server: Any, base_url: str, network: Any = None) -> str:
    """One run of the agent through ``deck``."""
    llm = model_client(deck, base_url=base_url, api_key="sk-fake", network=network)
    async with Client(deck, tools_server) as tools, llm:
        return await run(llm, tools, QUESTION)


@pytest.fixture
def cassette(tmp_path: Path) -> Path:
    """One recorded run: the fake provider and the MCP server live, both into one cassette."""
    path = tmp_path / "mcp_weather.jsonl"

    async def record(url: str) -> str:
        async with fd.Deck(path, mode="record") as deck:
            return await agent(deck, server.weather_server(), url)

    with Upstream() as upstream:
        answer = asyncio.run(record(f"{upstream.url}/v1"))
        assert len(upstream.requests) == 2  # the tool call, then the answer
    assert answer == tool_result_text("sunny")
    return path


def replay(path: Path, plan: fd.FaultPlan | None = None) -> tuple[str, fd.Deck]:
    """Replay the run offline: no provider, no MCP server."""

    async def go() -> tuple[str, fd.Deck]:
        async with fd.Deck(path, mode="replay", faults=plan, clock=fd.VirtualClock()) as deck:
            return await agent(deck, None, DEAD, NoNetwork()), deck

    return asyncio.run(go())


def test_one_cassette_holds_the_model_and_the_tools(cassette: Path) -> None:
    recording = fd.load(cassette)
    assert [(e.kind, e.name) for e in recording.entries] == [
        ("tool", "mcp:tools/list"),
        ("model", "openai.chat.completions"),
        ("tool", "get_weather"),
        ("model", "openai.chat.completions"),
    ]


def test_the_agent_replays_offline(cassette: Path) -> None:
    calls = len(server.CALLS)

    answer, deck = replay(cassette)

    assert answer == tool_result_text("sunny")
    report = deck.report()
    assert (report.used, report.live, report.unused, report.misses) == (4, 0, (), ())
    assert len(server.CALLS) == calls


def test_a_failing_tool_changes_what_the_model_is_asked(cassette: Path) -> None:
    # Replay alone cannot rehearse it: the model's next request carries the error text,
    # which the recording never sent, so replay stops there and says so.
    plan = faults.FaultPlan([faults.tool_error().on(kind="tool", name="get_weather")])
    with pytest.raises(fd.ReplayMiss) as caught:
        replay(cassette, plan)
    assert caught.value.name == "openai.chat.completions"
    assert any("error: injected tool error" in str(now) for _, _, now in caught.value.diff)


def test_the_loop_passes_a_tool_error_back_to_the_model(cassette: Path, tmp_path: Path) -> None:
    # The rehearsal: replay what the fault leaves as recorded, ask the provider the rest.
    rehearsal = tmp_path / "rehearsal.jsonl"
    shutil.copy(cassette, rehearsal)
    plan = faults.FaultPlan([faults.tool_error().on(kind="tool", name="get_weather")])
    calls = len(server.CALLS)

    async def go(url: str) -> tuple[str, fd.Deck]:
        async with fd.Deck(rehearsal, mode="append", faults=plan) as deck:
            return await agent(deck, server.weather_server(), url), deck

    with Upstream() as upstream:
        answer, deck = asyncio.run(go(f"{upstream.url}/v1"))
        asked = upstream.requests

    assert answer == tool_result_text("error: injected tool error: the tool failed")
    assert len(asked) == 1  # only the model's answer to the error went live
    assert asked[0]["json"]["messages"][-1]["content"].startswith("error: ")
    assert len(server.CALLS) == calls  # the failing tool never ran
    assert [(c.name, c.source, c.fault) for c in deck.calls] == [
        ("mcp:tools/list", "replay", None),
        ("openai.chat.completions", "replay", None),
        ("get_weather", "fault", "tool_error"),
        ("openai.chat.completions", "live", None),
    ]

    # The rehearsal's cassette now holds the model's answer to the error beside the clean
    # run's: with the same plan, the rehearsal replays offline.
    again, replayed = replay(rehearsal, plan)
    assert again == answer
    report = replayed.report()
    assert (report.live, report.misses, report.faults) == (0, (), 1)
    assert replay(rehearsal)[0] == tool_result_text("sunny")  # and the clean run still does
