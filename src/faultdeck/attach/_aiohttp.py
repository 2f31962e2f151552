"""``aiohttp``: every request of every ``ClientSession`` (``aiohttp.request`` too) answers
through the deck, one call a hop: a redirect followed, a middleware's second try and
aiohttp's own retry of a reset request are each a call, as each is a request on the wire.

Where, and why there. ``ClientSession._request`` is the one door of a session's requests,
but it follows redirects and retries inside itself: patched alone, it makes one call of
several requests (``aioresponses`` patches it so, and follows redirects itself). One hop is
``_connect_and_send_request``, a closure of ``_request`` (not patchable), and below it
``connector.connect`` opens a connection before ``ClientRequest.send`` writes on it (a
replay would open one). aiohttp's own client middlewares (3.12) wrap exactly that hop, every
hop: ``_request`` is wrapped only to add one, innermost (the session's and the request's own
stay around it), and to read answers raw (``auto_decompress=False``); that middleware routes
each hop as ``fd.http.AsyncTransport(deck, httpx=httpx2)`` routes a request.

The deck's answer reaches the program as aiohttp builds a response live: its status line,
headers and body are fed to aiohttp's own protocol (``ResponseHandler``) on an in-memory
line, and ``ClientResponse.start`` reads them off it. Its headers, ``content`` stream,
decoding of a ``Content-Encoding`` (as the session asked), flow control and errors are
aiohttp's; the body goes in as the answer gives it, a live one as it arrives (teed into the
cassette), a recorded one as recorded.
"""

from __future__ import annotations

import asyncio
import errno
import functools
import importlib.util
import inspect
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import suppress
from http import HTTPStatus
from types import ModuleType, SimpleNamespace
from typing import Any

from aiohttp import (
    ClientConnectionError,
    ClientConnectorError,
    ClientOSError,
    ClientPayloadError,
    ClientRequest,
    ClientResponse,
    ConnectionTimeoutError,
    ServerDisconnectedError,
    SocketTimeoutError,
    hdrs,
)
from aiohttp.client_proto import ResponseHandler
from aiohttp.helpers import TimerNoop
from aiohttp.http_exceptions import TransferEncodingError
from aiohttp.payload import Payload
from multidict import CIMultiDict

from .._base.errors import RecordedError
from ._state import asend, deciding
from ._table import Undo, replace

Handler = Callable[[ClientRequest], Awaitable[ClientResponse]]

_REDIRECTS = frozenset({301, 302, 303, 307, 308})
# How the protocol reads a body: the request's options, else the session's (``_`` + name).
_READING = ("auto_decompress", "read_bufsize", "max_line_size", "max_field_size", "max_headers")
# The options and arguments this aiohttp takes (they grow from one minor version to the next).
_PARAMS = frozenset(inspect.signature(ResponseHandler.set_response_params).parameters)
_MADE = frozenset(inspect.signature(ClientResponse.__init__).parameters)


def route(aiohttp: ModuleType) -> Undo:
    """Route every ``aiohttp.ClientSession``'s requests; the undo."""
    if importlib.util.find_spec("httpx2") is None:
        sys.stderr.write(
            "faultdeck: aiohttp's requests are not recorded: faultdeck routes them through "
            "httpx2: pip install 'faultdeck[http]'\n"
        )
        return lambda: None  # nothing was patched
    session = aiohttp.ClientSession
    original = session._request

    @functools.wraps(original)
    async def _request(self: Any, method: str, str_or_url: Any, **kwargs: Any) -> Any:
        if deciding() is None or _upgrades(kwargs.get("headers")):
            return await original(self, method, str_or_url, **kwargs)
        hop = _Hop(self, kwargs)
        chain = kwargs.get("middlewares")
        kwargs["middlewares"] = (*(self._middlewares if chain is None else chain), hop)
        kwargs["auto_decompress"] = False  # the hop hands the program a body it decodes
        return await original(self, method, str_or_url, **kwargs)

    return replace(session, "_request", _request)


def _upgrades(headers: Any) -> bool:
    """Whether a request asks to upgrade its connection (a websocket): not routed."""
    return bool(headers) and hdrs.UPGRADE in CIMultiDict(headers)


class _Hop:
    """The innermost middleware of one routed request: each hop through the deck."""

    def __init__(self, session: Any, kwargs: dict[str, Any]) -> None:
        self.follows = kwargs.get("allow_redirects", True)
        # How the program's response reads its body: as the request, else the session, says.
        reading = {"read_until_eof": kwargs.get("read_until_eof", True)}
        for option in _READING:
            value = kwargs.get(option)
            reading[option] = getattr(session, "_" + option, None) if value is None else value
        self.reading = {k: v for k, v in reading.items() if v is not None and k in _PARAMS}

    async def __call__(self, req: ClientRequest, handler: Handler) -> ClientResponse:
        if hdrs.UPGRADE in req.headers:
            return await handler(req)
        import httpx2

        went: list[ClientResponse] = []

        async def live(asked: Any) -> Any:  # as the deck sends it (``request`` or changed)
            if asked is not request:  # another body, for another model
                req.headers.pop(hdrs.CONTENT_LENGTH, None)
                req.update_body_from_data(asked.content)
            resp = await handler(req)
            went.append(resp)
            stream = _upstream(httpx2)(resp)
            return httpx2.Response(
                resp.status, headers=list(resp.raw_headers), stream=stream, request=asked
            )

        request, size = await _outgoing(req, httpx2)
        deck = deciding()
        try:
            answer = await (live(request) if deck is None else asend(deck, httpx2, request, live))
        except Exception as exc:
            error = _aiohttp_error(exc, req, body=False)
            if error is None:
                raise
            raise error from exc
        reason = went[-1].reason if went else _reason(answer.status_code)
        return await self.respond(req, answer, reason or "", size)

    async def respond(
        self, req: ClientRequest, answer: Any, reason: str, size: int
    ) -> ClientResponse:
        """``answer`` (an ``httpx2.Response``) as aiohttp's response to ``req``."""
        loop = asyncio.get_running_loop()
        protocol = ResponseHandler(loop)
        line = _Line(protocol)
        protocol.connection_made(line)
        timer = getattr(req, "_timer", None) or TimerNoop()
        skip = req.method == hdrs.METH_HEAD
        protocol.set_response_params(timer=timer, skip_payload=skip, **self.reading)
        protocol.data_received(_head(answer, reason))
        made: dict[str, Any] = {"writer": None, "continue100": None, "timer": timer, "loop": loop}
        made.update(request_info=req.request_info, traces=getattr(req, "_traces", []))
        made["session"] = getattr(req, "_session", None)
        if "stream_writer" in _MADE:  # 3.14: what it says was sent
            made["stream_writer"] = SimpleNamespace(output_size=size)
        resp = req.response_class(req.method, req.original_url, **made)
        try:
            await resp.start(line)  # type: ignore[arg-type]
        except BaseException:
            line.close()
            await answer.aclose()
            raise
        feed = _Feed(protocol, answer.headers, bodied=not resp.content.is_eof())
        redirect = answer.status_code in _REDIRECTS and "location" in answer.headers
        if not feed.bodied or (self.follows and redirect):
            # A body the program never reads is read whole now, so that its call is
            # recorded before the next hop (httpx reads a redirect's body too).
            await _pump(answer, feed, resp.content, None)
        else:
            line.pump = loop.create_task(_pump(answer, feed, resp.content, line))
            # Started before the program has the response, so that a release that stops
            # it before its first step still closes the answer (and the call is recorded).
            await asyncio.sleep(0)
        return resp


async def _outgoing(req: ClientRequest, httpx2: Any) -> tuple[Any, int]:
    """``req`` as the ``httpx2`` request the deck decides, with the headers and body bytes
    aiohttp sends (``send`` adds a default ``Content-Type`` to a body that has none); and
    the body's size."""
    pairs = [(name.encode(), value.encode()) for name, value in req.headers.items()]
    skipped = getattr(req, "skip_auto_headers", None) or ()
    if (
        req.method in req.POST_METHODS
        and hdrs.CONTENT_TYPE not in req.headers
        and hdrs.CONTENT_TYPE not in skipped
    ):
        pairs.append((b"Content-Type", b"application/octet-stream"))
    body = req.body
    data = await body.as_bytes() if isinstance(body, Payload) else bytes(body)
    stream = httpx2.ByteStream(data)  # (a stream: httpx2 adds no Content-Length of its own)
    return httpx2.Request(req.method, str(req.url), headers=pairs, stream=stream), len(data)


@functools.cache
def _upstream(httpx2: Any) -> type:
    """The byte stream of a live aiohttp response, for an ``httpx2.Response``."""

    class Upstream(httpx2.AsyncByteStream):  # type: ignore[misc]
        """The body as aiohttp receives it: raw (the hop reads it undecoded), as it comes."""

        def __init__(self, resp: ClientResponse) -> None:
            self.resp = resp

        async def __aiter__(self) -> AsyncIterator[bytes]:
            async for piece in self.resp.content.iter_any():
                yield piece

        async def aclose(self) -> None:
            self.resp.release()

    return Upstream


def _reason(status: int) -> str:
    """The reason phrase of a status (a recording keeps none)."""
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""


def _head(answer: Any, reason: str) -> bytes:
    """The status line and headers of ``answer``, as a server sends them."""
    lines = [b"HTTP/1.1 %d %s" % (answer.status_code, reason.encode("utf-8", "replace"))]
    lines.extend(name + b": " + value for name, value in answer.headers.raw)
    return b"\r\n".join(lines) + b"\r\n\r\n"


class _Line(asyncio.Transport):
    """The in-memory connection an answer arrives on: the transport under aiohttp's protocol
    (its flow control pauses the feed) and the connection its response holds (releasing it
    stops the feed and runs the callbacks, the session's timeout's end)."""

    def __init__(self, protocol: ResponseHandler) -> None:
        super().__init__()
        self.protocol = protocol  # (what a connection holds)
        self.pump: asyncio.Task[None] | None = None
        self._flowing = asyncio.Event()
        self._flowing.set()
        self._callbacks: list[Callable[[], None]] = []
        self._closed = False

    def pause_reading(self) -> None:
        self._flowing.clear()

    def resume_reading(self) -> None:
        self._flowing.set()

    def is_closing(self) -> bool:
        return self._closed

    async def flowing(self) -> bool:
        """Wait while the protocol holds the feed; whether the line is still open."""
        await self._flowing.wait()
        return not self._closed

    def add_callback(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` when the line is let go."""
        if self._closed:
            callback()
        else:
            self._callbacks.append(callback)

    def close(self) -> None:
        """The response (or the protocol) is done with the line: an answer still coming
        stops."""
        if self._closed:
            return
        self._closed = True
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            with suppress(Exception):
                callback()
        pump, self.pump = self.pump, None
        with suppress(RuntimeError):  # (a response collected once its loop has closed)
            self._flowing.set()
            if pump is not None and not pump.done():
                pump.cancel()

    release = abort = close


class _Feed:
    """A body's bytes into aiohttp's protocol, framed as its headers say: chunked, a length,
    or up to the end of the connection. A body's end (a length's last byte, the last chunk,
    the connection's end) goes in only once the answer has ended, so that the program sees
    the body end when the deck has recorded it."""

    def __init__(self, protocol: ResponseHandler, headers: Any, *, bodied: bool) -> None:
        self.protocol = protocol
        self.bodied = bodied
        self.chunked = "chunked" in headers.get("transfer-encoding", "").lower()
        length = headers.get("content-length", "").strip()
        self.left = int(length) if length.isdigit() and not self.chunked else None
        self.held = b""

    def piece(self, data: bytes) -> None:
        """The next bytes of the body."""
        if not data or not self.bodied:
            return
        if self.chunked:
            data = b"%x\r\n%s\r\n" % (len(data), data)
        elif self.left is not None:
            if self.left <= 0:
                return  # past the length: no body of this response's
            if len(data) >= self.left:
                data, self.held = data[: self.left - 1], data[self.left - 1 : self.left]
                self.left = 0
            else:
                self.left -= len(data)
        if data:
            self.protocol.data_received(data)

    def end(self) -> None:
        """The answer ended: so does the body."""
        if not self.bodied:
            return
        tail = self.held + (b"0\r\n\r\n" if self.chunked else b"")
        if tail:
            self.protocol.data_received(tail)
        self.protocol.connection_lost(None)


async def _pump(answer: Any, feed: _Feed, content: Any, line: _Line | None) -> None:
    """Feed ``answer``'s body as it comes, at the pace aiohttp's protocol reads it when it
    has a ``line`` to pause; an error on the way ends the program's ``content`` with it."""
    try:
        async for piece in answer.stream:  # raw (a read answer keeps its bytes there too)
            if line is not None and not await line.flowing():
                return
            feed.piece(piece)
        if line is not None:
            line.pump = None  # the end releases the line: nothing left to stop
            if not await line.flowing():  # (a paused decoder finishes its data first)
                return
        feed.end()
    except Exception as exc:
        error = _aiohttp_error(exc, None, body=True)
        content.set_exception(exc if error is None else error)
    finally:
        await answer.aclose()


def _aiohttp_error(exc: Exception, req: ClientRequest | None, *, body: bool) -> Exception | None:
    """The error aiohttp raises where the deck gave a transport error in httpx2's terms (a
    fault, a recording made through httpx2), or the one a recorded aiohttp error whose type
    could not be rebuilt falls under; ``None`` to let ``exc`` go as it is."""
    if isinstance(exc, RecordedError):
        return ClientConnectionError(str(exc)) if exc.type_name.startswith("aiohttp") else None
    module = type(exc).__module__.partition(".")[0]
    if module not in ("httpx", "httpx2") or not _named(exc, "TransportError"):
        return None
    reset = ConnectionResetError(errno.ECONNRESET, os.strerror(errno.ECONNRESET))
    if _named(exc, "ConnectTimeout") and req is not None:
        return ConnectionTimeoutError(f"Connection timeout to host {req.url}")
    if _named(exc, "TimeoutException"):
        return SocketTimeoutError("Timeout on reading data from socket")
    if body:
        cause: Exception = reset
        if _named(exc, "RemoteProtocolError"):
            cause = TransferEncodingError("Not enough data to satisfy transfer length header.")
        error = ClientPayloadError(f"Response payload is not completed: {cause!r}")
        error.__cause__ = cause
        return error
    if _named(exc, "ConnectError") and req is not None:
        refused = ConnectionRefusedError(errno.ECONNREFUSED, os.strerror(errno.ECONNREFUSED))
        return ClientConnectorError(req.connection_key, refused)
    if _named(exc, "RemoteProtocolError"):
        return ServerDisconnectedError()
    if _named(exc, "NetworkError"):
        return ClientOSError(*reset.args)
    return ClientConnectionError(str(exc))


def _named(exc: Exception, name: str) -> bool:
    """Whether ``exc`` is an httpx or httpx2 error of the class ``name`` (by the class
    tree's names: the two modules' classes are not each other's)."""
    return any(cls.__name__ == name for cls in type(exc).__mro__)
