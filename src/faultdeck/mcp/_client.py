"""``faultdeck.mcp.Client``: the mcp SDK's client, with each request a boundary call.

It takes what ``mcp.Client`` takes (a ``Server`` or ``MCPServer`` in memory, a
``StdioServerParameters``, a URL for streamable HTTP, a transport) and the same options,
and answers ``list_tools``, ``call_tool``, ``list_resources``, ``read_resource``,
``list_prompts`` and ``get_prompt`` through the deck. In replay it never starts or connects
to the server; in every other mode it connects on entering, in the task that enters.

A fault shows the way MCP delivers it: ``tool_error`` as a result with ``isError: true``,
``timeout`` as the SDK's ``MCPError`` (``REQUEST_TIMEOUT``) once the client's read timeout
has passed on the deck's clock, ``malformed_result`` as the SDK's own validation error,
``disconnect`` as ``MCPError`` "Connection closed" at this request and every later one.

What is recorded is what the server sent: the SDK client talks through a tapped transport
(``_tap.py``) that keeps each answer's JSON as it came, before the SDK's models fill in
defaults or drop fields they do not know; the session's opening (``initialize``, or
``server/discover``) is kept the same way. Replay hands back the SDK's models of those
answers, as the live SDK client would.
"""

from __future__ import annotations

from contextlib import AsyncExitStack
from contextvars import ContextVar
from types import TracebackType
from typing import Any, TypeVar, cast

import mcp
import mcp_types as types
from mcp import StdioServerParameters, stdio_client
from mcp.client import Transport
from mcp.client._memory import InMemoryTransport
from mcp.client.streamable_http import streamable_http_client
from mcp.server import Server
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel

from .._base.errors import ConfigError
from .._deck.deck import Deck
from ._calls import DISCOVER, HANDSHAKE, INITIALIZE
from ._session import Reply, Session, UpstreamError
from ._tap import Tapped, listen

M = TypeVar("M", bound=BaseModel)

# A call_tool's own read timeout, on its way to the live SDK call through the session (whose
# upstream takes only the method and params); per task, so concurrent calls keep theirs.
_CALL_TIMEOUT: ContextVar[float | None] = ContextVar("faultdeck_mcp_call_timeout", default=None)

_RESULTS: dict[str, type[BaseModel]] = {
    "tools/list": types.ListToolsResult,
    "tools/call": types.CallToolResult,
    "resources/list": types.ListResourcesResult,
    "resources/read": types.ReadResourceResult,
    "prompts/list": types.ListPromptsResult,
    "prompts/get": types.GetPromptResult,
}


def as_json(result: BaseModel) -> dict[str, Any]:
    """An SDK result as MCP JSON (its wire names, no unset fields)."""
    return result.model_dump(mode="json", by_alias=True, exclude_none=True)


class Client:
    """An MCP client session recorded into, and replayed from, ``deck``.

    Example::

        async with fd.Deck("tools.jsonl", mode="once") as deck:
            async with faultdeck.mcp.Client(deck, server) as client:
                result = await client.call_tool("search", {"q": "faultdeck"})

    Args:
        deck: the deck whose cassette holds the session.
        server: what ``mcp.Client`` connects to; ``None`` when the session only replays.
        **options: ``mcp.Client``'s options (``read_timeout_seconds``, ``mode``, ...). Its
            response cache is off unless ``cache`` is given: every request reaches the
            server, to be recorded.
    """

    def __init__(self, deck: Deck, server: Any = None, **options: Any) -> None:
        self.deck = deck
        self.server = server
        self.options = options
        self.read_timeout: float | None = options.get("read_timeout_seconds")
        self._client: mcp.Client | None = None
        self._stack: AsyncExitStack | None = None
        self._session: Session | None = None
        self._closed = False

    @property
    def session(self) -> Session:
        """The deck-side session (its schema versions, its deck)."""
        if self._session is None:
            raise RuntimeError("faultdeck.mcp.Client is used inside `async with`")
        return self._session

    @property
    def live(self) -> mcp.Client | None:
        """The SDK client connected to the server; ``None`` in replay."""
        return self._client

    async def __aenter__(self) -> Client:
        session = Session(self.deck, self._upstream)
        self._session = session
        if session.live:
            if self.server is None:
                raise ConfigError(
                    f"mode {self.deck.active_mode!r} reaches the MCP server, and "
                    "faultdeck.mcp.Client was given none: pass the server (or replay)"
                )
            options = {"cache": None, **self.options}
            transport = Tapped(_transport(self.server, options))
            stack = AsyncExitStack()
            with listen(*HANDSHAKE) as heard:
                self._client = await stack.enter_async_context(mcp.Client(transport, **options))
            self._stack = stack
            session.opened(heard.answers)
            await session.learn_tools()
        return self

    # -- how the server opened the session -----------------------------------------------------

    @property
    def server_info(self) -> types.Implementation | None:
        """The server's name and version as it declared them when the session opened (in
        replay, as recorded); ``None`` when it declared none."""
        declared = self._declared()
        if declared is not None:
            # The handshake's answer names it; server/discover's carries it in _meta.
            stamp = declared.get("_meta")
            info = declared.get("serverInfo") or (
                stamp.get(types.SERVER_INFO_META_KEY) if isinstance(stamp, dict) else None
            )
            if isinstance(info, dict):
                return types.Implementation.model_validate(info)
        return self._client.server_info if self._client is not None else None

    @property
    def server_capabilities(self) -> types.ServerCapabilities | None:
        """The server's capabilities as it declared them (in replay, as recorded)."""
        declared = self._declared()
        if declared is not None and isinstance(declared.get("capabilities"), dict):
            return types.ServerCapabilities.model_validate(declared["capabilities"])
        return self._client.server_capabilities if self._client is not None else None

    @property
    def instructions(self) -> str | None:
        """The server's instructions, if it gave any (in replay, as recorded)."""
        declared = self._declared()
        if declared is not None:
            text = declared.get("instructions")
            return text if isinstance(text, str) else None
        return self._client.instructions if self._client is not None else None

    def _declared(self) -> dict[str, Any] | None:
        """The result the session opened with: ``initialize``'s, else ``server/discover``'s."""
        handshake = self.session.handshake or {}
        for method in (INITIALIZE, DISCOVER):
            result = (handshake.get(method) or {}).get("result")
            if isinstance(result, dict):
                return result
        return None

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        stack, self._stack, self._client = self._stack, None, None
        if stack is None:
            return
        try:
            await stack.__aexit__(kind, exc, tb)
        except BaseExceptionGroup as group:
            # The SDK's task groups wrap what the block raised; let it go on as raised, as
            # it does in replay (where no SDK client runs), so `except fd.ReplayMiss` works.
            if exc is None or any(leaf is not exc for leaf in _leaves(group)):
                raise

    # -- the requests ------------------------------------------------------------------------

    async def list_tools(self, *, cursor: str | None = None) -> types.ListToolsResult:
        """The server's tools (one page)."""
        return await self._request("tools/list", {"cursor": cursor}, types.ListToolsResult)

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        read_timeout_seconds: float | None = None,
    ) -> types.CallToolResult:
        """Call a tool: a ``tool`` boundary call named after it, its arguments as args."""
        params = {"name": name, "arguments": arguments or {}}
        return await self._request(
            "tools/call", params, types.CallToolResult, timeout=read_timeout_seconds
        )

    async def list_resources(self, *, cursor: str | None = None) -> types.ListResourcesResult:
        """The server's resources (one page)."""
        return await self._request("resources/list", {"cursor": cursor}, types.ListResourcesResult)

    async def read_resource(self, uri: str) -> types.ReadResourceResult:
        """Read one resource."""
        return await self._request("resources/read", {"uri": str(uri)}, types.ReadResourceResult)

    async def list_prompts(self, *, cursor: str | None = None) -> types.ListPromptsResult:
        """The server's prompts (one page)."""
        return await self._request("prompts/list", {"cursor": cursor}, types.ListPromptsResult)

    async def get_prompt(
        self, name: str, arguments: dict[str, str] | None = None
    ) -> types.GetPromptResult:
        """Get one prompt, filled in with ``arguments``."""
        params = {"name": name, "arguments": arguments or {}}
        return await self._request("prompts/get", params, types.GetPromptResult)

    # -- how a request is answered -------------------------------------------------------------

    async def _request(
        self, method: str, params: dict[str, Any], result: type[M], *, timeout: float | None = None
    ) -> M:
        if self._closed:
            raise MCPError(types.CONNECTION_CLOSED, "Connection closed")
        token = _CALL_TIMEOUT.set(timeout)
        try:
            reply = await self.session.request(method, params)
        finally:
            _CALL_TIMEOUT.reset(token)
        if reply.shape is not None:
            return await self._fault(method, params, reply, result, timeout)
        if reply.error is not None:
            raise MCPError(*reply.error)
        return result.model_validate(reply.value or {})

    async def _fault(
        self,
        method: str,
        params: dict[str, Any],
        reply: Reply,
        result: type[M],
        timeout: float | None,
    ) -> M:
        shape = reply.shape
        if shape == "error_result" and method == "tools/call":
            text = types.TextContent(type="text", text=reply.message)
            return result.model_validate(types.CallToolResult(content=[text], is_error=True))
        if shape == "timeout":
            wait = timeout if timeout is not None else self.read_timeout
            await self.deck.clock.aadvance(wait or 0.0)
            raise MCPError(types.REQUEST_TIMEOUT, f"Request {method!r} timed out")
        if shape == "disconnect":
            self._closed = True
            raise MCPError(types.CONNECTION_CLOSED, "Connection closed")
        if shape == "malformed":
            if reply.output_schema is not None:
                # What the SDK raises for a result that does not meet the tool's outputSchema.
                raise RuntimeError(
                    f"Tool {params['name']} has an output schema but did not return "
                    "structured content"
                )
            # What the SDK raises for a result that is not one: pydantic's ValidationError.
            return result.model_validate({"content": "not a list of content blocks", "tools": 0})
        raise MCPError(types.INTERNAL_ERROR, reply.message)

    async def _upstream(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        client = self._client
        if client is None:
            raise RuntimeError("faultdeck.mcp.Client is not connected to a server")
        try:
            with listen(method) as heard:
                model = await _send(client, method, params, _CALL_TIMEOUT.get())
        except MCPError as exc:
            raise UpstreamError(exc.code, exc.message, exc.data) from exc
        sent = heard.result(method)
        # None: the SDK answered without asking the server (a response cache the caller
        # turned on): its model is all there is.
        return sent if sent is not None else as_json(model)


def _transport(server: Any, options: dict[str, Any]) -> Transport:
    """The SDK transport ``mcp.Client`` would reach ``server`` through (a server in memory
    through JSON-RPC streams, as a process would be, so that its answers can be tapped)."""
    if isinstance(server, Server | MCPServer):
        return InMemoryTransport(server, raise_exceptions=bool(options.get("raise_exceptions")))
    if isinstance(server, str):
        return streamable_http_client(server)
    if isinstance(server, StdioServerParameters):
        return stdio_client(server)
    return cast("Transport", server)


def _leaves(group: BaseExceptionGroup[BaseException]) -> list[BaseException]:
    """The exceptions in ``group`` and in the groups nested in it."""
    found: list[BaseException] = []
    for exc in group.exceptions:
        found.extend(_leaves(exc) if isinstance(exc, BaseExceptionGroup) else [exc])
    return found


async def _send(
    client: mcp.Client, method: str, params: dict[str, Any], timeout: float | None
) -> BaseModel:
    cursor = params.get("cursor")
    if method == "tools/list":
        return await client.list_tools(cursor=cursor)
    if method == "tools/call":
        arguments = params.get("arguments") or {}
        return await client.call_tool(params["name"], arguments, read_timeout_seconds=timeout)
    if method == "resources/list":
        return await client.list_resources(cursor=cursor)
    if method == "resources/read":
        return await client.read_resource(params["uri"])
    if method == "prompts/list":
        return await client.list_prompts(cursor=cursor)
    return await client.get_prompt(params["name"], params.get("arguments") or {})
