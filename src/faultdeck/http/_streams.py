"""Streamed responses on their way to a client: replayed event by event with their recorded
timing, or teed from the network into the cassette as the client reads them.

How a fault breaks a stream off is its kind's ``stream_break`` (``faultdeck.faults``): cut
after some events, an ``event: error`` from the provider, or an event that does not parse.
A stream is server-sent events, or (a model call answered ``application/x-ndjson``, as
Ollama's are) JSON lines, each line an event (``_ndjson``).
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

from .._base.clock import Clock, VirtualClock
from .._cassette.errorjson import error_from_json, error_to_json
from .._deck.call import Call
from .._keys.redact import Redactor
from ..faults import StreamBreak
from ..faults._shapes import error_event
from . import _eventstream
from ._ndjson import MALFORMED, NDJSONParser, is_ndjson
from ._ndjson import encode as encode_line
from ._order import Order
from ._shapes import stored_headers
from ._sse import SSEParser, encode

STREAM_TYPES = ("text/event-stream", _eventstream.CONTENT_TYPE)
"""The content types of a response recorded as events: server-sent events, and AWS's
binary event stream (each message an event)."""


def is_stream(content_type: str, kind: str) -> bool:
    """Whether a response is recorded as a stream of events: server-sent events, AWS's event
    stream, or a model call's JSON lines (another call's are a body, kept byte for byte)."""
    if any(framed in content_type for framed in STREAM_TYPES):
        return True
    return kind == "model" and is_ndjson(content_type)


class Events:
    """A stream's events on their way to the client, replayed or teed; finished once.

    Args:
        call: the stream's boundary call.
        name: the call's name (which provider's error event to send).
        status, headers: the response's.
        replayed: the recorded events, or ``None`` for a live stream (teed).
        clock: the deck's clock.
        timed: replay with the recorded timing even on a real clock.
        httpx: the HTTP module, for its transport errors.
        failed: called when the stream fails, so that a client's retry is timed.
        redactor: masks credentials in the headers recorded.
        order, ordinal: the transport's request count and this request's place in it, so
            that a replayed stream ends after the requests it ended after (``_order``).
    """

    def __init__(  # noqa: PLR0913 - keyword options: what a stream needs from its exchange
        self,
        call: Call,
        name: str,
        status: int,
        headers: Any,
        replayed: list[dict[str, Any]] | None,
        *,
        clock: Clock,
        timed: bool,
        httpx: Any,
        failed: Callable[[], None],
        redactor: Redactor,
        order: Order,
        ordinal: int,
    ) -> None:
        self.call = call
        self.name = name
        self.status = status
        self.headers = headers
        self.replayed = replayed
        self.clock = clock
        self.timed = timed or isinstance(clock, VirtualClock)
        self.httpx = httpx
        self.failed = failed
        self.redactor = redactor
        self.order = order
        self.ordinal = ordinal
        self.seen: list[dict[str, Any]] = []
        self.done = False
        # A recording made under the fault carries it already: it is not broken again.
        fault = None if call.fault_applied else call.fault
        # The events go out as recorded unless the fault rewrites them (see Exchange.answer).
        self.as_recorded = fault is None or fault.spec.events is None
        shape = fault.spec.stream_break if fault is not None else None
        self.brk: StreamBreak | None = shape(fault.values) if fault is not None and shape else None
        self.extra = call.delay
        # How the events are framed on the wire: SSE, AWS's binary messages, or JSON lines.
        content_type = headers.get("content-type") or ""
        self.parser: SSEParser | NDJSONParser | _eventstream.EventStreamParser
        if _eventstream.CONTENT_TYPE in content_type:
            self.parser = _eventstream.EventStreamParser(strict=False)
            self.encode, self.malformed = _eventstream.encode, _eventstream.malformed()
        elif is_ndjson(content_type):
            self.parser, self.encode, self.malformed = NDJSONParser(), encode_line, MALFORMED
        else:
            self.parser, self.encode = SSEParser(), encode
            self.malformed = b"data: {this is not json\n\n"
        self.steps = self.replay()

    def wait_for(self, index: int, event: dict[str, Any]) -> float:
        """Seconds to let pass before a replayed event, per its recorded timing."""
        extra = self.extra if index == 0 else 0.0
        if not self.timed:
            return extra
        target = self.call.started + self.extra + float(event.get("ms", 0)) / 1000
        return max(extra, target - float(self.clock.now()))

    def interruption(self, index: int) -> bytes | Exception | None:
        """What a broken stream does before event ``index``: extra bytes, an error, or
        nothing."""
        brk = self.brk
        if brk is None or index != brk.after:
            return None
        if brk.how == "malformed":
            return self.malformed
        if brk.how == "error_event":
            self.finish(error=None, partial=index > 0, cut=True)
            return self.encode(error_event(self.name))
        exc: Exception = self.httpx.RemoteProtocolError(
            "peer closed connection without sending complete message body"
        )
        self.finish(error=exc, partial=index > 0)
        return exc

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
                if self.brk is not None and self.brk.how != "malformed":
                    return
                wait = 0.0
            yield wait, self.encode(event)
        error = self.recorded_error()
        self.finish(error=error, partial=bool(self.replayed) and error is not None)
        if error is not None:
            yield 0.0, error

    def teed(self, chunk: bytes) -> None:
        now = round((self.clock.now() - self.call.started) * 1000, 3)
        for event in self.parser.feed(chunk):
            self.seen.append({"ms": now, **event})

    def finish(self, *, error: Exception | None, partial: bool, cut: bool = False) -> None:
        if self.done:
            return
        self.done = True
        call = self.call
        if self.replayed is not None and call.recorded is not None:
            recorded_error = call.recorded.value.get("error")
            name = (
                type(error).__name__
                if error is not None
                else (recorded_error.get("type") if isinstance(recorded_error, dict) else None)
            )
            call.answered(
                learn=[e.get("data") for e in self.replayed],
                as_recorded=self.as_recorded,
                error=name or ("StreamError" if cut else None),
                partial=partial,
            )
            return
        self.seen.extend({"ms": 0.0, **e} for e in self.parser.flush())
        if error is None:
            call.meta = self.order.ends_after(self.ordinal, call.meta)
        value: dict[str, Any] = {
            "status": self.status,
            "headers": stored_headers(self.headers, self.redactor, body_size=None),
            "events": self.seen,
        }
        if error is not None:
            value["error"] = error_to_json(error)
        stored = call.store("stream", value)
        call.complete(
            "stream",
            stored,
            ms=round((self.clock.now() - call.started) * 1000, 3),
            learn=[e.get("data") for e in stored["events"]],
            error=type(error).__name__ if error is not None else None,
            partial=partial,
        )
        if error is not None:
            self.failed()

    async def hold(self) -> None:
        """Before a replayed stream ends as recorded: wait for the requests it ended after
        to begin again (async clients only; a sync client's thread is reading it)."""
        entry = self.call.recorded
        if entry is not None and entry.meta is not None and self.brk is None:
            await self.order.reach(self.ordinal, entry.meta)

    def recorded_error(self) -> Exception | None:
        entry = self.call.recorded
        if entry is None:
            return None
        error = entry.value.get("error")
        return error_from_json(error) if isinstance(error, dict) else None


@functools.cache
def stream_types(httpx: Any) -> tuple[type, type]:  # noqa: C901 - counts its nested classes' methods
    """Byte-stream classes that ``httpx``'s responses accept (one pair per module).

    Each keeps its place: a client that stops at ``[DONE]`` and then drains the response
    by iterating it again (openai does) continues where it stopped, never from the start.
    """

    class SyncEvents(httpx.SyncByteStream):  # type: ignore[misc]
        def __init__(self, events: Events, upstream: Any = None) -> None:
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
        def __init__(self, events: Events, upstream: Any = None) -> None:
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
                await events.hold()
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
