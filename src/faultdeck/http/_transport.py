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

import functools
import hashlib
import importlib
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

from .._callplan import CallPlan
from .._canonical import SCHEMA_DEFAULT
from .._cassette import Entry
from .._clock import VirtualClock
from .._deck import Deck
from .._errorcodec import error_from_json, error_to_json
from ._shapes import (
    KEEP_REQUEST_HEADERS,
    body_bytes,
    break_stream_tool_call,
    break_tool_call,
    classify,
    error_event,
    fault_response,
    kept_headers,
    name_of,
    parse_body,
    request_args,
)
from ._sse import SSEParser, encode

# Faults the transport shapes from the real answer instead of raising in its place.
SHAPED = frozenset({"bad_tool_call", "stream_cut", "malformed_stream"})
_DROP = frozenset({"content-encoding", "content-length", "transfer-encoding"})


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


class _Exchange:
    """One request on its way through the deck; the logic both transports share."""

    def __init__(self, owner: _Base, request: Any, body: bytes) -> None:
        self.owner = owner
        self.request = request
        url = request.url
        self.kind, self.name = name_of(request.method, url.path)
        query = list(url.params.multi_items())
        self.args = request_args(request.method, url.path, query, request.headers, body, owner.keep)
        digest = hashlib.sha256(body).hexdigest()
        self.identity = f"{request.method} {url} {digest}"
        self.plan: CallPlan | None = None

    @property
    def deck(self) -> Deck:
        return self.owner.deck

    def begin(self) -> CallPlan:
        """Account for a client's wait before this retry, then decide the call."""
        self.owner.waited_before(self.identity)
        self.plan = self.deck._begin(
            self.kind, self.name, self.args, SCHEMA_DEFAULT, None, None, shaped=SHAPED
        )
        return self.plan

    def stand_in(self, plan: CallPlan) -> Any:
        """The response or exception a raising fault puts in the call's place, or ``None``."""
        fault = plan.fault
        if fault is None or fault.kind in SHAPED or not fault.raises:
            return None
        router, httpx = self.deck._router, self.owner.httpx
        if fault.kind in ("quota", "transient"):
            status, headers, body = fault_response(fault, self.name)
            error, retry_after, code = classify(status, headers, body)
            stored = {"status": status, "headers": headers, "body": body}
            router.complete(
                plan,
                "out",
                stored,
                ms=0.0,
                source="fault",
                error=error,
                retry_after=retry_after,
                code=code,
            )
            self.owner.failed(self.identity)
            return httpx.Response(
                status, headers=headers, content=body_bytes(body), request=self.request
            )
        if fault.kind in ("timeout", "reset"):
            exc = (
                httpx.ReadTimeout("The read operation timed out", request=self.request)
                if fault.kind == "timeout"
                else httpx.ReadError("[Errno 104] Connection reset by peer", request=self.request)
            )
            router.complete(
                plan,
                "error",
                error_to_json(exc),
                ms=0.0,
                source="fault",
                error=type(exc).__name__,
                code=fault.kind,
            )
            self.owner.failed(self.identity)
            return exc
        router.inject(plan)  # the crash: ProcessKilled
        return None

    def delay(self, plan: CallPlan) -> float:
        """Seconds of injected delay before the answer (or its first event)."""
        fault = plan.fault
        if fault is not None and fault.kind in ("latency", "slow_first_token"):
            return fault.delay_ms / 1000
        return 0.0

    def answer(self, plan: CallPlan, entry: Entry) -> tuple[int, Any, Any]:
        """The recorded answer: (status, headers, body) or (status, headers, events)."""
        router = self.deck._router
        if entry.result == "error":
            router.serve(plan, entry)  # raises the recorded transport error
        value = entry.value
        fault = plan.fault
        how = fault.param("how") if fault is not None and fault.kind == "bad_tool_call" else None
        if entry.result == "out":
            body = value["body"]
            if how is not None:
                body = break_tool_call(self.name, body, how)
            error, retry_after, code = classify(value["status"], value["headers"], body)
            router.answered(
                plan, entry, learn=body, error=error, retry_after=retry_after, code=code
            )
            if error is not None:
                self.owner.failed(self.identity)
            return value["status"], value["headers"], body
        events = value["events"]
        if how is not None:
            events = break_stream_tool_call(self.name, events, how)
        return value["status"], value["headers"], events

    def store(self, plan: CallPlan, status: int, headers: Any, body: Any) -> Any:
        """Record a live, non-streamed answer; return the body the caller gets."""
        fault = plan.fault
        if fault is not None and fault.kind == "bad_tool_call":
            body = break_tool_call(self.name, body, fault.param("how"))
        kept = kept_headers(headers)
        router = self.deck._router
        ms = round((self.deck.clock.now() - plan.started) * 1000, 3)
        error, retry_after, code = classify(status, kept, body)
        stored = router.scrub(plan, {"status": status, "headers": kept, "body": body})
        router.complete(
            plan,
            "out",
            stored,
            ms=ms,
            learn=body,
            error=error,
            retry_after=retry_after,
            code=code,
        )
        if error is not None:
            self.owner.failed(self.identity)
        return body

    def live_error(self, plan: CallPlan, exc: Exception) -> None:
        ms = round((self.deck.clock.now() - plan.started) * 1000, 3)
        self.deck._router.complete(
            plan, "error", error_to_json(exc), ms=ms, error=type(exc).__name__
        )
        self.owner.failed(self.identity)

    def outgoing(self, headers: Any) -> list[tuple[str, str]]:
        return [(k, v) for k, v in headers.multi_items() if k.lower() not in _DROP]


class _Events:
    """A stream's events on their way to the client, replayed or teed; finished once."""

    def __init__(
        self,
        exchange: _Exchange,
        plan: CallPlan,
        status: int,
        headers: Any,
        events: list[dict[str, Any]] | None,
        entry: Entry | None,
    ) -> None:
        self.exchange = exchange
        self.plan = plan
        self.status = status
        self.headers = headers
        self.replayed = events
        self.entry = entry
        self.seen: list[dict[str, Any]] = []
        self.done = False
        fault = plan.fault
        cutting = fault is not None and fault.kind == "stream_cut"
        self.cut: int | None = fault.param("after") if fault is not None and cutting else None
        self.cut_how: str | None = fault.param("how") if fault is not None and cutting else None
        self.malformed = fault is not None and fault.kind == "malformed_stream"
        self.extra = exchange.delay(plan)
        self.parser = SSEParser()
        self.steps = self.replay()

    @property
    def clock(self) -> Any:
        return self.exchange.deck.clock

    def timed(self) -> bool:
        deck = self.exchange.deck
        return isinstance(deck.clock, VirtualClock) or deck._latency == "recorded"

    def wait_for(self, index: int, event: dict[str, Any]) -> float:
        """Seconds to let pass before a replayed event, per its recorded timing."""
        extra = self.extra if index == 0 else 0.0
        if not self.timed():
            return extra
        target = self.plan.started + self.extra + float(event.get("ms", 0)) / 1000
        return max(extra, target - float(self.clock.now()))

    def interruption(self, index: int) -> bytes | Exception | None:
        """What a stream fault does before event ``index``: extra bytes, an error, or nothing."""
        if self.cut is not None and index == self.cut:
            if self.cut_how == "error_event":
                self.finish(error=None, partial=index > 0, cut=True)
                return encode(error_event(self.exchange.name))
            exc: Exception = self.exchange.owner.httpx.RemoteProtocolError(
                "peer closed connection without sending complete message body"
            )
            self.finish(error=exc, partial=index > 0)
            return exc
        if self.malformed and index == 1:
            return b"data: {this is not json\n\n"
        return None

    def replay(self) -> Iterator[tuple[float, bytes | Exception]]:
        """The replayed stream as (seconds to let pass, bytes or an error to raise)."""
        for index, event in enumerate(self.replayed or ()):
            stop = self.interruption(index)
            if isinstance(stop, Exception):
                yield 0.0, stop
                return
            wait = self.wait_for(index, event)
            if stop is not None:
                yield wait, stop
                if self.cut is not None:
                    return
                wait = 0.0
            yield wait, encode(event)
        error = self.recorded_error()
        self.finish(error=error, partial=bool(self.replayed) and error is not None)
        if error is not None:
            yield 0.0, error

    def teed(self, chunk: bytes) -> None:
        now = round((self.clock.now() - self.plan.started) * 1000, 3)
        for event in self.parser.feed(chunk):
            self.seen.append({"ms": now, **event})

    def finish(self, *, error: Exception | None, partial: bool, cut: bool = False) -> None:
        if self.done:
            return
        self.done = True
        exchange, plan = self.exchange, self.plan
        router = exchange.deck._router
        if self.replayed is not None and self.entry is not None:
            recorded_error = self.entry.value.get("error")
            name = (
                type(error).__name__
                if error is not None
                else (recorded_error.get("type") if isinstance(recorded_error, dict) else None)
            )
            router.answered(
                plan,
                self.entry,
                learn=[e.get("data") for e in self.replayed],
                error=name or ("StreamError" if cut else None),
                partial=partial,
            )
            return
        self.seen.extend({"ms": 0.0, **e} for e in self.parser.flush())
        stored: dict[str, Any] = {"status": self.status, "headers": kept_headers(self.headers)}
        stored["events"] = self.seen
        if error is not None:
            stored["error"] = error_to_json(error)
        ms = round((self.clock.now() - plan.started) * 1000, 3)
        router.complete(
            plan,
            "stream",
            router.scrub(plan, stored),
            ms=ms,
            learn=[e.get("data") for e in self.seen],
            error=type(error).__name__ if error is not None else None,
            partial=partial,
        )
        if error is not None:
            exchange.owner.failed(exchange.identity)

    def recorded_error(self) -> Exception | None:
        if self.entry is None:
            return None
        error = self.entry.value.get("error")
        return error_from_json(error) if isinstance(error, dict) else None


@functools.cache
def _stream_types(httpx: Any) -> tuple[type, type]:
    """Byte-stream classes that ``httpx``'s responses accept (one pair per module).

    Each keeps its place: a client that stops at ``[DONE]`` and then drains the response
    by iterating it again (openai does) continues where it stopped, never from the start.
    """

    class SyncEvents(httpx.SyncByteStream):  # type: ignore[misc]
        def __init__(self, events: _Events, upstream: Any = None) -> None:
            self.events = events
            self.upstream = upstream
            self.chunks: Iterator[bytes] | None = None

        def __iter__(self) -> Iterator[bytes]:
            events = self.events
            if self.upstream is None:
                for wait, payload in events.steps:
                    events.clock.advance(wait)
                    if isinstance(payload, BaseException):
                        raise payload
                    yield payload
                return
            if self.chunks is None:
                self.chunks = iter(self.upstream.iter_bytes())
            try:
                for chunk in self.chunks:
                    events.teed(chunk)
                    yield chunk
            except Exception as exc:
                events.finish(error=exc, partial=bool(events.seen))
                raise
            events.finish(error=None, partial=False)

        def close(self) -> None:
            if self.upstream is not None:
                self.upstream.close()
            self.events.finish(error=None, partial=False)

    class AsyncEvents(httpx.AsyncByteStream):  # type: ignore[misc]
        def __init__(self, events: _Events, upstream: Any = None) -> None:
            self.events = events
            self.upstream = upstream
            self.chunks: AsyncIterator[bytes] | None = None

        async def __aiter__(self) -> AsyncIterator[bytes]:
            events = self.events
            if self.upstream is None:
                for wait, payload in events.steps:
                    await events.clock.aadvance(wait)
                    if isinstance(payload, BaseException):
                        raise payload
                    yield payload
                return
            if self.chunks is None:
                self.chunks = aiter(self.upstream.aiter_bytes())
            try:
                async for chunk in self.chunks:
                    events.teed(chunk)
                    yield chunk
            except Exception as exc:
                events.finish(error=exc, partial=bool(events.seen))
                raise
            events.finish(error=None, partial=False)

        async def aclose(self) -> None:
            if self.upstream is not None:
                await self.upstream.aclose()
            self.events.finish(error=None, partial=False)

    return SyncEvents, AsyncEvents


class _Base:
    def __init__(
        self,
        deck: Deck,
        *,
        httpx: Any = None,
        transport: Any = None,
        keep_headers: tuple[str, ...] = (),
    ) -> None:
        self.deck = deck
        self.httpx = _module(httpx)
        self.inner = transport
        self.keep = KEEP_REQUEST_HEADERS | frozenset(h.lower() for h in keep_headers)
        self._failures: dict[str, float] = {}

    def failed(self, identity: str) -> None:
        """Remember when a request failed, to see how long its client waits to retry."""
        self._failures[identity] = time.monotonic()

    def waited_before(self, identity: str) -> None:
        """A retry of a failed request: the client waited in real time; on a virtual clock,
        that wait is put on the deck's clock, where the invariants look for it."""
        failed_at = self._failures.pop(identity, None)
        if failed_at is not None and isinstance(self.deck.clock, VirtualClock):
            self.deck.clock.sleep(time.monotonic() - failed_at)


class Transport(_Base):
    """A sync transport for ``httpx.Client`` or ``httpx2.Client`` that routes every request
    through ``deck``.

    Args:
        deck: the deck.
        httpx: the HTTP module, ``httpx`` (the default) or ``httpx2``.
        transport: the real transport for live calls; ``httpx.HTTPTransport()`` by default,
            made only when a call goes live (replay opens no socket).
        keep_headers: request headers to keep in args besides ``anthropic-version``,
            ``anthropic-beta`` and ``openai-beta``.
    """

    def handle_request(self, request: Any) -> Any:
        """Answer one request: from the cassette, a fault, or the network."""
        exchange = _Exchange(self, request, request.read())
        plan = exchange.begin()
        stand_in = exchange.stand_in(plan)
        if isinstance(stand_in, Exception):
            raise stand_in
        if stand_in is not None:
            return stand_in
        sync_events, _ = _stream_types(self.httpx)
        if plan.entry is not None:
            status, headers, answer = exchange.answer(plan, plan.entry)
            if plan.entry.result == "stream":
                events = _Events(exchange, plan, status, headers, answer, plan.entry)
                return self.httpx.Response(
                    status, headers=headers, stream=sync_events(events), request=request
                )
            self.deck.clock.advance(exchange.delay(plan) + self._recorded(plan.entry))
            return self.httpx.Response(
                status, headers=headers, content=body_bytes(answer), request=request
            )
        if self.inner is None:
            self.inner = self.httpx.HTTPTransport()
        self.deck.clock.advance(exchange.delay(plan) if not _streams(request) else 0.0)
        try:
            response = self.inner.handle_request(request)
        except Exception as exc:
            exchange.live_error(plan, exc)
            raise
        if _is_stream(response):
            events = _Events(exchange, plan, response.status_code, response.headers, None, None)
            return self.httpx.Response(
                response.status_code,
                headers=exchange.outgoing(response.headers),
                stream=sync_events(events, response),
                request=request,
            )
        content = response.read()
        response.close()
        body = exchange.store(plan, response.status_code, response.headers, parse_body(content))
        return self.httpx.Response(
            response.status_code,
            headers=exchange.outgoing(response.headers),
            content=body_bytes(body),
            request=request,
        )

    def _recorded(self, entry: Entry) -> float:
        return entry.ms / 1000 if self.deck._latency == "recorded" else 0.0

    def close(self) -> None:
        """Close the real transport, if one was made."""
        if self.inner is not None:
            self.inner.close()

    def __enter__(self) -> Transport:
        return self

    def __exit__(self, *args: object) -> None:
        self.close()


class AsyncTransport(_Base):
    """``Transport`` for ``httpx.AsyncClient`` and ``httpx2.AsyncClient``; same arguments."""

    async def handle_async_request(self, request: Any) -> Any:
        """Answer one request: from the cassette, a fault, or the network."""
        exchange = _Exchange(self, request, await request.aread())
        plan = exchange.begin()
        stand_in = exchange.stand_in(plan)
        if isinstance(stand_in, Exception):
            raise stand_in
        if stand_in is not None:
            return stand_in
        _, async_events = _stream_types(self.httpx)
        if plan.entry is not None:
            status, headers, answer = exchange.answer(plan, plan.entry)
            if plan.entry.result == "stream":
                events = _Events(exchange, plan, status, headers, answer, plan.entry)
                return self.httpx.Response(
                    status, headers=headers, stream=async_events(events), request=request
                )
            latency = plan.entry.ms / 1000 if self.deck._latency == "recorded" else 0.0
            await self.deck.clock.aadvance(exchange.delay(plan) + latency)
            return self.httpx.Response(
                status, headers=headers, content=body_bytes(answer), request=request
            )
        if self.inner is None:
            self.inner = self.httpx.AsyncHTTPTransport()
        await self.deck.clock.aadvance(exchange.delay(plan) if not _streams(request) else 0.0)
        try:
            response = await self.inner.handle_async_request(request)
        except Exception as exc:
            exchange.live_error(plan, exc)
            raise
        if _is_stream(response):
            events = _Events(exchange, plan, response.status_code, response.headers, None, None)
            return self.httpx.Response(
                response.status_code,
                headers=exchange.outgoing(response.headers),
                stream=async_events(events, response),
                request=request,
            )
        content = await response.aread()
        await response.aclose()
        body = exchange.store(plan, response.status_code, response.headers, parse_body(content))
        return self.httpx.Response(
            response.status_code,
            headers=exchange.outgoing(response.headers),
            content=body_bytes(body),
            request=request,
        )

    async def aclose(self) -> None:
        """Close the real transport, if one was made."""
        if self.inner is not None:
            await self.inner.aclose()

    async def __aenter__(self) -> AsyncTransport:
        return self

    async def __aexit__(self, *args: object) -> None:
        await self.aclose()


def _is_stream(response: Any) -> bool:
    return "text/event-stream" in response.headers.get("content-type", "")


def _streams(request: Any) -> bool:
    return "text/event-stream" in request.headers.get("accept", "")
