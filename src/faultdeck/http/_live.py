"""A request's live side: what the upstream answers, handed to the client as it was sent
and recorded (``Live``, which ``Exchange`` is), and what an exchange needs of its
transport (``Owner``)."""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from .._cassette.bodies import BINARY, answer_bytes, binary_form
from .._cassette.format import body_bytes
from .._deck.call import Call
from .._deck.deck import Deck
from ._bodies import readable
from ._chunks import Tee, chunk_types, timed_chunks
from ._order import Order
from ._shapes import classify, stored_headers
from ._streams import Events, stream_types

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


class Live:
    """The live side of one request (``Exchange`` holds the rest): its identity for a
    client's retry, its streams, and its answer recorded as the upstream sent it."""

    owner: Owner
    request: Any
    body: bytes
    side: int
    name: str
    ordinal: int

    @functools.cached_property
    def identity(self) -> str:
        """Which request this is, to see a client's retry of it (computed only when needed)."""
        digest = hashlib.sha256(self.body).hexdigest()
        return f"{self.request.method} {self.request.url} {digest}"

    @functools.cached_property
    def sent(self) -> Any:
        """The request's body in its readable form (JSON parsed; text, or ``None``, where
        it is not JSON): a fault that breaks a tool call reads the tools' schemas there."""
        return readable(self.body, self.request.headers.get("content-type")) if self.body else None

    def failed(self) -> None:
        """This request failed: its client's wait before a retry is to be measured."""
        self.owner.failed(self.identity)

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
            answer = fault.spec.answer(fault.values, self.name, body, self.sent)
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


def _outgoing(headers: Any) -> list[tuple[str, str]]:
    return [(k, v) for k, v in headers.multi_items() if k.lower() not in _DROP]
