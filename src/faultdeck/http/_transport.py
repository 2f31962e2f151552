"""Transports that put a deck between an HTTP client and the network.

``Transport(deck, httpx=httpx2)`` wraps the real transport of ``httpx`` or ``httpx2`` (the
same code for both: the module is a parameter). Every attempt is one boundary call, so an
SDK's own retries show in the report and count in the call budget. A streamed response is
recorded event by event as the client reads it (a tee, never buffered first) and replayed
event by event with its recorded timing on the deck's clock. Faults come back shaped like
a provider's: a 429 with ``retry-after-ms``, a 529, a dropped connection, a stream cut
after its first event, a tool call whose arguments break their schema inside a 200.
"""

from __future__ import annotations

import atexit
import importlib
import os
import threading
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from .._base.clock import VirtualClock
from .._base.context import THROUGH_DECK
from .._deck.deck import Deck
from ._exchange import Exchange
from ._order import Order
from ._providers import host_of
from ._shapes import KEEP_REQUEST_HEADERS, header_names, name_of
from ._streams import is_stream

if TYPE_CHECKING:
    # To a type checker each transport is the transport type of both httpx and httpx2, so
    # that `httpx2.Client(transport=fd.http.Transport(deck, httpx=httpx2))` checks; at run
    # time they are plain classes, as the clients need nothing more.
    import httpx as _httpx
    import httpx2 as _httpx2

    # The two bases disagree on their request types; the transports below override both.
    class _SyncBases(_httpx.BaseTransport, _httpx2.BaseTransport):  # type: ignore[misc]
        pass

    class _AsyncBases(_httpx.AsyncBaseTransport, _httpx2.AsyncBaseTransport):  # type: ignore[misc]
        pass

else:
    _SyncBases = _AsyncBases = object


def _module(httpx: Any) -> Any:
    if httpx is not None:
        return httpx
    try:
        return importlib.import_module("httpx")
    except ImportError:
        raise ImportError(
            "fd.http.Transport needs httpx or httpx2: pip install 'faultdeck[http]', or pass "
            "httpx=httpx2"
        ) from None


_LIVE: dict[tuple[Any, int, str], Any] = {}
"""What each HTTP module's transports share in this process, by module, pid (a forked child
makes its own) and what it is: the sync transport (``HTTPTransport``), the TLS context of
the async ones (``create_ssl_context``)."""
_LIVE_LOCK = threading.Lock()


def _shared(httpx: Any, make: str) -> Any:
    key = (httpx, os.getpid(), make)
    with _LIVE_LOCK:
        found = _LIVE.get(key)
        if found is None:
            found = _LIVE[key] = getattr(httpx, make)()
            if hasattr(found, "close"):  # its idle connections, closed before Python exits
                atexit.register(found.close)
    return found


def live_transport(httpx: Any) -> Any:
    """The live transport every sync ``Transport`` on ``httpx`` shares, made on the first
    live call in this process: one TLS context (tens of milliseconds to load the system's
    certificates) and one connection pool for a whole recorded test suite, not one a deck."""
    return _shared(httpx, "HTTPTransport")


def async_live_transport(httpx: Any) -> Any:
    """A live async transport on ``httpx``'s shared TLS context. Each ``AsyncTransport``
    has its own: an async pool's connections belong to the event loop that opened them, and
    a test suite runs a loop a test."""
    return httpx.AsyncHTTPTransport(verify=_shared(httpx, "create_ssl_context"))


class _Base:
    def __init__(
        self,
        deck: Deck,
        *,
        httpx: Any = None,
        transport: Any = None,
        keep_headers: Iterable[str] = (),
        stream_timing: bool = False,
    ) -> None:
        self.deck = deck
        self.stream_timing = stream_timing or deck.latency == "recorded"
        self.httpx = _module(httpx)
        self.inner = transport
        self.shares_inner = False
        self.keep = KEEP_REQUEST_HEADERS | header_names(keep_headers, "keep_headers")
        self._failures: set[str] = set()
        self._bodies: Mapping[int, bytes] | None = None
        self.order = Order()
        # Whoever serves the program puts its own waits on the deck's clock (a Node program's
        # clock, which the proxy reads): an SDK's retry is not inferred then.
        self.program_keeps_clock = False

    def bodies(self) -> Mapping[int, bytes]:
        """The recording's kept answer bodies by line (``Recording.bodies``), read once."""
        bodies = self._bodies
        if bodies is None:
            recording = self.deck.recording
            bodies = self._bodies = recording.bodies if recording is not None else {}
        return bodies

    def has_failures(self) -> bool:
        """Whether some request failed and its retry may still come."""
        return bool(self._failures)

    def failed(self, identity: str) -> None:
        """Remember that a request failed: its client may retry it."""
        self._failures.add(identity)

    def waited_before(self, identity: str, headers: Any = None) -> None:
        """A request that failed is sent again. On a virtual clock, an SDK's own retry
        (``x-stainless-retry-count`` above 0 in ``headers``) puts on the deck's clock the
        wait the SDK decided, as openai's and anthropic's clients decide it: the failed
        answer's Retry-After (``retry-after-ms``, else ``retry-after`` in seconds, as the
        call log holds it) when it gave one, else their backoff before its random jitter,
        0.5 s doubling with each retry up to 8 s. Nothing real is measured, so a run gives
        the same waits every time; a loop's own retry adds nothing, having waited on the
        deck's clock itself."""
        if identity not in self._failures:
            return
        self._failures.discard(identity)
        clock = self.deck.clock
        if headers is None or not isinstance(clock, VirtualClock):
            return
        # (imported here: the attach package routes requests through this module)
        from ..attach._clock import bound_clock

        if self.program_keeps_clock or bound_clock() is clock:
            return  # the program's time follows the clock: the SDK's own sleep is on it
        try:
            retries = int(headers.get("x-stainless-retry-count", "0"))
        except ValueError:
            return
        if retries <= 0:
            return
        method, _, rest = identity.partition(" ")
        url = self.httpx.URL(rest.rpartition(" ")[0])
        host = host_of(headers.get("host"), url.host)
        name = name_of(method, url.path, host=host, agent=headers.get("user-agent"))[1]
        names = {name, self.deck.redactor.redact_text(name)}
        failures = [c for c in self.deck.calls if c.error is not None and c.name in names]
        retry_after = failures[-1].retry_after if failures else None
        if retry_after is not None and retry_after > 0:
            clock.sleep(retry_after)
        else:
            clock.sleep(min(0.5 * 2.0 ** (retries - 1), 8.0))


class Transport(_Base, _SyncBases):
    """A sync transport for ``httpx.Client`` or ``httpx2.Client`` that routes every request
    through ``deck``.

    Args:
        deck: the deck.
        httpx: the HTTP module, ``httpx`` (the default) or ``httpx2``.
        transport: the real transport for live calls. By default the process's one
            ``httpx.HTTPTransport()``, which every ``Transport`` on the same module shares
            (its TLS context and connection pool): made when a call first goes live (replay
            opens no socket), and left open when this transport closes.
        keep_headers: request headers to keep in args (so in the key) besides
            ``anthropic-version``, ``anthropic-beta``, ``openai-beta`` and Bedrock's
            ``x-amzn-bedrock-*`` options; any case.
        stream_timing: replay streams with their recorded timing on a system clock too
            (on a ``VirtualClock`` they always have it; ``latency="recorded"`` implies it).
    """

    def handle_request(self, request: Any) -> Any:
        """Answer one request: from the cassette, a fault, or the network."""
        exchange = Exchange(self, request, request.read(), side=0)
        step = exchange.first_step()
        self.deck.clock.advance(step.delay)
        if step.response is not None:
            return step.response
        if self.inner is None:
            self.inner, self.shares_inner = live_transport(self.httpx), True
        through = THROUGH_DECK.set(True)
        try:
            response = self.inner.handle_request(exchange.request)  # as sent: see Exchange
        except Exception as exc:
            exchange.live_error(step.call, exc)
            raise
        finally:
            THROUGH_DECK.reset(through)
        if is_stream(response.headers.get("content-type", ""), exchange.kind):
            return exchange.live_stream(step, response)
        if not exchange.rewrites(step):
            return exchange.live_body(step, response)
        content = response.read()
        response.close()
        return exchange.live_answer(step, response, content)

    def close(self) -> None:
        """Close the real transport, if one was given or made (the shared one stays open)."""
        if self.inner is not None and not self.shares_inner:
            self.inner.close()

    def __enter__(self) -> Transport:
        return self

    def __exit__(self, *args: object) -> None:
        self.close()


class AsyncTransport(_Base, _AsyncBases):
    """``Transport`` for ``httpx.AsyncClient`` and ``httpx2.AsyncClient``; same arguments,
    but for the default live transport: an ``httpx.AsyncHTTPTransport`` of its own (a pool
    belongs to its event loop) on the process's one TLS context."""

    async def handle_async_request(self, request: Any) -> Any:
        """Answer one request: from the cassette, a fault, or the network."""
        exchange = Exchange(self, request, await request.aread(), side=1)
        step = await exchange.afirst_step()
        await self.deck.clock.aadvance(step.delay)
        if step.response is not None:
            return step.response
        if self.inner is None:
            self.inner = async_live_transport(self.httpx)
        through = THROUGH_DECK.set(True)
        try:
            response = await self.inner.handle_async_request(exchange.request)
        except Exception as exc:
            exchange.live_error(step.call, exc)
            raise
        finally:
            THROUGH_DECK.reset(through)
        if is_stream(response.headers.get("content-type", ""), exchange.kind):
            return exchange.live_stream(step, response)
        if not exchange.rewrites(step):
            return exchange.live_body(step, response)
        content = await response.aread()
        await response.aclose()
        return exchange.live_answer(step, response, content)

    async def aclose(self) -> None:
        """Close the real transport, if one was made."""
        if self.inner is not None:
            await self.inner.aclose()

    async def __aenter__(self) -> AsyncTransport:
        return self

    async def __aexit__(self, *args: object) -> None:
        await self.aclose()
