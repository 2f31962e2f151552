"""``httpx`` and ``httpx2``: every ``HTTPTransport`` and ``AsyncHTTPTransport`` (the
transports every client makes unless given another; the openai, anthropic, mistral, groq,
google-genai and ollama SDKs, litellm and LangChain all send through them) answers through
the deck. A client given a transport of its own (``MockTransport``, ``fd.http.Transport``)
is left to it."""

from __future__ import annotations

import functools
from types import ModuleType
from typing import Any

from ._state import asend, deciding, send
from ._table import Undo, replace


def route(httpx: ModuleType) -> Undo:
    """Route ``httpx``'s (or ``httpx2``'s) network transports; the undo."""
    sync, asynchronous = httpx.HTTPTransport, httpx.AsyncHTTPTransport
    handle = sync.handle_request
    ahandle = asynchronous.handle_async_request

    def handle_request(self: Any, request: Any) -> Any:
        deck = deciding()
        if deck is None:
            return handle(self, request)
        return send(deck, httpx, request, functools.partial(handle, self))

    async def handle_async_request(self: Any, request: Any) -> Any:
        deck = deciding()
        if deck is None:
            return await ahandle(self, request)
        return await asend(deck, httpx, request, functools.partial(ahandle, self))

    undo_sync = replace(sync, "handle_request", handle_request)
    undo_async = replace(asynchronous, "handle_async_request", handle_async_request)

    def undo() -> None:
        undo_sync()
        undo_async()

    return undo
