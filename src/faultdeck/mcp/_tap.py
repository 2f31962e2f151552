"""The live server's answers as it sent them: an SDK transport that keeps each one's JSON.

The mcp SDK reads a server's answer into its own models, which fill in defaults the server
never sent (``isError: false``, cache hints) and drop fields they do not know. A recording
must hold what the server said, so ``tap(transport)`` wraps the transport the SDK client
talks through (httpx's habit: a transport that wraps a transport, nothing patched) and,
for a request made inside ``listen(methods)``, keeps the JSON-RPC answer the server sent
for it, byte for byte as parsed: its ``result`` or its ``error``.

The request and its answer meet by id: the SDK writes a request in the task that makes it
(where ``listen``'s context is), and its answer comes back through the read stream with
the same id. The last request of a listened method wins: one the SDK sends again (a
relisting, an input round) answers for the call.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from types import TracebackType
from typing import Any

from mcp.client._transport import Transport, TransportStreams
from mcp.shared.message import SessionMessage
from mcp_types import JSONRPCError, JSONRPCRequest, JSONRPCResponse, RequestId


class Heard:
    """The answers the server sent to the requests made inside one ``listen``.

    Attributes:
        methods: the methods listened for.
        answers: each method's last answer, as the JSON-RPC message's ``result`` or
            ``error`` member: ``{"result": {...}}`` or ``{"error": {...}}``.
    """

    def __init__(self, methods: tuple[str, ...]) -> None:
        self.methods = methods
        self.answers: dict[str, dict[str, Any]] = {}

    def result(self, method: str) -> dict[str, Any] | None:
        """The result the server sent for ``method``; ``None`` if it sent none."""
        answer = self.answers.get(method)
        return answer.get("result") if answer is not None else None


_LISTENING: ContextVar[Heard | None] = ContextVar("faultdeck_mcp_listening", default=None)


@contextmanager
def listen(*methods: str) -> Iterator[Heard]:
    """Keep the server's answers to the requests of ``methods`` this task makes meanwhile."""
    heard = Heard(methods)
    token = _LISTENING.set(heard)
    try:
        yield heard
    finally:
        _LISTENING.reset(token)


class Tapped:
    """``transport``, with the answers to listened requests kept (see ``listen``).

    Args:
        transport: the SDK transport to the server (stdio, streamable HTTP, in memory...).
    """

    def __init__(self, transport: Transport) -> None:
        self.transport = transport
        self.waiting: dict[RequestId, tuple[Heard, str]] = {}

    async def __aenter__(self) -> TransportStreams:
        read, write = await self.transport.__aenter__()
        return _Read(read, self), _Write(write, self)

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        return await self.transport.__aexit__(kind, exc, tb)

    def sent(self, item: object) -> None:
        """A message on its way to the server: a listened request waits for its answer."""
        heard = _LISTENING.get()
        if heard is None or not isinstance(item, SessionMessage):
            return
        message = item.message
        if isinstance(message, JSONRPCRequest) and message.method in heard.methods:
            self.waiting[message.id] = (heard, message.method)

    def received(self, item: object) -> None:
        """A message from the server: the answer to a listened request is kept."""
        if not self.waiting or not isinstance(item, SessionMessage):
            return
        message = item.message
        if isinstance(message, JSONRPCResponse):
            answer = {"result": copy.deepcopy(message.result)}
        elif isinstance(message, JSONRPCError):
            error = message.error.model_dump(mode="json", by_alias=True, exclude_unset=True)
            answer = {"error": error}
        else:
            return
        waiting = self.waiting.pop(message.id, None) if message.id is not None else None
        if waiting is not None:
            heard, method = waiting
            heard.answers[method] = answer


class _Read:
    """The read stream, each message shown to the tap on its way in."""

    def __init__(self, stream: Any, tap: Tapped) -> None:
        self._stream = stream
        self._tap = tap

    async def receive(self) -> Any:
        item = await self._stream.receive()
        self._tap.received(item)
        return item

    def __aiter__(self) -> _Read:
        return self

    async def __anext__(self) -> Any:
        item = await self._stream.__anext__()
        self._tap.received(item)
        return item

    async def aclose(self) -> None:
        await self._stream.aclose()

    async def __aenter__(self) -> _Read:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class _Write:
    """The write stream, each message shown to the tap on its way out."""

    def __init__(self, stream: Any, tap: Tapped) -> None:
        self._stream = stream
        self._tap = tap

    async def send(self, item: Any, /) -> None:
        self._tap.sent(item)
        await self._stream.send(item)

    async def aclose(self) -> None:
        await self._stream.aclose()

    async def __aenter__(self) -> _Write:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)
