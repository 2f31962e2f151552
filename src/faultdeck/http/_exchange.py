"""One request on its way through the deck: the logic both transports share.

A request becomes one boundary call (``deck.begin``); its ``Call`` says whether the
recording answers it, and which fault applies. What the fault looks like here is its
kind's (``faultdeck.faults.KINDS``): a provider's error response standing in for the call,
a transport error, a real answer or stream broken, a delay. Nothing here decides what a
fault kind does, and nothing here reaches into the deck: the ``Call`` is the seam. A call a
fork sends to another model (``call.model``) goes live as a request whose JSON body names
that model: the one place the explicit transports and the attached libraries share.
"""

from __future__ import annotations

from typing import Any

import orjson

from .._base.clock import VirtualClock
from .._base.errors import CassetteCorrupt
from .._cassette.bodies import BINARY, BodyError, answer_bytes
from .._cassette.errorjson import error_to_json
from .._cassette.format import Entry, body_bytes
from .._cassette.lines import RESTORE, http_answer_problem
from .._deck.altering import give, given
from .._deck.call import Call
from .._deck.retarget import with_model
from ..faults import KINDS, Fault
from ..faults._answers import PREVIOUS
from ._bodies import encode, request_body
from ._chunks import chunk_types, replayed_chunks
from ._live import Live, Owner, Step
from ._providers import host_of, sender_of
from ._shapes import classify, name_of, query_pairs, request_args
from ._streams import stream_types

# Faults this boundary shapes into the real answer instead of raising in its place.
SHAPED = frozenset(kind.name for kind in KINDS.values() if kind.shapes_answers)


class Exchange(Live):
    """One request: its call, and the answer from the recording, a fault or the network."""

    def __init__(self, owner: Owner, request: Any, body: bytes, *, side: int) -> None:
        self.owner = owner
        self.request = request
        self.side = side  # 0 for a sync client, 1 for an async one
        url, method = request.url, request.method
        path = url.path  # decoded anew at each read
        # Pairs hide their names from the field rules, so the query is redacted by name here.
        query = query_pairs(url.params.multi_items(), owner.deck.redactor) if url.query else []
        # The request but for its body: its method, path, query and the headers kept.
        self.head = request_args(method, path, query, request.headers, owner.keep)
        host, agent = sender_of(request.headers)
        # (a password masked in the path; the host as sent, which a proxy may have set)
        self.kind, self.name = name_of(
            method, self.head["path"], host=host_of(host, url.host), agent=agent
        )
        self.body = body
        self.ordinal = 0

    @property
    def args(self) -> dict[str, Any]:
        """The request as its call's args: its body by meaning (``_bodies.request_body``:
        JSON parsed, a form's pairs, multipart's parts, text, or a digest of its bytes)."""
        if not self.body:
            return self.head
        content_type = self.request.headers.get("content-type")
        # (the body stays the last field)
        return {**self.head, **request_body(self.body, content_type, self.owner.deck.redactor)}

    def first_step(self) -> Step:
        """Decide the call and answer it without the network where it can be: a fault's
        stand-in or the recording. Otherwise say how long to wait before going live."""
        self._before_deciding()
        deck = self.owner.deck
        call = deck.begin(self.kind, self.name, self.args, shaped=SHAPED, retarget=True)
        return self._step(call)

    async def afirst_step(self) -> Step:
        """``first_step`` on an event loop: the call is decided by ``Deck.abegin`` (a
        resumed request another task's reorder put early waits for its turn)."""
        self._before_deciding()
        deck = self.owner.deck
        call = await deck.abegin(self.kind, self.name, self.args, shaped=SHAPED, retarget=True)
        return self._step(call)

    def _before_deciding(self) -> None:
        owner = self.owner
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
            if call.model is not None:
                self.request = self.sent_to(call.model)
            return Step(call, None, 0.0 if _streams(self.request) else call.delay)
        value, answer = self.answer(call, entry)
        status, headers = value["status"], value["headers"]
        deck = owner.deck
        if entry.result == "stream":
            events = self.events(call, status, headers, answer)
            stream = stream_types(owner.httpx)[self.side](events)
            return Step(call, self.replayed(status, headers, stream=stream), 0.0)
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

    def sent_to(self, model: str) -> Any:
        """The request as it goes live to ``model``: its JSON body's ``model`` field
        rewritten (the call's args were keyed with it), its ``Content-Length`` made anew,
        or, where the path names the model (Gemini), its path; the rest (headers,
        timeouts) as the client built it."""
        request, httpx = self.request, self.owner.httpx
        body = orjson.loads(self.body)
        url, content = request.url, self.body
        if isinstance(body, dict) and "model" in body:
            body["model"] = model
            content = orjson.dumps(body)
        else:
            url = url.copy_with(path=with_model(url.path, model))
        headers = [(k, v) for k, v in request.headers.raw if k.lower() != b"content-length"]
        return httpx.Request(
            request.method, url, headers=headers, content=content, extensions=request.extensions
        )

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
        try:
            raw = [(name.encode(), value.encode()) for name, value in headers.items()]
        except AttributeError:  # a header sent more than once: a list of its values
            raw = [
                (name.encode(), one.encode())
                for name, value in headers.items()
                for one in (value if type(value) is list else (value,))
            ]
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
        # The reader checked http lines and the answers whose bodies it kept; a model line
        # may hold anything.
        if entry.kind != "http" and entry.line not in self.owner.bodies():
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
                body = fault.spec.answer(self.values(call, fault), self.name, body, self.sent)
            error, retry_after, code = classify(value["status"], value["headers"], body)
            if entry.kind == "model" and error is None and not binary:
                give(call, "out", body)
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
            events = fault.spec.events(self.values(call, fault), self.name, events, self.sent)
        if entry.kind == "model" and value["status"] < 400:
            give(call, "stream", events)
        return value, events

    def values(self, call: Call, fault: Fault) -> dict[str, Any]:
        """The parameters a fault breaks this call's answer with: its own, and the last
        answer the run gave a model call of this name, if kept, under ``PREVIOUS``."""
        params = fault.values
        previous = given(call)
        if previous is not None:
            params[PREVIOUS] = previous
        return params


def _streams(request: Any) -> bool:
    """Whether a request asks for a stream: by its ``accept``, or by Google's ``alt=sse``
    (google-genai sends no ``accept``)."""
    if "text/event-stream" in request.headers.get("accept", ""):
        return True
    return bool(request.url.query) and request.url.params.get("alt") == "sse"
