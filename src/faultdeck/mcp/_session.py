"""An MCP session's requests as boundary calls of one deck.

``Session.request(method, params)`` is one request: the deck decides it (``deck.begin``),
and it is answered from the cassette, by the fault that stands in for it, or by the live
server (``upstream``), and recorded. What comes back is a ``Reply``: the result as MCP JSON,
an MCP error, or the fault's shape (``FaultKind.mcp``) for the caller to show the way its
side of the wire does: ``faultdeck.mcp.Client`` raises the SDK's own errors, ``faultdeck
mcp serve`` answers (or fails to answer) on the wire.

The session keeps each tool's schema version: the live listing's in the modes that reach
the server (checked against the cassette's, one warning per tool that changed), the
cassette's in replay. It keeps how the server opened the session too (``handshake``: its
``initialize`` answer, its ``server/discover`` one), as the server sent it: live, the first
call the session records stores it in its ``meta``; in replay it comes from there.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any
from warnings import warn

from .._base.errors import CassetteError, SchemaChanged
from .._cassette.reader import load
from .._deck.altering import altered
from .._deck.call import Call
from .._deck.deck import Deck
from .._keys.canonical import SCHEMA_DEFAULT
from ..faults import KINDS
from ..faults._kinds import McpShape
from ..faults._results import View
from ._calls import (
    call_args,
    call_name,
    listed,
    recorded_handshake,
    recorded_tools,
    schema_version,
)
from ._results import NO_RESULT, TOOL_RESULT

Upstream = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]
"""The live server: ``(method, params)`` to the result, as MCP JSON."""

MCP_ERROR = "MCPError"
IS_ERROR = "isError"
"""The error a call's log record shows for a tool result with ``isError: true``: the loop
sees no exception, yet the attempt failed, and the invariants count it so."""
_MCP_MODULE = "mcp.shared.exceptions"


class UpstreamError(Exception):
    """The live server answered with an MCP error: its code, message and data."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        self.code = code
        self.message = message
        self.data = data
        super().__init__(message)


@dataclass(frozen=True, slots=True)
class Reply:
    """How one request ended.

    Attributes:
        value: the result as MCP JSON, when it has one.
        error: an MCP error to answer with: ``(code, message, data)``.
        shape: how the fault that stood in for the request shows, if one did.
        message: the fault's message.
        output_schema: the tool's ``outputSchema``, where it has one (a malformed result
            breaks it).
    """

    value: dict[str, Any] | None = None
    error: tuple[int, str, Any] | None = None
    shape: McpShape | None = None
    message: str = ""
    output_schema: Any = None


class Session:
    """The requests of one MCP session, made through ``deck``.

    Args:
        deck: the deck the requests are boundary calls of.
        upstream: the live server; ``None`` where the session never goes live.
    """

    def __init__(self, deck: Deck, upstream: Upstream | None) -> None:
        self.deck = deck
        self.upstream = upstream
        recording = deck.recording
        if recording is None and deck.active_mode == "record" and os.path.exists(deck.path):
            try:
                recording = load(deck.path)  # the cassette this recording will replace
            except CassetteError:
                recording = None
        self._recorded, self.outputs = recorded_tools(recording)
        self.versions = dict(self._recorded)
        self._warned: set[str] = set()
        self.handshake = recorded_handshake(deck.recording)
        self._unstored: dict[str, Any] | None = None

    def opened(self, handshake: dict[str, Any]) -> None:
        """The live server opened the session so: answer hosts with it, and store it with
        the first call this session records."""
        self.handshake = handshake
        self._unstored = handshake

    @property
    def live(self) -> bool:
        """Whether requests may reach the server (every mode but replay)."""
        return self.deck.active_mode != "replay"

    async def learn_tools(self) -> None:
        """Read the live server's tool listing (not a boundary call), to key each tool's
        calls by its live schema and to say which schemas changed since the recording."""
        if self.upstream is None or self.deck.active_mode == "off":
            return
        cursor: str | None = None
        for _ in range(100):  # a paginator that never ends cannot hang the session
            page = await self.upstream("tools/list", {"cursor": cursor} if cursor else {})
            self._absorb(page)
            cursor = page.get("nextCursor")
            if not cursor:
                return

    def _absorb(self, listing: Mapping[str, Any]) -> None:
        for name, tool in listed(listing.get("tools") or ()).items():
            version = schema_version(tool.get("inputSchema"))
            if tool.get("outputSchema") is not None:
                self.outputs[name] = tool["outputSchema"]
            was = self._recorded.get(name)
            if was is not None and was != version and name not in self._warned:
                self._warned.add(name)
                warn(
                    f"MCP tool {name!r} has a new input schema since {self.deck.path} was "
                    f"recorded ({was} then, {version} now): its calls get new keys and miss "
                    "their recorded answers; re-record them",
                    SchemaChanged,
                    stacklevel=2,
                )
            self.versions[name] = version

    async def request(self, method: str, params: dict[str, Any]) -> Reply:
        """Make one request through the deck.

        Raises:
            ReplayMiss: the cassette has no answer for it and the mode may not go live.
            ProcessKilled: a crash fault lands on it.
        """
        name = call_name(method, params)
        tool = method == "tools/call"
        schema = self.versions.get(name, SCHEMA_DEFAULT) if tool else SCHEMA_DEFAULT
        self.deck.mark_remote(name)  # an MCP server is a service: it can time out, go away
        call = await self.deck.abegin(
            "tool", name, call_args(method, params), schema_version=schema
        )
        if self._unstored is not None and call.records:
            call.meta, self._unstored = {"handshake": self._unstored}, None
        output = self.outputs.get(name) if tool else None
        fault = call.fault
        if fault is not None and fault.raises and (call.fault_applied or call.recorded is None):
            return self._stand_in(call, method, output)
        # A delay (latency) is applied again on replay, even one the recording was made under.
        await self.deck.clock.aadvance(call.delay)
        if call.recorded is not None:
            if self.deck.latency == "recorded":
                # A delay the recording was made under is in its ms already.
                already = call.delay if call.fault_applied else 0.0
                await self.deck.clock.aadvance(max(0.0, call.recorded.ms / 1000 - already))
            reply = _replayed(call)
            if reply.value is None:
                return reply
            return Reply(value=altered(call, reply.value, _view(method)))
        return await self._live(call, method, params)

    def _stand_in(self, call: Call, method: str, output: Any) -> Reply:
        fault = call.fault
        assert fault is not None
        shape = KINDS[fault.kind].mcp
        if shape is None:
            call.inject()  # the crash: the process dies here, as it does in-process
        message = str(fault.error())
        if call.fault_applied:
            # Recorded under this fault: the answer it left is the fault's again.
            shown = IS_ERROR if shape == "error_result" and method == "tools/call" else MCP_ERROR
            call.answered(error=shown, code=fault.kind)
        elif shape == "error_result" and method == "tools/call":
            stored = {"content": [{"type": "text", "text": message}], "isError": True}
            call.complete("out", stored, ms=0.0, source="fault", error=IS_ERROR, code=fault.kind)
        else:
            stored = {"type": MCP_ERROR, "module": _MCP_MODULE, "message": message}
            call.complete("error", stored, ms=0.0, source="fault", error=MCP_ERROR, code=fault.kind)
        return Reply(shape=shape, message=message, output_schema=output)

    async def _live(self, call: Call, method: str, params: dict[str, Any]) -> Reply:
        upstream = self.upstream
        with call:
            if upstream is None:
                raise RuntimeError(
                    f"seq {call.seq}: {call.name} has no recorded answer and this session "
                    "has no server to ask; give faultdeck.mcp.Client a server"
                )
            run = call.runner(lambda: upstream(method, params))
            try:
                awaitable = run()
                value = await awaitable if awaitable is not None else {}
            except UpstreamError as exc:
                stored = {
                    "type": MCP_ERROR,
                    "module": _MCP_MODULE,
                    "message": exc.message,
                    "mcp_code": exc.code,
                }
                if exc.data is not None:
                    stored["data"] = exc.data
                call.complete(
                    "error",
                    call.store("error", stored),
                    ms=self._ms(call),
                    error=MCP_ERROR,
                    code=str(exc.code),
                )
                return Reply(error=(exc.code, exc.message, exc.data))
            answer = altered(call, value, _view(method))  # recorded as the loop gets it
            call.result(answer)
        if method == "tools/list":
            self._absorb(value)
        return Reply(value=answer)

    def _ms(self, call: Call) -> float:
        return round((self.deck.clock.now() - call.started) * 1000, 3)


def _view(method: str) -> View:
    """Where a result fault looks in the answer to ``method``: a tool result, or nothing."""
    return TOOL_RESULT if method == "tools/call" else NO_RESULT


def _replayed(call: Call) -> Reply:
    entry = call.recorded
    assert entry is not None
    if entry.result == "error" and entry.value.get("type") == MCP_ERROR:
        code = entry.value.get("mcp_code")
        call.answered(error=MCP_ERROR, code=str(code))
        message = str(entry.value.get("message", ""))
        return Reply(
            error=(int(code) if isinstance(code, int) else -32603, message, entry.value.get("data"))
        )
    if entry.result == "out" and isinstance(entry.value, dict) and entry.value.get("isError"):
        call.answered(learn=entry.value, as_recorded=True, error=IS_ERROR)
        return Reply(value=entry.fresh_value())
    value = call.replay()  # raises a recorded error of another kind
    return Reply(value=value if isinstance(value, dict) else {})
