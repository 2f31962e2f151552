"""One request on its way through the deck: the logic both transports share.

A request becomes one boundary call (``deck.begin``); its ``Call`` says whether the
recording answers it, and which fault applies. What the fault looks like here is its
kind's (``faultdeck.faults.KINDS``): a provider's error response standing in for the call,
a transport error, a real answer or stream broken, a delay. Nothing here decides what a
fault kind does, and nothing here reaches into the deck: the ``Call`` is the seam.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from orjson import Fragment

from .._base.errors import CassetteCorrupt
from .._cassette.errorjson import error_to_json
from .._cassette.format import Entry, body_bytes
from .._cassette.lines import RESTORE, http_answer_problem
from .._deck.call import Call
from .._deck.deck import Deck
from ..faults import KINDS
from ._order import Order
from ._shapes import classify, kept_headers, name_of, parse_body, request_args
from ._streams import Events

# Faults this boundary shapes into the real answer instead of raising in its place.
SHAPED = frozenset(kind.name for kind in KINDS.values() if kind.shapes_answers)
_DROP = frozenset({"content-encoding", "content-length", "transfer-encoding"})


class Owner(Protocol):
    """What an exchange needs of the transport it goes through."""

    deck: Deck
    httpx: Any
    keep: frozenset[str]
    keep_response: frozenset[str]
    stream_timing: bool
    order: Order

    def has_failures(self) -> bool: ...
    def bodies(self) -> Mapping[int, bytes]: ...
    def failed(self, identity: str) -> None: ...
    def waited_before(self, identity: str) -> None: ...


@dataclass(frozen=True, slots=True)
class Step:
    """How a request is answered: a ready response, or the network; either after
    ``delay`` seconds on the deck's clock."""

    call: Call
    stream_type: type
    response: Any
    delay: float


class Exchange:
    """One request: its call, and the answer from the recording, a fault or the network."""

    def __init__(self, owner: Owner, request: Any, body: bytes) -> None:
        self.owner = owner
        self.request = request
        url, method = request.url, request.method
        path = url.path  # decoded anew at each read
        self.kind, self.name = name_of(method, path)
        # Pairs hide their names from the field rules, so the query is redacted by name here.
        query = owner.deck.redactor.redact_pairs(url.params.multi_items()) if url.query else []
        # The args as sent: the body as its bytes, parsed only when a call needs it (``args``).
        sent = Fragment(body) if body else None
        self.sent = request_args(method, path, query, request.headers, sent, owner.keep)
        self.body = body
        self.ordinal = 0

    @functools.cached_property
    def args(self) -> dict[str, Any]:
        """The request as its call's args: its body parsed (JSON, else text)."""
        if not self.body:
            return self.sent
        return {**self.sent, "body": parse_body(self.body)}  # (the body stays the last field)

    def parsed_args(self) -> dict[str, Any]:
        """``args``, for the deck to call when it keys the call."""
        return self.args

    @functools.cached_property
    def identity(self) -> str:
        """Which request this is, to see a client's retry of it (computed only when needed)."""
        digest = hashlib.sha256(self.body).hexdigest()
        return f"{self.request.method} {self.request.url} {digest}"

    def failed(self) -> None:
        """This request failed: its client's wait before a retry is to be measured."""
        self.owner.failed(self.identity)

    def replay_plain(self) -> Any:
        """The recorded response, by the deck's short route for a plain replay: a body with
        a status under 400, no fault that can land, no retry being timed, no latency to replay.
        ``None`` when ``first_step`` must decide the request."""
        owner = self.owner
        self.ordinal = owner.order.next()
        deck = owner.deck
        if deck.latency == "recorded" or owner.has_failures():
            return None
        # A body sent as orjson writes it is compared as its bytes (a replay sends what was
        # recorded, as the SDK writes it): no parse, no writing it again.
        entry = deck.take_recorded(
            self.kind, self.name, self.sent, self.plain, learn=_body, parse=self.parsed_args
        )
        if entry is None:
            return None
        value = entry.value
        return self.replayed(value["status"], value["headers"], content=self.content(entry))

    def plain(self, entry: Entry) -> bool:
        """Whether a recorded call is a body to hand back with nothing to judge: a
        well-formed answer (a model line may hold anything; ``answer`` says what is wrong
        with it) whose status is under 400. An http line was checked as it was read, and so
        was a line whose body the reader kept (``Recording.bodies``)."""
        if entry.result != "out":
            return False
        value = entry.value
        if (
            entry.kind != "http"
            and entry.line not in self.owner.bodies()
            and http_answer_problem(value, body=True) is not None
        ):
            return False
        return bool(value["status"] < 400)

    def first_step(self, stream_type: type) -> Step:
        """Decide the call and answer it without the network where it can be: a fault's
        stand-in or the recording. Otherwise say how long to wait before going live."""
        self._before_deciding()
        call = self.owner.deck.begin(self.kind, self.name, self.args, shaped=SHAPED)
        return self._step(call, stream_type)

    async def afirst_step(self, stream_type: type) -> Step:
        """``first_step`` on an event loop: the call is decided by ``Deck.abegin`` (a
        resumed request another task's reorder put early waits for its turn)."""
        self._before_deciding()
        call = await self.owner.deck.abegin(self.kind, self.name, self.args, shaped=SHAPED)
        return self._step(call, stream_type)

    def _before_deciding(self) -> None:
        owner = self.owner
        if not self.ordinal:  # counted once, whichever route decides the request
            self.ordinal = owner.order.next()
        if owner.has_failures():
            owner.waited_before(self.identity)

    def _step(self, call: Call, stream_type: type) -> Step:
        """What to do with the decided ``call``: its stand-in, its recorded answer, or a
        live run after its delay."""
        owner = self.owner
        stand_in = self.stand_in(call)
        if isinstance(stand_in, Exception):
            try:
                raise stand_in
            finally:
                # Its traceback holds this frame: kept as a local, the error would make a
                # cycle that only the garbage collector frees (``Call.inject`` says the same).
                del stand_in
        if stand_in is not None:
            return Step(call, stream_type, stand_in, 0.0)
        entry = call.recorded
        if entry is None:
            call.start()
            return Step(call, stream_type, None, 0.0 if _streams(self.request) else call.delay)
        status, headers, answer = self.answer(call, entry)
        if entry.result == "stream":
            events = self.events(call, status, headers, answer)
            response = self.replayed(status, headers, stream=stream_type(events))
            return Step(call, stream_type, response, 0.0)
        recorded = entry.ms / 1000 if owner.deck.latency == "recorded" else 0.0
        as_recorded = answer is entry.value["body"]
        response = self.replayed(
            status, headers, content=self.content(entry) if as_recorded else body_bytes(answer)
        )
        return Step(call, stream_type, response, call.delay + recorded)

    def content(self, entry: Entry) -> bytes:
        """The recorded body's bytes: kept as the cassette was read (a long answer), else
        made from the stored body."""
        kept = self.owner.bodies().get(entry.line)
        return kept if kept is not None else body_bytes(entry.value["body"])

    def replayed(
        self, status: int, headers: dict[str, str], *, content: bytes = b"", stream: Any = None
    ) -> Any:
        """A recorded answer as a response: a body read whole (``content``), or a
        ``stream``. Its headers go as UTF-8 bytes: one whose value was redacted holds a mask
        (``«redacted:…»``), which is not ASCII as HTTP's header values are. A body read
        whole comes with the ``Content-Length`` httpx would add itself (a default header
        costs it a failed lookup and a rebuild of the headers), unless the recording kept
        one."""
        raw = [(name.encode(), value.encode()) for name, value in headers.items()]
        response = self.owner.httpx.Response
        if stream is not None:
            return response(status, headers=raw, stream=stream, request=self.request)
        if "content-length" not in map(str.lower, headers):
            raw.append((b"Content-Length", b"%d" % len(content)))
        return response(status, headers=raw, content=content, request=self.request)

    def stand_in(self, call: Call) -> Any:
        """The response or exception a raising fault puts in the call's place, or ``None``."""
        fault = call.fault
        if fault is None or not fault.raises or fault.kind in SHAPED or call.recorded is not None:
            return None
        kind, httpx = fault.spec, self.owner.httpx
        if kind.respond is not None:
            status, headers, body = kind.respond(fault.values, self.name)
            error, retry_after, code = classify(status, headers, body)
            stored = {"status": status, "headers": headers, "body": body}
            call.complete(
                "out",
                stored,
                ms=0.0,
                source="fault",
                error=error,
                retry_after=retry_after,
                code=code,
            )
            self.failed()
            return httpx.Response(
                status, headers=headers, content=body_bytes(body), request=self.request
            )
        if kind.transport is not None:
            exc = (
                httpx.ReadTimeout("The read operation timed out", request=self.request)
                if kind.transport == "timeout"
                else httpx.ReadError("[Errno 104] Connection reset by peer", request=self.request)
            )
            stored = error_to_json(exc)
            call.complete(
                "error", stored, ms=0.0, source="fault", error=type(exc).__name__, code=fault.kind
            )
            self.failed()
            return exc
        call.inject()  # a fault with no HTTP shape (the crash) raises as it does in-process
        return None

    def answer(self, call: Call, entry: Entry) -> tuple[int, Any, Any]:
        """The recorded answer: (status, headers, body) or (status, headers, events)."""
        if entry.result == "error":
            call.replay()  # raises the recorded transport error
        value = entry.value
        if entry.kind != "http":  # the reader checked http lines; a model line may be anything
            problem = http_answer_problem(value, body=entry.result == "out")
            if problem is not None:
                where = entry.line or None
                seq = f"seq {entry.seq}: {problem}"
                raise CassetteCorrupt(self.owner.deck.path, where, seq, RESTORE)
        fault = None if call.fault_applied else call.fault
        if entry.result == "out":
            body = value["body"]
            if fault is not None and fault.spec.answer is not None:
                body = fault.spec.answer(fault.values, self.name, body)
            error, retry_after, code = classify(value["status"], value["headers"], body)
            call.answered(
                learn=body,
                as_recorded=body is value["body"],
                error=error,
                retry_after=retry_after,
                code=code,
            )
            if error is not None:
                self.failed()
            return value["status"], value["headers"], body
        events = value["events"]
        if fault is not None and fault.spec.events is not None:
            events = fault.spec.events(fault.values, self.name, events)
        return value["status"], value["headers"], events

    def events(
        self, call: Call, status: int, headers: Any, replayed: list[dict[str, Any]] | None
    ) -> Events:
        """A stream on its way to the client: replayed, or (``replayed`` is ``None``) teed."""
        return Events(
            call,
            self.name,
            status,
            headers,
            replayed,
            clock=self.owner.deck.clock,
            timed=self.owner.stream_timing,
            httpx=self.owner.httpx,
            failed=self.failed,
            keep=self.owner.keep_response,
            order=self.owner.order,
            ordinal=self.ordinal,
        )

    def store(self, call: Call, status: int, headers: Any, body: Any) -> Any:
        """Record a live, non-streamed answer; return the body the caller gets."""
        fault = call.fault
        if fault is not None and fault.spec.answer is not None:
            body = fault.spec.answer(fault.values, self.name, body)
        kept = kept_headers(headers, self.owner.keep_response)
        ms = round((self.owner.deck.clock.now() - call.started) * 1000, 3)
        error, retry_after, code = classify(status, kept, body)
        stored = call.store("out", {"status": status, "headers": kept, "body": body})
        call.complete(
            "out",
            stored,
            ms=ms,
            learn=stored["body"],
            error=error,
            retry_after=retry_after,
            code=code,
        )
        if error is not None:
            self.failed()
        return body

    def live_error(self, call: Call, exc: Exception) -> None:
        """A live attempt that raised: recorded, unless it never reached the upstream."""
        call.fail(exc)
        self.failed()

    def live_stream(self, step: Step, response: Any) -> Any:
        """A live streamed response, teed into the cassette as the client reads it."""
        events = self.events(step.call, response.status_code, response.headers, None)
        return self.owner.httpx.Response(
            response.status_code,
            headers=_outgoing(response.headers),
            stream=step.stream_type(events, response),
            request=self.request,
        )

    def live_answer(self, step: Step, response: Any, content: bytes) -> Any:
        """A live response read whole: recorded, and handed on."""
        body = self.store(step.call, response.status_code, response.headers, parse_body(content))
        return self.owner.httpx.Response(
            response.status_code,
            headers=_outgoing(response.headers),
            content=body_bytes(body),
            request=self.request,
        )


def _body(value: Any) -> Any:
    return value["body"]


def _outgoing(headers: Any) -> list[tuple[str, str]]:
    return [(k, v) for k, v in headers.multi_items() if k.lower() not in _DROP]


def _streams(request: Any) -> bool:
    return "text/event-stream" in request.headers.get("accept", "")
