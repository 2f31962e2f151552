"""An MCP server whose every request is a boundary call: ``faultdeck mcp serve`` and ``record``.

``build_server(session)`` is the mcp SDK's lowlevel ``Server`` with a handler for each
request faultdeck records (``tools/list``, ``tools/call``, ``resources/list``,
``resources/read``, ``prompts/list``, ``prompts/get``); each handler hands its request to
``Session.request`` and answers with what comes back. In replay the session has no
upstream and the answers are the cassette's; recording through a proxy, the session's
upstream is the live server, reached through ``faultdeck.mcp.Client``.

The host gets what the server sent: an answer goes on the wire as recorded, past the SDK's
own shaping of a result (which would add defaults and a ``_meta`` stamp, and drop fields
it does not know), and the session opens as the server opened it: ``initialize`` answers
with the server's ``serverInfo``, ``capabilities`` and ``instructions`` (the protocol
version is the one negotiated with this host), ``server/discover`` with the server's own
answer to it.

A request the cassette has no answer for (``ReplayMiss``) is answered with an MCP error
carrying the miss's text (which call, after how many agreeing calls, which argument
changed), and the server keeps serving. A fault shows the way MCP delivers it:

- ``error_result``: a ``tools/call`` result with ``isError: true`` and the fault's message;
- ``timeout``: no answer at all, until the client gives up and cancels (held ``HOLD`` s);
- ``malformed``: a tool with an ``outputSchema`` gets ``structuredContent`` that breaks it
  (the client's SDK rejects it); any other request gets a result that is not one (the
  client's SDK fails to read it);
- ``disconnect``: the server goes away mid-session (``on_gone("disconnect")``: by default
  the cassette is closed and the process ends, closing its pipes and sockets);
- ``error``: an MCP error response with the fault's message.

The crash fault ends the process at once, the cassette left without its end line.
"""

from __future__ import annotations

import copy
import os
import sys
from collections.abc import Callable, Mapping
from typing import Any, NoReturn

import anyio
import mcp_types as types
from mcp.server.context import CallNext, HandlerResult, ServerMiddleware, ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.runner import serve_loop
from mcp.shared.exceptions import MCPError

from .._base.errors import ProcessKilled, ReplayMiss
from ._calls import DISCOVER, HANDSHAKE, LIST_TOOLS, listed
from ._session import Reply, Session

HOLD = 300.0
"""How long a ``timeout`` fault holds its request unanswered, at most (seconds)."""

MISS_CODE = types.INTERNAL_ERROR
"""The MCP error code a replay miss is answered with."""

Gone = Callable[[str], NoReturn]
"""What ends the server: called with ``"disconnect"`` or ``"crash"``; never returns."""


_NOT_A_RESULT: dict[str, Any] = {
    "resultType": "complete",
    **dict.fromkeys(("content", "contents", "messages", "tools", "resources", "prompts"), 0),
}
"""A result of no request: every list a result can hold is a number instead."""


class _AsSent(Exception):
    """A result to send as it is, past the SDK's shaping and checking of results."""

    def __init__(self, result: dict[str, Any]) -> None:
        super().__init__("a result sent as it is")
        self.result = result


async def _send_as_is(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    """Server middleware: a handler's ``_AsSent`` result goes on the wire as it is."""
    try:
        return await call_next(ctx)
    except _AsSent as raw:
        return raw.result


def _opening(session: Session) -> ServerMiddleware[Any]:
    """Server middleware: the session opens as the server opened it (``session.handshake``);
    one whose opening is not known opens as the SDK's server opens one."""

    async def opening(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        handshake = session.handshake
        if handshake is None or ctx.method not in HANDSHAKE:
            return await call_next(ctx)
        answer = handshake.get(ctx.method)
        if ctx.method == DISCOVER:
            if answer is None:
                return await call_next(ctx)
            if "error" in answer:
                error = answer["error"]
                code = error.get("code", types.INTERNAL_ERROR)
                raise MCPError(code, error.get("message", ""), error.get("data"))
            return copy.deepcopy(answer.get("result") or {})
        # The protocol version is the one agreed with this host; the rest, the server's.
        negotiated = await call_next(ctx)
        if not isinstance(negotiated, dict):
            return negotiated
        result = (answer or {}).get("result")
        if isinstance(result, dict):
            return {**copy.deepcopy(result), "protocolVersion": negotiated["protocolVersion"]}
        return _declared(negotiated, (handshake.get(DISCOVER) or {}).get("result"))

    return opening


def _declared(initialize: dict[str, Any], discover: Any) -> dict[str, Any]:
    """The SDK's ``initialize`` answer, with what the server declared when it opened the
    session by ``server/discover``: its capabilities, instructions and server info."""
    if not isinstance(discover, Mapping):
        return initialize
    for field in ("capabilities", "instructions"):
        if field in discover:
            initialize[field] = copy.deepcopy(discover[field])
    stamp = discover.get("_meta")
    if isinstance(stamp, Mapping) and isinstance(stamp.get(types.SERVER_INFO_META_KEY), Mapping):
        initialize["serverInfo"] = dict(stamp[types.SERVER_INFO_META_KEY])
    return initialize


def handshake_only(session: Session) -> bool:
    """Whether the server opened the session by the handshake alone (it answered no
    ``server/discover``): served so too, a host that probes for the 2026 protocol is
    told no, and opens by the handshake as it would have with the server."""
    handshake = session.handshake
    return handshake is not None and "result" not in (handshake.get(DISCOVER) or {})


def discover_refused(session: Session) -> dict[str, Any]:
    """The JSON-RPC error a session opened by the handshake alone answers
    ``server/discover`` with: the server's own, else what a server of that protocol says."""
    error = (session.handshake or {}).get(DISCOVER, {}).get("error")
    if isinstance(error, dict):
        return dict(error)
    return {"code": types.METHOD_NOT_FOUND, "message": "Method not found", "data": DISCOVER}


async def serve_stream(server: Server[Any], session: Session, read: Any, write: Any) -> None:
    """Serve one host over a stream pair, in the protocol era the server was reached in."""
    if not handshake_only(session):
        await server.run(read, write, server.create_initialization_options())
        return
    async with server.lifespan(server) as state:
        options = server.create_initialization_options()
        await serve_loop(server, read, write, lifespan_state=state, init_options=options)


def leave_process(session: Session) -> Gone:
    """The default ``on_gone``: a disconnect closes the cassette (its end line written) and
    ends the process; a crash ends it with the cassette left as a killed process leaves it."""

    def gone(why: str) -> NoReturn:
        if why == "crash":
            session.deck.abandon()
            print(
                f"faultdeck: crash fault: the server died (seq {len(session.deck.calls)})",
                file=sys.stderr,
                flush=True,
            )
            os._exit(1)
        session.deck.close("ok")
        print(
            f"faultdeck: {why} fault: the server went away (seq {len(session.deck.calls)})",
            file=sys.stderr,
            flush=True,
        )
        os._exit(0)

    return gone


class Answers:
    """Answers each request through ``session``: the handlers of ``build_server``.

    Args:
        session: the deck-side session every request goes through.
        on_gone: ends the server for a disconnect or crash fault.
        hold: how long a ``timeout`` fault holds its request (seconds).
    """

    def __init__(self, session: Session, on_gone: Gone, *, hold: float = HOLD) -> None:
        self.session = session
        self.on_gone = on_gone
        self.hold = hold
        self.input_schemas: dict[str, Mapping[str, Any]] = {}
        recording = session.deck.recording
        for entry in recording.entries if recording is not None else ():
            if entry.name == LIST_TOOLS and entry.result == "out":
                self._learn(entry.value)

    def _learn(self, listing: Any) -> None:
        if isinstance(listing, Mapping):
            for name, tool in listed(listing.get("tools") or ()).items():
                if isinstance(tool.get("inputSchema"), Mapping):
                    self.input_schemas[name] = tool["inputSchema"]

    def input_schema(self, name: str) -> Mapping[str, Any] | None:
        """A tool's ``inputSchema`` as the session last listed it (the streamable-HTTP
        transport checks ``Mcp-Param-*`` headers with it): never a request of its own, which
        would be a boundary call the recording does not have."""
        return self.input_schemas.get(name)

    async def answer(self, method: str, params: dict[str, Any]) -> HandlerResult:
        """One request's result as MCP JSON; raises ``MCPError`` for an MCP error answer."""
        try:
            reply = await self.session.request(method, params)
        except ReplayMiss as miss:
            raise MCPError(MISS_CODE, str(miss)) from None
        except ProcessKilled:
            self.on_gone("crash")
        if reply.shape is not None:
            return await self._fault(method, params, reply)
        if reply.error is not None:
            code, message, data = reply.error
            raise MCPError(code, message, data)
        if method == "tools/list":
            self._learn(reply.value)
        raise _AsSent(reply.value or {})

    async def _fault(self, method: str, params: dict[str, Any], reply: Reply) -> HandlerResult:
        shape = reply.shape
        if shape == "error_result" and method == "tools/call":
            text = types.TextContent(type="text", text=reply.message)
            return types.CallToolResult(content=[text], is_error=True)
        if shape == "timeout":
            await anyio.sleep(self.hold)  # the client gives up first and cancels it
            raise MCPError(types.REQUEST_TIMEOUT, f"Request {method!r} was never answered")
        if shape == "disconnect":
            self.on_gone("disconnect")
        if shape == "malformed":
            if method == "tools/call" and reply.output_schema is not None:
                text = types.TextContent(type="text", text="malformed")
                broken = {"faultdeck": "a result that breaks this tool's outputSchema"}
                return types.CallToolResult(content=[text], structured_content=broken)
            raise _AsSent(dict(_NOT_A_RESULT))
        raise MCPError(types.INTERNAL_ERROR, reply.message)

    # -- the handlers ------------------------------------------------------------------------

    async def list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> HandlerResult:
        return await self.answer("tools/list", _page(params))

    async def call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> HandlerResult:
        asked = {"name": params.name, "arguments": dict(params.arguments or {})}
        return await self.answer("tools/call", asked)

    async def list_resources(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> HandlerResult:
        return await self.answer("resources/list", _page(params))

    async def read_resource(
        self, ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
    ) -> HandlerResult:
        return await self.answer("resources/read", {"uri": str(params.uri)})

    async def list_prompts(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> HandlerResult:
        return await self.answer("prompts/list", _page(params))

    async def get_prompt(
        self, ctx: ServerRequestContext[Any, Any], params: types.GetPromptRequestParams
    ) -> HandlerResult:
        asked = {"name": params.name, "arguments": dict(params.arguments or {})}
        return await self.answer("prompts/get", asked)


def _page(params: types.PaginatedRequestParams | None) -> dict[str, Any]:
    cursor = params.cursor if params is not None else None
    return {"cursor": cursor} if cursor else {}


def build_server(
    session: Session, *, on_gone: Gone | None = None, hold: float = HOLD, name: str = "faultdeck"
) -> Server[Any]:
    """The MCP server that answers every request through ``session``.

    Args:
        session: the deck-side session (replaying, or with the live server as upstream).
        on_gone: ends the server for a disconnect or crash fault; by default
            ``leave_process(session)``.
        hold: how long a ``timeout`` fault holds its request (seconds).
        name: the server's name in its ``initialize`` answer.
    """
    answers = Answers(session, on_gone or leave_process(session), hold=hold)
    server: Server[Any] = Server(
        name,
        get_tool_input_schema=answers.input_schema,
        on_list_tools=answers.list_tools,  # type: ignore[arg-type]
        on_call_tool=answers.call_tool,  # type: ignore[arg-type]
        on_list_resources=answers.list_resources,  # type: ignore[arg-type]
        on_read_resource=answers.read_resource,  # type: ignore[arg-type]
        on_list_prompts=answers.list_prompts,  # type: ignore[arg-type]
        on_get_prompt=answers.get_prompt,  # type: ignore[arg-type]
    )
    server.middleware += [_opening(session), _send_as_is]
    return server
