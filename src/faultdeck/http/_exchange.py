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

from .._base.clock import VirtualClock
from .._base.errors import CassetteCorrupt
from .._cassette.bodies import BINARY, BodyError, answer_bytes, binary_form
from .._cassette.errorjson import error_to_json
from .._cassette.format import Entry, body_bytes
from .._cassette.lines import RESTORE, http_answer_problem
from .._deck.call import Call
from .._deck.deck import Deck
from ..faults import KINDS
from ._bodies import encode, readable, request_body
from ._chunks import Tee, chunk_types, replayed_chunks, timed_chunks
from ._order import Order
from ._shapes import classify, name_of, request_args, stored_headers, without_password
from ._streams import Events, stream_types

# Faults this boundary shapes into the real answer instead of raising in its place.
SHAPED = frozenset(kind.name for kind in KINDS.values() if kind.shapes_answers)
_DROP = frozenset({"content-encoding", "content-length", "transfer-encoding"})


class Owner(Protocol):
    """What an exchange needs of the transport it goes through."""

    deck: Deck
    httpx: Any
    keep: frozenset[str]
    stream_timing: bool
    order: Order

    def has_failures(self) -> bool: ...
    def bodies(self) -> Mapping[int, bytes]: ...
    def failed(self, identity: str) -> None: ...
    def waited_before(self, identity: str, headers: Any) -> None: ...


@dataclass(frozen=True, slots=True)
class Step:
    """How a request is answered: a ready response, or the network; either after
    ``delay`` seconds on the deck's clock."""

    call: Call
    response: Any
    delay: float


class Exchange:
    """One request: its call, and the answer from the recording, a fault or the network."""

    def __init__(self, owner: Owner, request: Any, body: bytes, *, side: int) -> None:
        self.owner = owner
        self.request = request
        self.side = side  # 0 for a sync client, 1 for an async one
        url, method = request.url, request.method
        path = url.path  # decoded anew at each read
        # Pairs hide their names from the field rules, so the query is redacted by name here.
        query = owner.deck.redactor.redact_pairs(url.params.multi_items()) if url.query else []
        auth = request.headers.get("authorization")
        if auth is not None:
            path, query = without_password(auth, path, query)
        self.kind, self.name = name_of(method, path)
        # The args as sent: the body as its bytes, parsed only when a call needs it (``args``).
        sent = Fragment(body) if body else None
        self.sent = request_args(method, path, query, request.headers, sent, owner.keep)
        self.body = body
        self.ordinal = 0

    @functools.cached_property
    def args(self) -> dict[str, Any]:
        """The request as its call's args: its body by meaning (``_bodies.request_body``:
        JSON parsed, a form's pairs, multipart's parts, text, or a digest of its bytes)."""
        if not self.body:
            return self.sent
        args = {k: v for k, v in self.sent.items() if k != "body"}
        content_type = self.request.headers.get("content-type")
        # (the body stays the last field)
        return {**args, **request_body(self.body, content_type, self.owner.deck.redactor)}

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
        return self.replayed(value["status"], value["headers"], content=self.content(entry, value))

    def plain(self, entry: Entry) -> bool:
        """Whether a recorded call is a body to hand back with nothing to judge: a
        well-formed answer (a model line may hold anything; ``answer`` says what is wrong
        with it) whose status is under 400. An http line was checked as it was read, and so
        was a line whose body the reader kept (``Recording.bodies``)."""
        if entry.result != "out":
            return False
        value = entry.value
        if "chunks" in value:  # replayed chunk by chunk (``_step``)
            return False
        if (
            entry.kind != "http"
            and entry.line not in self.owner.bodies()
            and http_answer_problem(value, body=True) is not None
        ):
            return False
        return bool(value["status"] < 400)

    def first_step(self) -> Step:
        """Decide the call and answer it without the network where it can be: a fault's
        stand-in or the recording. Otherwise say how long to wait before going live."""
        self._before_deciding()
        call = self.owner.deck.begin(self.kind, self.name, self.args, shaped=SHAPED)
        return self._step(call)

    async def afirst_step(self) -> Step:
        """``first_step`` on an event loop: the call is decided by ``Deck.abegin`` (a
        resumed request another task's reorder put early waits for its turn)."""
        self._before_deciding()
        call = await self.owner.deck.abegin(self.kind, self.name, self.args, shaped=SHAPED)
        return self._step(call)

    def _before_deciding(self) -> None:
        owner = self.owner
        if not self.ordinal:  # counted once, whichever route decides the request
            self.ordinal = owner.order.next()
        if owner.has_failures():
            owner.waited_before(self.identity, self.request.headers)

    def _step(self, call: Call) -> Step:
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
            return Step(call, stand_in, 0.0)
        entry = call.recorded
        if entry is None:
            call.start()
            return Step(call, None, 0.0 if _streams(self.request) else call.delay)
        value, answer = self.answer(call, entry)
        status, headers = value["status"], value["headers"]
        deck = owner.deck
        if entry.result == "stream":
            events = self.events(call, status, headers, answer)
            stream = stream_types(owner.httpx)[self.side](events)
            return Step(call, self.replayed(status, headers, stream=stream), 0.0)
        # (a held line's value is parsed anew at each read: ``value`` is the one answer read)
        as_recorded = answer is value["body"]
        content = self.content(entry, value) if as_recorded else body_bytes(answer)
        chunks = value.get("chunks")
        if chunks is not None and as_recorded:
            timed = owner.stream_timing or isinstance(deck.clock, VirtualClock)
            start = call.started + call.delay
            steps = replayed_chunks(content, chunks, clock=deck.clock, start=start, timed=timed)
            stream = chunk_types(owner.httpx)[self.side](steps=steps, clock=deck.clock)
            return Step(call, self.replayed(status, headers, stream=stream), call.delay)
        recorded = entry.ms / 1000 if deck.latency == "recorded" else 0.0
        return Step(call, self.replayed(status, headers, content=content), call.delay + recorded)

    def content(self, entry: Entry, value: dict[str, Any]) -> bytes:
        """The recorded body's bytes: kept as the cassette was read (a long answer), else
        made from the stored answer ``value`` (a binary body decoded and checked)."""
        kept = self.owner.bodies().get(entry.line)
        if kept is not None:
            return kept
        try:
            return answer_bytes(value)
        except BodyError as exc:
            where = f"seq {entry.seq}: {exc}"
            path = self.owner.deck.path
            raise CassetteCorrupt(path, entry.line or None, where, RESTORE) from None

    def replayed(
        self, status: int, headers: dict[str, Any], *, content: bytes = b"", stream: Any = None
    ) -> Any:
        """A recorded answer as a response: a body read whole (``content``), or a
        ``stream``. Its headers go as UTF-8 bytes: one whose value was redacted holds a mask
        (``«redacted:…»``), which is not ASCII as HTTP's header values are; a repeated one
        (a list) once per value. A body recorded under a ``Content-Encoding`` goes encoded
        again, so that the client decodes it as it did (unencoded, without the header, where
        the coding's compressor is not installed). A body read whole comes with the
        ``Content-Length`` httpx would add itself (a default header costs it a failed lookup
        and a rebuild of the headers), unless the recording kept one (a HEAD answer)."""
        raw: list[tuple[bytes, bytes]] = []
        for name, value in headers.items():
            if type(value) is list:
                raw.extend((name.encode(), one.encode()) for one in value)
            else:
                raw.append((name.encode(), value.encode()))
        response = self.owner.httpx.Response
        if stream is not None:
            return response(status, headers=raw, stream=stream, request=self.request)
        coding = headers.get("content-encoding")
        if coding is not None and content:
            encoded = encode(content, coding)
            if encoded is None:
                raw = [pair for pair in raw if pair[0].lower() != b"content-encoding"]
            else:
                content = encoded
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

    def answer(self, call: Call, entry: Entry) -> tuple[dict[str, Any], Any]:
        """The recorded answer (``status``, ``headers``…) and its body or events as the
        fault leaves them (the same object when it leaves them as recorded)."""
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
            binary = BINARY in value  # bytes no fault reads
            if fault is not None and fault.spec.answer is not None and not binary:
                body = fault.spec.answer(fault.values, self.name, body)
            error, retry_after, code = classify(value["status"], value["headers"], body)
            call.answered(
                learn=None if binary else body,
                as_recorded=body is value["body"],
                error=error,
                retry_after=retry_after,
                code=code,
            )
            if error is not None:
                self.failed()
            return value, body
        events = value["events"]
        if fault is not None and fault.spec.events is not None:
            events = fault.spec.events(fault.values, self.name, events)
        return value, events

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
            redactor=self.owner.deck.redactor,
            order=self.owner.order,
            ordinal=self.ordinal,
        )

    def store(
        self,
        call: Call,
        status: int,
        headers: Any,
        content: bytes,
        chunks: list[dict[str, Any]] | None,
    ) -> bytes | None:
        """Record a live answer whose body is ``content`` (decoded), in ``chunks`` where it
        came apart in time; return the body the caller gets instead when a fault changed
        it, else ``None``."""
        deck = self.owner.deck
        body = readable(content, headers.get("content-type"), parse=chunks is None)
        changed = None
        fault = call.fault
        if body is not None and fault is not None and fault.spec.answer is not None:
            answer = fault.spec.answer(fault.values, self.name, body)
            if answer is not body:
                body, changed, chunks = answer, body_bytes(answer), None
        stored = call.store(
            "out", {"status": status, "headers": {}, "body": "" if body is None else body}
        )
        if body is None:
            stored["body"], stored[BINARY] = binary_form(_masked_bytes(content, deck))
        stored["headers"] = stored_headers(headers, deck.redactor, body_size=len(content))
        if chunks is not None and (fitted := _fitted(chunks, len(answer_bytes(stored)))):
            stored["chunks"] = fitted
        ms = round((deck.clock.now() - call.started) * 1000, 3)
        error, retry_after, code = classify(status, stored["headers"], body)
        call.complete(
            "out",
            stored,
            ms=ms,
            learn=None if body is None else stored["body"],
            error=error,
            retry_after=retry_after,
            code=code,
        )
        if error is not None:
            self.failed()
        return changed

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
            stream=stream_types(self.owner.httpx)[self.side](events, response),
            request=self.request,
        )

    def rewrites(self, step: Step) -> bool:
        """Whether the call's fault changes a live answer's body: the body is then read
        whole, changed, and handed on (``live_answer``) instead of teed."""
        fault = step.call.fault
        return fault is not None and fault.spec.answer is not None

    def live_answer(self, step: Step, response: Any, content: bytes) -> Any:
        """A live response read whole (``content``, decoded): recorded, and handed on as
        the fault left it."""
        changed = self.store(step.call, response.status_code, response.headers, content, None)
        return self.owner.httpx.Response(
            response.status_code,
            headers=_outgoing(response.headers),
            content=content if changed is None else changed,
            request=self.request,
        )

    def live_body(self, step: Step, response: Any) -> Any:
        """A live response handed to the client as it arrives, its headers and raw bytes
        as the upstream sent them (the client decodes them, as it would have), and
        recorded when its body ends."""
        call = step.call
        done = functools.partial(self._teed, call, response)
        tee = Tee(self.owner.deck.clock, call.started, done)
        return self.owner.httpx.Response(
            response.status_code,
            headers=response.headers,
            stream=chunk_types(self.owner.httpx)[self.side](tee=tee, upstream=response),
            request=self.request,
        )

    def _teed(
        self,
        call: Call,
        response: Any,
        pieces: list[tuple[float, bytes]],
        error: BaseException | None,
    ) -> None:
        """A teed body ended: recorded decoded, with its chunks' timing where it came
        unencoded (an encoded body's pieces are not the body's)."""
        if error is not None:
            self.live_error(call, error)  # type: ignore[arg-type]
            return
        raw = b"".join(piece for _, piece in pieces)
        coding = response.headers.get("content-encoding", "identity").strip().lower()
        if coding == "identity":
            self.store(call, response.status_code, response.headers, raw, timed_chunks(pieces))
            return
        httpx = self.owner.httpx
        try:
            coded = httpx.Response(200, headers=[("content-encoding", coding)], content=raw)
            content = coded.content
        except httpx.DecodingError:
            content = raw
        self.store(call, response.status_code, response.headers, content, None)


def _masked_bytes(content: bytes, deck: Deck) -> bytes:
    """A binary body with every credential-shaped run masked, as text is (a mask is
    Latin-1, so the bytes around it stay as they are)."""
    text = content.decode("latin-1")
    masked = deck.redactor.redact_text(text)
    return content if masked == text else masked.encode("latin-1")


def _fitted(chunks: list[dict[str, Any]], size: int) -> list[dict[str, Any]] | None:
    """``chunks`` made to add up to ``size`` (a masked secret changed the body's length):
    the last chunk takes the difference; ``None`` if it cannot."""
    diff = size - sum(chunk["bytes"] for chunk in chunks)
    if diff and chunks[-1]["bytes"] + diff <= 0:
        return None
    chunks[-1]["bytes"] += diff
    return chunks


def _body(value: Any) -> Any:
    return value["body"]


def _outgoing(headers: Any) -> list[tuple[str, str]]:
    return [(k, v) for k, v in headers.multi_items() if k.lower() not in _DROP]


def _streams(request: Any) -> bool:
    return "text/event-stream" in request.headers.get("accept", "")
