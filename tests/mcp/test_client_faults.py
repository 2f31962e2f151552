"""Each MCP fault as ``faultdeck.mcp.Client``'s caller sees it: the SDK's own results and
errors, on replay of a recorded session and while recording."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pydantic
import pytest
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError

import faultdeck as fd
from faultdeck import faults
from faultdeck.mcp import Client
from tests.mcp import servers
from tests.mcp.servers import weather_server

Outcome = tuple[str, Any]
Step = Callable[[Client], Awaitable[Any]]


def plain_server() -> MCPServer:
    """A server whose one tool has no ``outputSchema`` (MCPServer gives a ``str`` one)."""
    server = MCPServer("plain")

    @server.tool(structured_output=False)
    def echo(text: str) -> str:
        """The text back."""
        return text

    return server


def failing_server() -> MCPServer:
    """A server that answers with MCP errors: an unknown resource, a tool slower than any
    read timeout a test gives."""
    server = MCPServer("failing")

    @server.tool(structured_output=False)
    async def slow(text: str) -> str:
        """The text back, after longer than a test waits."""
        await anyio.sleep(60)
        return text

    @server.resource("notes://today")
    def today() -> str:
        """Today's notes."""
        return "buy milk"

    return server


STEPS: list[Step] = [
    lambda c: c.call_tool("get_weather", {"city": "Paris"}),
    lambda c: c.call_tool("search_notes", {"query": "rain"}),
    lambda c: c.list_tools(),
]


async def outcomes(client: Client, steps: list[Step]) -> list[Outcome]:
    """Each step's result dump, or its exception's type, message and MCP code."""
    found: list[Outcome] = []
    for step in steps:
        try:
            found.append(("ok", (await step(client)).model_dump()))
        except MCPError as exc:
            found.append(("MCPError", (exc.code, exc.message)))
        except Exception as exc:
            found.append((type(exc).__name__, str(exc).splitlines()[0]))
    return found


def run(
    path: Path,
    mode: fd.config.Mode,
    server: Any = None,
    *fault: fd.Fault,
    steps: list[Step] = STEPS,
    **options: Any,
) -> tuple[list[Outcome], fd.Deck, fd.VirtualClock]:
    """Run ``steps`` through a deck in ``mode`` under ``fault``; outcomes, deck, clock."""
    clock = fd.VirtualClock()
    plan = faults.FaultPlan(list(fault)) if fault else None

    async def go() -> tuple[list[Outcome], fd.Deck]:
        async with fd.Deck(path, mode=mode, faults=plan, clock=clock) as deck:
            async with Client(deck, server, **options) as client:
                return await outcomes(client, steps), deck

    found, deck = asyncio.run(go())
    return found, deck, clock


@pytest.fixture
def cassette(tmp_path: Path) -> Path:
    """A recorded session of the two tools and a listing."""
    path = tmp_path / "golden.jsonl"
    found, _, _ = run(path, "record", weather_server())
    assert [kind for kind, _ in found] == ["ok", "ok", "ok"]
    return path


def faulted(deck: fd.Deck) -> list[tuple[str, str | None]]:
    """Each call's name and the fault at it."""
    return [(call.name, call.fault) for call in deck.calls]


def test_tool_error_is_an_error_result_and_other_tools_still_answer(cassette: Path) -> None:
    fault = faults.tool_error(message="boom").on(kind="tool", name="search_*")
    golden, _, _ = run(cassette, "replay")
    found, deck, _ = run(cassette, "replay", None, fault)

    assert found[0] == golden[0]
    notes = types.CallToolResult.model_validate(found[1][1])
    assert notes.is_error is True
    assert isinstance(notes.content[0], types.TextContent)
    assert "boom" in notes.content[0].text
    assert faulted(deck) == [
        ("get_weather", None),
        ("search_notes", "tool_error"),
        ("mcp:tools/list", None),
    ]
    assert deck.report().faults == 1


def test_timeout_is_the_sdks_request_timeout_after_the_read_timeout(cassette: Path) -> None:
    fault = faults.timeout().on(name="get_weather")
    found, deck, clock = run(cassette, "replay", None, fault, read_timeout_seconds=5)

    kind, (code, _) = found[0]
    assert (kind, code) == ("MCPError", types.REQUEST_TIMEOUT)
    assert clock.now() == pytest.approx(5.0)
    assert [kind for kind, _ in found[1:]] == ["ok", "ok"]
    assert deck.calls[0].source == "fault"
    assert deck.calls[0].fault == "timeout"


def test_malformed_result_breaks_the_output_schema_like_the_sdk(cassette: Path) -> None:
    fault = faults.malformed_result().on(name="search_notes")
    found, deck, _ = run(cassette, "replay", None, fault)

    assert found[1] == (
        "RuntimeError",
        "Tool search_notes has an output schema but did not return structured content",
    )
    assert faulted(deck)[1] == ("search_notes", "malformed_result")


def test_malformed_result_without_an_output_schema_is_a_validation_error(tmp_path: Path) -> None:
    path = tmp_path / "plain.jsonl"
    echo: list[Step] = [lambda c: c.list_tools(), lambda c: c.call_tool("echo", {"text": "hi"})]
    recorded, _, _ = run(path, "record", plain_server(), steps=echo)
    assert recorded[0][1]["tools"][0]["output_schema"] is None

    async def go() -> fd.Deck:
        plan = faults.FaultPlan([faults.malformed_result().on(name="echo")])
        async with fd.Deck(path, mode="replay", faults=plan) as deck:
            async with Client(deck) as client:
                await client.list_tools()
                with pytest.raises(pydantic.ValidationError):
                    await client.call_tool("echo", {"text": "hi"})
        return deck

    deck = asyncio.run(go())
    assert faulted(deck) == [("mcp:tools/list", None), ("echo", "malformed_result")]


def test_disconnect_closes_the_connection_for_every_later_call(cassette: Path) -> None:
    fault = faults.disconnect().on(name="get_weather")
    found, deck, _ = run(cassette, "replay", None, fault)

    closed = ("MCPError", (types.CONNECTION_CLOSED, "Connection closed"))
    assert found == [closed, closed, closed]
    assert faulted(deck) == [("get_weather", "disconnect")]


def test_latency_moves_the_clock_and_the_call_answers(cassette: Path) -> None:
    golden, _, _ = run(cassette, "replay")
    found, deck, clock = run(cassette, "replay", None, faults.latency(300).on(name="get_weather"))

    assert found == golden
    assert clock.now() == pytest.approx(0.3)
    assert faulted(deck)[0] == ("get_weather", "latency")
    assert deck.calls[0].source == "replay"


def test_crash_kills_the_process_at_its_call(cassette: Path) -> None:
    with pytest.raises(fd.ProcessKilled):
        run(cassette, "replay", None, faults.crash().on(name="search_notes"))


# -- faults while recording ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("fault", "at"),
    [
        (faults.tool_error(message="boom").on(name="search_notes"), 1),
        (faults.timeout().on(name="get_weather"), 0),
        (faults.malformed_result().on(name="search_notes"), 1),
        (faults.disconnect().on(name="search_notes"), 1),
        (faults.latency(300).on(name="get_weather"), 0),
        (faults.tool_error().on(name="mcp:tools/list"), 2),
    ],
    ids=lambda value: value.kind if isinstance(value, fd.Fault) else str(value),
)
def test_a_fault_recorded_replays_the_same_without_a_plan(
    tmp_path: Path, fault: fd.Fault, at: int
) -> None:
    path = tmp_path / "faulted.jsonl"
    before = len(servers.CALLS)
    recorded, deck, recording_clock = run(
        path, "record", weather_server(), fault, read_timeout_seconds=5
    )
    reached = servers.CALLS[before:]
    assert faulted(deck)[at] == (deck.calls[at].name, fault.kind)
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    line = next(row for row in rows if row.get("seq") == at + 1 and "key" in row)
    assert line["fault"]["fault"] == fault.kind
    if fault.raises and deck.calls[at].name != "mcp:tools/list":
        assert deck.calls[at].name not in reached  # the faulted call never reached the server

    replayed, again, clock = run(path, "replay", None, read_timeout_seconds=5)

    assert replayed == recorded
    assert clock.now() == pytest.approx(recording_clock.now())
    assert faulted(again) == faulted(deck)
    report = again.report()
    assert (report.live, report.unused, report.misses, report.faults) == (0, (), (), 1)


def test_an_error_in_the_block_comes_out_as_raised_while_live(tmp_path: Path) -> None:
    async def go() -> None:
        async with fd.Deck(tmp_path / "raise.jsonl", mode="record") as deck:
            async with Client(deck, weather_server()) as client:
                await client.list_tools()
                raise LookupError("the loop's own error")

    with pytest.raises(LookupError, match="the loop's own error"):
        asyncio.run(go())


def test_the_servers_mcp_errors_are_recorded_and_replayed(tmp_path: Path) -> None:
    path = tmp_path / "errors.jsonl"
    steps: list[Step] = [
        lambda c: c.read_resource("notes://missing"),
        # The call's own read timeout reaches the SDK: the slow tool times out live.
        lambda c: c.call_tool("slow", {"text": "hi"}, read_timeout_seconds=0.5),
    ]
    recorded, deck, _ = run(path, "record", failing_server(), steps=steps)

    assert [(kind, value[0]) for kind, value in recorded] == [
        ("MCPError", types.INVALID_PARAMS),
        ("MCPError", types.REQUEST_TIMEOUT),
    ]
    assert "notes://missing" in recorded[0][1][1]
    assert [call.source for call in deck.calls] == ["live", "live"]
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    errors = [row["error"] for row in rows if "error" in row]
    assert [error["mcp_code"] for error in errors] == [types.INVALID_PARAMS, types.REQUEST_TIMEOUT]

    replayed, again, _ = run(path, "replay", None, steps=steps)

    assert replayed == recorded
    report = again.report()
    assert (report.live, report.used, report.misses) == (0, 2, ())
