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
from dataclasses import dataclass
from typing import Any

from .._base.clock import VirtualClock
from .._base.errors import CassetteCorrupt
from .._cassette.errorjson import error_to_json
from .._cassette.lines import RESTORE
from .._cassette.reader import Entry, http_answer_problem
from .._deck.call import CallPlan
from .._deck.deck import Deck
from .._keys.canonical import SCHEMA_DEFAULT
from ._shapes import (
    KEEP_REQUEST_HEADERS,
    body_bytes,
    break_stream_tool_call,
    break_tool_call,
    classify,
    fault_response,
    kept_headers,
    name_of,
    parse_body,
    request_args,
)
from ._streams import _Events, _stream_types

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
        # Pairs hide their names from the field rules, so the query is redacted by name here.
        query = owner.deck.redactor.redact_pairs(url.params.multi_items()) if url.query else []
        self.args = request_args(request.method, url.path, query, request.headers, body, owner.keep)
        self.body = body
        self.plan: CallPlan | None = None

    @functools.cached_property
    def identity(self) -> str:
        """Which request this is, to see a client's retry of it (computed only when needed)."""
        digest = hashlib.sha256(self.body).hexdigest()
        return f"{self.request.method} {self.request.url} {digest}"

    @property
    def deck(self) -> Deck:
        return self.owner.deck

    def begin(self) -> CallPlan:
        """Account for a client's wait before this retry, then decide the call."""
        if self.owner.has_failures():
            self.owner.waited_before(self.identity)
        self.plan = self.deck._begin(
            self.kind, self.name, self.args, SCHEMA_DEFAULT, None, None, shaped=SHAPED
        )
        return self.plan

    def stand_in(self, plan: CallPlan) -> Any:
        """The response or exception a raising fault puts in the call's place, or ``None``."""
        fault = plan.fault
        if fault is None or fault.kind in SHAPED or not fault.raises or plan.entry is not None:
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
        if entry.kind != "http":  # the reader checked http lines; a model line may be anything
            problem = http_answer_problem(value, body=entry.result == "out")
            if problem is not None:
                where = entry.line or None
                raise CassetteCorrupt(self.deck.path, where, f"seq {entry.seq}: {problem}", RESTORE)
        fault = None if plan.fault_applied else plan.fault
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
        stored = router.stored(plan, "out", {"status": status, "headers": kept, "body": body})
        router.complete(
            plan,
            "out",
            stored,
            ms=ms,
            learn=stored["body"],
            error=error,
            retry_after=retry_after,
            code=code,
        )
        if error is not None:
            self.owner.failed(self.identity)
        return body

    def live_error(self, plan: CallPlan, exc: Exception) -> None:
        """A live attempt that raised: recorded, unless it never reached the upstream."""
        self.deck._router.finish_error(plan, exc, plan.started)
        self.owner.failed(self.identity)

    def outgoing(self, headers: Any) -> list[tuple[str, str]]:
        return [(k, v) for k, v in headers.multi_items() if k.lower() not in _DROP]

    def first_step(self, stream_type: type) -> _Step:
        """Decide the call and answer it without the network where it can be: a fault's
        stand-in or the recording. Otherwise say how long to wait before going live."""
        plan = self.begin()
        stand_in = self.stand_in(plan)
        if isinstance(stand_in, Exception):
            raise stand_in
        if stand_in is not None:
            return _Step(plan, stream_type, stand_in, 0.0)
        httpx, request = self.owner.httpx, self.request
        entry = plan.entry
        if entry is None:
            self.deck._router.started(plan)
            delay = 0.0 if _streams(request) else self.delay(plan)
            return _Step(plan, stream_type, None, delay)
        status, headers, answer = self.answer(plan, entry)
        if entry.result == "stream":
            events = _Events(self, plan, status, headers, answer, entry)
            response = httpx.Response(
                status, headers=headers, stream=stream_type(events), request=request
            )
            return _Step(plan, stream_type, response, 0.0)
        recorded = entry.ms / 1000 if self.deck._latency == "recorded" else 0.0
        response = httpx.Response(
            status, headers=headers, content=body_bytes(answer), request=request
        )
        return _Step(plan, stream_type, response, self.delay(plan) + recorded)

    def live_stream(self, step: _Step, response: Any) -> Any:
        """A live streamed response, teed into the cassette as the client reads it."""
        events = _Events(self, step.plan, response.status_code, response.headers, None, None)
        return self.owner.httpx.Response(
            response.status_code,
            headers=self.outgoing(response.headers),
            stream=step.stream_type(events, response),
            request=self.request,
        )

    def live_answer(self, step: _Step, response: Any, content: bytes) -> Any:
        """A live response read whole: recorded, and handed on."""
        body = self.store(step.plan, response.status_code, response.headers, parse_body(content))
        return self.owner.httpx.Response(
            response.status_code,
            headers=self.outgoing(response.headers),
            content=body_bytes(body),
            request=self.request,
        )


@dataclass(frozen=True, slots=True)
class _Step:
    """How a request is answered: a ready response, or the network; either after
    ``delay`` seconds on the deck's clock."""

    plan: CallPlan
    stream_type: type
    response: Any
    delay: float


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

    def has_failures(self) -> bool:
        """Whether some request failed and its retry may still come."""
        return bool(self._failures)

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
        step = exchange.first_step(_stream_types(self.httpx)[0])
        self.deck.clock.advance(step.delay)
        if step.response is not None:
            return step.response
        if self.inner is None:
            self.inner = self.httpx.HTTPTransport()
        try:
            response = self.inner.handle_request(request)
        except Exception as exc:
            exchange.live_error(step.plan, exc)
            raise
        if _is_stream(response):
            return exchange.live_stream(step, response)
        content = response.read()
        response.close()
        return exchange.live_answer(step, response, content)

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
        step = exchange.first_step(_stream_types(self.httpx)[1])
        await self.deck.clock.aadvance(step.delay)
        if step.response is not None:
            return step.response
        if self.inner is None:
            self.inner = self.httpx.AsyncHTTPTransport()
        try:
            response = await self.inner.handle_async_request(request)
        except Exception as exc:
            exchange.live_error(step.plan, exc)
            raise
        if _is_stream(response):
            return exchange.live_stream(step, response)
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


def _is_stream(response: Any) -> bool:
    return "text/event-stream" in response.headers.get("content-type", "")


def _streams(request: Any) -> bool:
    return "text/event-stream" in request.headers.get("accept", "")
