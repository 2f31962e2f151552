"""``urllib.request``: every request its HTTP and HTTPS handlers open (``urlopen``, an
opener's ``open``: ``AbstractHTTPHandler.do_open``) answers through the deck.

The program gets what ``urlopen`` gives: an ``http.client.HTTPResponse``, here parsed by
``http.client`` itself from the answer's bytes as a socket would carry them (``wire``). So
``HTTPErrorProcessor`` raises ``HTTPError`` for a 4xx or 5xx and the redirect handler sends
each hop again (its own call), as they do live; the body comes as the server sent it, never
decoded (urllib does not decode a gzip body), and a stream is read as it comes. The
``requests`` adapter builds its responses on the same ``wire``.

Around ``send`` errors cross twice, as httpx's transports translate them: a live failure of
the library becomes the ``httpx2`` error the deck records (``raise … from`` the library's
own, which the program then gets as it was raised), and a replayed or injected ``httpx2``
error becomes what urllib raises for it: ``URLError`` when no connection was made,
``TimeoutError`` (``socket.timeout``) when the answer did not come in time,
``ConnectionResetError`` when the connection dropped, a body cut short when the server
closed it mid-answer.
"""

from __future__ import annotations

import contextlib
import copy
import errno
import functools
import http.client
import importlib
import importlib.util
import io
import itertools
import sys
from collections.abc import Callable, Iterable, Iterator
from types import ModuleType
from typing import Any
from urllib.error import URLError

from .._deck.deck import Deck
from ._state import deciding, send
from ._table import Undo, replace

_PIECE = 65536
"""The most a live body is read at once (a stream's chunk arrives as it comes)."""


def route(request: ModuleType) -> Undo:
    """Route ``urllib.request``'s HTTP and HTTPS handlers; the undo."""
    http = http_module("urllib.request")
    if http is None:
        return nothing
    handler = request.AbstractHTTPHandler
    do_open = handler.do_open

    def routed_do_open(self: Any, http_class: Any, req: Any, **http_conn_args: Any) -> Any:
        deck = deciding()
        if deck is None:
            return do_open(self, http_class, req, **http_conn_args)

        def opened(sent: Any) -> Any:
            return do_open(self, http_class, sent, **http_conn_args)

        return _open(deck, http(), req, opened)

    return replace(handler, "do_open", routed_do_open)


def _open(deck: Deck, httpx: Any, req: Any, opened: Callable[[Any], Any]) -> Any:
    """``req`` answered through ``deck``, as ``do_open`` answers it."""
    data = req.data
    body = None if data is None else body_bytes(data)
    sent = req
    if body is not None and not isinstance(data, bytes):  # a file or an iterable: read once
        sent = copy.copy(req)
        sent.headers, sent.unredirected_hdrs = dict(req.headers), dict(req.unredirected_hdrs)
        sent.data = body  # (drops a Content-length given: http.client counts the bytes)
    # The headers do_open sends (http.client adds Host, as httpx does).
    headers = dict(req.unredirected_hdrs)
    headers.update({k: v for k, v in req.headers.items() if k not in headers})
    headers["Connection"] = "close"
    routed = httpx.Request(
        req.get_method(),
        req.get_full_url(),
        headers=header_pairs((name.title(), value) for name, value in headers.items()),
        content=body,
    )

    def live(request: Any) -> Any:  # as the deck sends it: another body for another model
        with failing_as(httpx, request, _recorded_as):
            response = opened(sent if request is routed else _sent_as(sent, request.content))
        return live_response(
            httpx,
            request,
            response.status,
            response.reason,
            response.headers.items(),
            _read1(response, httpx, request),
            response.close,
        )

    try:
        answer = send(deck, httpx, routed, live)
    except httpx.TransportError as exc:
        error = _program_error(exc, httpx)
    else:
        response = wire(answer, req.get_method(), httpx)
        response.url = req.get_full_url()
        response.msg = response.reason  # type: ignore[assignment]  # as do_open leaves it
        return response
    raise error


def _sent_as(req: Any, content: bytes) -> Any:
    """``req`` with the body the deck sends instead (a fork's other model); setting it
    drops the ``Content-length`` urllib counted, and http.client counts the new one."""
    changed = copy.copy(req)
    changed.headers, changed.unredirected_hdrs = dict(req.headers), dict(req.unredirected_hdrs)
    changed.data = content
    return changed


def _recorded_as(exc: Exception) -> str | None:
    """The ``httpx2`` error a live failure of urllib is recorded as (``None``: as it is)."""
    if isinstance(exc, URLError):  # do_open's, from connecting or sending
        if isinstance(exc.reason, TimeoutError):
            return "ConnectTimeout"
        # (not an OSError: no host given, an unknown scheme; not the network's)
        return "ConnectError" if isinstance(exc.reason, OSError) else None
    if isinstance(exc, TimeoutError):  # waiting for the answer
        return "ReadTimeout"
    if isinstance(exc, http.client.HTTPException):  # RemoteDisconnected, a body cut short
        return "RemoteProtocolError"
    return "ReadError" if isinstance(exc, OSError) else None


def _program_error(exc: Exception, httpx: Any) -> Exception:
    """What urllib raises where the deck raised ``exc``: the library's own error when it
    came from a live call, else urllib's for that failure."""
    cause = exc.__cause__
    if isinstance(cause, OSError | http.client.HTTPException):
        return cause
    if isinstance(exc, httpx.ConnectTimeout):
        return URLError(TimeoutError("timed out"))
    if isinstance(exc, httpx.ConnectError):
        return URLError(ConnectionRefusedError(errno.ECONNREFUSED, str(exc)))
    if isinstance(exc, httpx.TimeoutException):
        return TimeoutError("timed out")
    if isinstance(exc, httpx.RemoteProtocolError):
        return http.client.RemoteDisconnected(str(exc))
    return ConnectionResetError(errno.ECONNRESET, "Connection reset by peer")


def _read1(response: Any, httpx: Any, request: Any) -> Iterator[bytes]:
    """A live ``http.client`` body as it comes (a chunk at a time), its errors as
    ``httpx2``'s."""
    while True:
        with failing_as(httpx, request, _recorded_as):
            piece = response.read1(_PIECE)
        if not piece:
            return
        yield piece


# --- what both adapters share -----------------------------------------------------------


def http_module(library: str) -> Callable[[], ModuleType] | None:
    """What gives the HTTP module routed requests go through as (``httpx2``, else ``httpx``):
    imported at the first routed request, not when the library is routed, which may be in
    the middle of another module's import (``http.cookiejar`` imports ``urllib.request``,
    and httpx imports ``http.cookiejar``); ``None`` (said in one line) when neither is
    installed."""
    for name in ("httpx2", "httpx"):
        if importlib.util.find_spec(name) is not None:
            return functools.cache(functools.partial(importlib.import_module, name))
    sys.stderr.write(
        f"faultdeck: {library} is not routed, its requests are not recorded: faultdeck puts "
        "them through httpx2, which is not installed: pip install 'faultdeck[http]'\n"
    )
    return None


def nothing() -> None:
    """The undo of a library left as it was."""


@contextlib.contextmanager
def failing_as(
    httpx: Any, request: Any, recorded_as: Callable[[Exception], str | None]
) -> Iterator[None]:
    """A live failure of the library inside raised as the ``httpx2`` error the deck records
    it as: ``recorded_as`` names that error's class, or ``None`` for a failure that is not
    the network's (a URL it cannot parse, a body it cannot send), which goes out as it is.
    The library's own error is its cause: what the program gets from a live call."""
    try:
        yield
    except Exception as exc:
        name = recorded_as(exc)
        if name is None:
            raise
        raise getattr(httpx, name)(str(exc), request=request) from exc


def body_bytes(body: Any) -> bytes:
    """A request body as its bytes: bytes, text (UTF-8, as urllib3 sends it), a file, or an
    iterable of either, read once."""
    if isinstance(body, bytes):
        return body
    if isinstance(body, str):
        return body.encode("utf-8")
    if isinstance(body, bytearray | memoryview):
        return bytes(body)
    read = getattr(body, "read", None)
    parts: Iterable[Any] = (read(),) if read is not None else body
    return b"".join(part.encode() if isinstance(part, str) else bytes(part) for part in parts)


def header_pairs(headers: Iterable[tuple[Any, Any]]) -> list[tuple[bytes, bytes]]:
    """Header names and values as the bytes ``http.client`` puts on the wire (Latin-1)."""
    return [(_latin1(name), _latin1(value)) for name, value in headers]


def _latin1(text: Any) -> bytes:
    if isinstance(text, bytes):
        return text
    try:
        return str(text).encode("latin-1")
    except UnicodeEncodeError:
        return str(text).encode("utf-8")


@functools.cache
def _pieces_type(httpx: Any) -> type:
    class Pieces(httpx.SyncByteStream):  # type: ignore[misc]
        """A live body for ``httpx``'s response: its pieces, then its close."""

        def __init__(self, pieces: Iterator[bytes], close: Callable[[], None]) -> None:
            self.pieces, self.closing = pieces, close

        def __iter__(self) -> Iterator[bytes]:
            yield from self.pieces

        def close(self) -> None:
            self.closing()

    return Pieces


def live_response(
    httpx: Any,
    request: Any,
    status: int,
    reason: str,
    headers: Iterable[tuple[str, str]],
    pieces: Iterator[bytes],
    close: Callable[[], None],
) -> Any:
    """A library's live answer as an ``httpx2`` response: its status, its headers as sent
    (repeated ones and ``Content-Encoding`` kept), its body's raw bytes as they come."""
    return httpx.Response(
        status,
        headers=header_pairs(headers),
        stream=_pieces_type(httpx)(pieces, close),
        request=request,
        extensions={"reason_phrase": _latin1(reason), "http_version": b"HTTP/1.1"},
    )


def wire(answer: Any, method: str, httpx: Any) -> http.client.HTTPResponse:
    """``answer`` (an ``httpx2`` response) as ``http.client`` reads it off a socket: its
    status line, headers and body bytes as they come (chunked where they come in pieces
    with no ``Content-Length``), begun (its status and headers parsed)."""
    status = answer.status_code
    raw = list(answer.headers.raw)
    names = {name.lower() for name, _ in raw}
    bodiless = method.upper() == "HEAD" or status in (204, 304) or status < 200
    chunked = not bodiless and (b"transfer-encoding" in names or b"content-length" not in names)
    if chunked and b"transfer-encoding" not in names:
        raw.append((b"Transfer-Encoding", b"chunked"))
    if bodiless:  # nothing to read: the answer ends (and is recorded) now
        for _ in answer.stream:
            pass
        answer.close()
    lines = [b"HTTP/1.1 %d %s\r\n" % (status, answer.reason_phrase.encode("latin-1"))]
    lines.extend(b"%s: %s\r\n" % pair for pair in raw)
    lines.append(b"\r\n")
    body = iter(()) if bodiless else _framed(answer.stream, chunked)
    stream = _Wire(itertools.chain((b"".join(lines),), body), answer.close, httpx)
    socket = _Socket(io.BufferedReader(stream))
    response = http.client.HTTPResponse(socket, method=method)  # type: ignore[arg-type]
    response.begin()
    return response


def _framed(stream: Iterable[bytes], chunked: bool) -> Iterator[bytes]:
    for piece in stream:
        if piece:
            yield b"%x\r\n%s\r\n" % (len(piece), piece) if chunked else piece
    if chunked:
        yield b"0\r\n\r\n"


class _Socket:
    """What ``http.client.HTTPResponse`` reads from: a file of the answer's bytes."""

    def __init__(self, reader: io.BufferedReader) -> None:
        self.reader = reader

    def makefile(self, mode: str) -> io.BufferedReader:
        return self.reader


class _Wire(io.RawIOBase):
    """An answer's bytes as a socket gives them: each piece as it comes; an ``httpx2``
    error as the socket shows it (a timeout, a reset, or the end of the bytes when the
    server closed the connection mid-answer)."""

    def __init__(self, pieces: Iterator[bytes], close: Callable[[], None], httpx: Any) -> None:
        self.pieces = pieces
        self.closing = close
        self.httpx = httpx
        self.piece = memoryview(b"")

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self.piece:
            try:
                self.piece = memoryview(next(self.pieces))
            except StopIteration:
                return 0
            except self.httpx.TimeoutException as exc:
                raise TimeoutError("timed out") from exc
            except self.httpx.RemoteProtocolError:
                return 0  # the server closed: the body ends short, as http.client sees it
            except self.httpx.TransportError as exc:
                raise ConnectionResetError(errno.ECONNRESET, "Connection reset by peer") from exc
        size = min(len(buffer), len(self.piece))
        buffer[:size] = self.piece[:size]
        self.piece = self.piece[size:]
        return size

    def close(self) -> None:
        if not self.closed:
            try:
                self.closing()
            finally:
                super().close()
