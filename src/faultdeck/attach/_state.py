"""Which deck the routed clients answer through, and the one way a request is routed.

Every adapter routes a request the same way: it asks ``deciding()`` for the deck (none when
nothing is intercepted, or when the request is one a deck already decided: the explicit
``fd.http.Transport`` sets ``THROUGH_DECK`` around its live calls), and hands the request
to ``send`` (``asend`` on an event loop) as an ``httpx``/``httpx2`` request, with ``live``,
the function that sends it for real. ``send`` puts it through the deck's ``Transport``, as
``fd.http.Transport`` would: the same call, key, redaction, faults and streams. When the
deck lets the call go live, the transport's inner transport (``_Via``) calls ``live`` with
``THROUGH_DECK`` set, so the library's own patched send lets it pass.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import Any

from .._base.context import THROUGH_DECK
from .._deck.deck import Deck

Live = Callable[[Any], Any]
"""Sends a request for real and returns the library's answer as an ``httpx`` response."""
ALive = Callable[[Any], Awaitable[Any]]

_ACTIVE: list[Deck] = []
"""The decks requests are routed through, the innermost last (``intercept`` blocks nest)."""
_NOTICE: list[str] = []
"""What a process that does not record says on its first request that would have been."""
_LIVE: ContextVar[Callable[[Any], Any] | None] = ContextVar("faultdeck_live_send", default=None)
_TRANSPORTS: dict[tuple[int, Any, int], Any] = {}
_LOCK = threading.Lock()


def deciding() -> Deck | None:
    """The deck that decides a request made now; ``None`` when no deck routes requests, or
    when the request is one a deck already decided."""
    if THROUGH_DECK.get():
        return None
    if _ACTIVE:
        return _ACTIVE[-1]
    if _NOTICE:
        with _LOCK:
            said = _NOTICE[:]
            _NOTICE.clear()
        for line in said:
            sys.stderr.write(line + "\n")
    return None


def enter(deck: Deck) -> None:
    """Route requests through ``deck`` until ``leave(deck)``."""
    with _LOCK:
        _ACTIVE.append(deck)


def leave(deck: Deck) -> None:
    """Stop routing requests through ``deck`` (its innermost ``enter``)."""
    with _LOCK:
        for i in range(len(_ACTIVE) - 1, -1, -1):
            if _ACTIVE[i] is deck:
                del _ACTIVE[i]
                break
        if deck not in _ACTIVE:
            for key in [k for k in _TRANSPORTS if k[0] == id(deck)]:
                del _TRANSPORTS[key]


def notice(line: str) -> None:
    """Say ``line`` on the first request this process makes that would have been routed."""
    with _LOCK:
        _NOTICE[:] = [line]


def send(deck: Deck, httpx: Any, request: Any, live: Live) -> Any:
    """Answer ``request`` (an ``httpx`` or ``httpx2`` request, as ``httpx`` names the
    module) through ``deck``: from the cassette, a fault, or ``live``."""
    transport = _transport(deck, httpx, 0)
    token = _LIVE.set(live)
    try:
        return transport.handle_request(request)
    finally:
        _LIVE.reset(token)


async def asend(deck: Deck, httpx: Any, request: Any, live: ALive) -> Any:
    """``send`` on an event loop; ``live`` is awaited."""
    transport = _transport(deck, httpx, 1)
    token = _LIVE.set(live)
    try:
        return await transport.handle_async_request(request)
    finally:
        _LIVE.reset(token)


def _transport(deck: Deck, httpx: Any, side: int) -> Any:
    """The deck's routing transport for ``httpx`` (one a deck, module and side, so that its
    order of streams and its clients' retries are followed across requests)."""
    key = (id(deck), httpx, side)
    found = _TRANSPORTS.get(key)
    if found is None:
        with _LOCK:
            found = _TRANSPORTS.get(key)
            if found is None:
                # (imported at the first routed request: a program's start pays nothing for it)
                from ..http import AsyncTransport, Transport

                kind = AsyncTransport if side else Transport
                found = _TRANSPORTS[key] = kind(deck, httpx=httpx, transport=_Via())
    return found


class _Via:
    """The inner transport of a routing transport: the request's own ``live`` send, made
    with ``THROUGH_DECK`` set (the library's patched send lets it pass)."""

    def handle_request(self, request: Any) -> Any:
        live = _LIVE.get()
        assert live is not None, "a routed request is sent by send()"
        token = THROUGH_DECK.set(True)
        try:
            return live(request)
        finally:
            THROUGH_DECK.reset(token)

    async def handle_async_request(self, request: Any) -> Any:
        live = _LIVE.get()
        assert live is not None, "a routed request is sent by asend()"
        token = THROUGH_DECK.set(True)
        try:
            return await live(request)
        finally:
            THROUGH_DECK.reset(token)

    def close(self) -> None:
        """Nothing to close: each request's own client holds its connections."""

    async def aclose(self) -> None:
        """Nothing to close."""
