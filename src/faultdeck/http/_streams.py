"""Streamed responses on their way to a client: replayed event by event with their recorded
timing, or teed from the network into the cassette as the client reads them."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING, Any

from .._base.clock import VirtualClock
from .._cassette.errorjson import error_from_json, error_to_json
from .._cassette.format import Entry
from .._deck.call import CallPlan
from ._shapes import error_event, kept_headers
from ._sse import SSEParser, encode

if TYPE_CHECKING:
    from ._transport import _Exchange


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
        # A recording made under the fault carries it already: it is not cut again.
        fault = None if plan.fault_applied else plan.fault
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
        stored = router.stored(plan, "stream", stored)
        router.complete(
            plan,
            "stream",
            stored,
            ms=ms,
            learn=[e.get("data") for e in stored["events"]],
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
