"""Real MCP servers nobody here wrote, recorded and replayed: the host gets what they sent.

``mcp-server-time``, ``mcp-server-git`` and the reference filesystem server from npm run
behind a tee (``tests/mcp/real.py``) that logs every line they exchange. Each is recorded
through ``faultdeck mcp record`` (driven by a host that reads raw JSON-RPC, so nothing
reshapes what it gets) and served by ``faultdeck mcp serve`` to that host and to the mcp
SDK's client, and through ``faultdeck.mcp.Client``, recorded and replayed; the server is
gone for every replay. Every answer, and the session's opening, is compared with the
server's own, field by field.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import mcp
import mcp_types as types
import pytest
from mcp import StdioServerParameters
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel

import faultdeck as fd
import faultdeck.mcp as fdmcp
from tests.mcp.real import (
    ROOT,
    Host,
    Real,
    Wire,
    filesystem_server,
    git_server,
    tapped,
    time_server,
)

FAULTDECK = [sys.executable, "-m", "faultdeck", "mcp"]

SERVERS: dict[str, Callable[[Path], Real]] = {
    "time": lambda _: time_server(),
    "git": git_server,
    "filesystem": filesystem_server,
}


@pytest.fixture(params=sorted(SERVERS))
def server(request: pytest.FixtureRequest, tmp_path: Path) -> Real:
    return SERVERS[request.param](tmp_path)


def session(host: Host, server: Real) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A host's whole session: the opening, then every request's answer; the host leaves."""
    opened = host.open()
    answers = [host.ask(method, params) for method, params in server.requests]
    code, stderr = host.close()
    assert code == 0, stderr
    return opened, answers


def test_record_and_serve_hand_the_host_what_the_server_sent(server: Real, tmp_path: Path) -> None:
    cassette, log = tmp_path / "session.jsonl", tmp_path / "wire.log"
    record = Host([*FAULTDECK, "record", str(cassette), "--", *tapped(server, log)])
    recorded_opening, recorded = session(record, server)
    wire = Wire.read(log)
    sent = [wire.answer(method, params) for method, params in server.requests]

    # While recording, the host got the server's own answers: nothing added, nothing lost.
    assert recorded_opening == wire.answer("initialize")
    for request, got, answer in zip(server.requests, recorded, sent, strict=True):
        assert got == answer, request

    # The server is gone (its tee logs nothing more); the cassette answers the same.
    before = log.read_bytes()
    served_opening, served = session(Host([*FAULTDECK, "serve", str(cassette)]), server)
    assert served_opening == wire.answer("initialize")
    for request, got, answer in zip(server.requests, served, sent, strict=True):
        assert got == answer, request
    assert log.read_bytes() == before

    # The mcp SDK's own client, in its default mode (it probes for the 2026 protocol first,
    # then opens by the handshake as the server had it), reads the same.
    declared = wire.answer("initialize")["result"]

    async def sdk_host() -> None:
        params = StdioServerParameters(
            command=FAULTDECK[0], args=[*FAULTDECK[1:], "serve", str(cassette)]
        )
        async with mcp.Client(params, read_timeout_seconds=60) as client:
            assert client.server_info == types.Implementation.model_validate(declared["serverInfo"])
            assert dumped(client.server_capabilities) == declared["capabilities"]
            for (method, request), answer in zip(server.requests, sent, strict=True):
                assert await answered(client, method, request) == answer, request

    anyio.run(sdk_host)
    assert log.read_bytes() == before


def test_client_replays_what_the_server_sent(server: Real, tmp_path: Path) -> None:
    cassette, log = tmp_path / "session.jsonl", tmp_path / "wire.log"
    tee = tapped(server, log)
    live = StdioServerParameters(command=tee[0], args=tee[1:], cwd=str(ROOT))
    recorded = anyio.run(through_client, cassette, "record", live, server)
    wire = Wire.read(log)
    opened = wire.answer("server/discover")
    if "error" in opened:  # a server of the handshake alone
        opened = wire.answer("initialize")

    # The results the client handed back while recording are the server's own.
    (info, capabilities, instructions), results = recorded
    declared = opened["result"]
    assert dumped(capabilities) == declared["capabilities"]
    assert instructions == declared.get("instructions")
    assert info == types.Implementation.model_validate(
        declared.get("serverInfo") or declared["_meta"][types.SERVER_INFO_META_KEY]
    )
    for (method, request), got in zip(server.requests, results, strict=True):
        assert got == wire.answer(method, request), request

    # The server cannot start now: replay answers alone, field by field the same.
    gone = StdioServerParameters(command=str(tmp_path / "no-such-server"))
    assert anyio.run(through_client, cassette, "replay", gone, server) == recorded


async def through_client(
    cassette: Path, mode: fd.config.Mode, live: StdioServerParameters, server: Real
) -> tuple[tuple[Any, Any, Any], list[dict[str, Any]]]:
    """``server``'s session through ``faultdeck.mcp.Client``: what it declared, and each
    answer as MCP JSON (a result's fields as the SDK read them, or the error)."""
    async with (
        fd.Deck(cassette, mode=mode) as deck,
        fdmcp.Client(deck, live, read_timeout_seconds=60) as client,
    ):
        declared = (client.server_info, client.server_capabilities, client.instructions)
        answers = [await answered(client, method, request) for method, request in server.requests]
    return declared, answers


async def answered(client: Any, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """One request's answer as MCP JSON: the result's fields as the SDK read them, or the
    error."""
    try:
        return {"result": dumped(await ask(client, method, params))}
    except MCPError as exc:
        error = {"code": exc.code, "message": exc.message}
        return {"error": error if exc.data is None else {**error, "data": exc.data}}


async def ask(client: Any, method: str, params: dict[str, Any]) -> BaseModel:
    """One request through an SDK-shaped client (``mcp.Client`` or ``faultdeck.mcp.Client``)."""
    if method == "tools/call":
        result: BaseModel = await client.call_tool(params["name"], params["arguments"])
        return result
    if method == "tools/list":
        return await client.list_tools()  # type: ignore[no-any-return]
    assert method == "resources/list", method
    return await client.list_resources()  # type: ignore[no-any-return]


def dumped(model: BaseModel | None) -> dict[str, Any]:
    """A model as MCP JSON, with exactly the fields that were read into it."""
    assert model is not None
    return model.model_dump(mode="json", by_alias=True, exclude_unset=True)
