"""``urllib3`` used directly: every request a connection pool sends (``urllib3.request``, a
``PoolManager``'s, a ``ProxyManager``'s, a pool of the program's own) answers through the
deck, one call an attempt.

The seam is the pool's ``_make_request``, under its ``urlopen``: urllib3's own redirects
(the pool's, and the manager's across hosts) and ``Retry`` (a connection error, a read
timeout, a 429 or 503 with Retry-After, which it waits out) run on the answers as they do
live, so each redirect hop and each retry is its own call. A request ``requests`` sends is
not routed here again: its own adapter routes it, and its live call reaches the pool with
``THROUGH_DECK`` set.

The program gets what the pool gives live: on urllib3 2.x a ``urllib3.HTTPResponse`` built
as the connection builds it, over the answer as ``http.client`` parses it
(``_urllib.wire``), with the program's ``preload_content``, ``decode_content`` and
``enforce_content_length``; on 1.26 the ``http.client`` response, which the pool wraps
itself. A replayed or injected transport error is raised where the connection raises it
live: ``NewConnectionError`` or ``ConnectTimeoutError`` before a connection,
``ReadTimeoutError`` waiting for the answer, a reset or a disconnect, which the pool wraps
in ``ProtocolError``; so ``Retry`` counts it and ``MaxRetryError`` ends the retries, as
live. A live failure is the connection's own error, as it was raised. Through a proxy's
tunnel (an https URL through ``ProxyManager``), the tunnel is opened only when a call goes
live: a replay opens no socket.
"""

from __future__ import annotations

import errno
import http.client
import inspect
import ssl
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any
from urllib.parse import urlsplit

from urllib3 import exceptions as u3
from urllib3._collections import HTTPHeaderDict
from urllib3._version import __version__ as _VERSION
from urllib3.response import HTTPResponse

from .._deck.deck import Deck
from ._state import deciding, send
from ._table import Undo, replace
from ._urllib import (
    body_bytes,
    failing_as,
    header_pairs,
    http_module,
    live_response,
    nothing,
    wire,
)

_PIECE = 65536
"""The most a live body is read at once (a stream's chunk arrives as it comes)."""
_PORTS = {"http": 80, "https": 443}
_LEGACY = int(_VERSION.partition(".")[0]) < 2
"""urllib3 1.26: ``_make_request`` returns http.client's response, which ``urlopen`` wraps."""


@dataclass(frozen=True, slots=True)
class _Hop:
    """One request a pool sends: the arguments of its ``_make_request``."""

    pool: Any
    conn: Any
    method: str
    url: str
    options: Mapping[str, Any]


def route(module: ModuleType) -> Undo:
    """Route ``urllib3``'s connection pools; the undo."""
    http = http_module("urllib3")
    if http is None:
        return nothing
    pools = module.connectionpool
    make_request = pools.HTTPConnectionPool._make_request
    prepare_proxy = pools.HTTPSConnectionPool._prepare_proxy
    positional = [
        parameter.name
        for parameter in list(inspect.signature(make_request).parameters.values())[4:]
        if parameter.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
    ]
    owed: weakref.WeakSet[Any] = weakref.WeakSet()  # connections whose tunnel waits to go live

    def routed_make_request(
        self: Any, conn: Any, method: str, url: str, *args: Any, **kw: Any
    ) -> Any:
        kw.update(zip(positional, args, strict=False))
        deck = deciding()
        if deck is None:
            return make_request(self, conn, method, url, **kw)

        def sent(changes: Mapping[str, Any]) -> Any:  # live, as the pool sends it
            if conn in owed:
                owed.discard(conn)
                prepare_proxy(self, conn)
            return make_request(self, conn, method, url, **{**kw, **changes})

        return _send(deck, http(), _Hop(self, conn, method, url, kw), sent)

    def routed_prepare_proxy(self: Any, conn: Any) -> None:
        if deciding() is None:
            prepare_proxy(self, conn)
        else:
            owed.add(conn)

    undo_request = replace(pools.HTTPConnectionPool, "_make_request", routed_make_request)
    undo_proxy = replace(pools.HTTPSConnectionPool, "_prepare_proxy", routed_prepare_proxy)

    def undo() -> None:
        undo_proxy()
        undo_request()
        owed.clear()

    return undo


def _send(deck: Deck, httpx: Any, hop: _Hop, sent: Callable[[Mapping[str, Any]], Any]) -> Any:
    """``hop`` answered through ``deck``, as ``_make_request`` answers it."""
    body = hop.options.get("body")
    data = None if body is None else body_bytes(body)
    changes: dict[str, Any] = {}
    if data is not None and not isinstance(body, bytes | str):  # a file or an iterable
        changes["body"] = [data]  # read once, sent framed as urllib3 frames the original
    if not _LEGACY:  # the body's raw bytes as they come, its connection the pool's to keep
        changes.update(preload_content=False, decode_content=False, response_conn=None)
    routed = httpx.Request(
        hop.method,
        _full_url(hop.pool, hop.url),
        headers=header_pairs(_sent_headers(hop.pool, hop.options.get("headers"))),
        content=data,
    )

    def live(request: Any) -> Any:  # ``request``: as the deck sends it (a fork's other model)
        asked = changes if request is routed else {**changes, **_resent(hop, request.content)}
        with failing_as(httpx, request, _recorded_as):
            raw = sent(asked)
        if isinstance(raw, http.client.HTTPResponse):  # urllib3 1.26's
            status, reason, headers = raw.status, raw.reason, raw.msg.items()
        else:
            status, reason, headers = raw.status, raw.reason or "", raw.headers.iteritems()
        pieces = body_pieces(raw, httpx, request)
        sock = getattr(hop.conn, "sock", None)
        return live_response(
            httpx, request, status, reason, headers, pieces, lambda: _close(raw, hop.conn, sock)
        )

    try:
        answer = send(deck, httpx, routed, live)
    except httpx.TransportError as exc:
        error = _program_error(exc, httpx, hop)
    else:
        parsed = wire(answer, hop.method, httpx)
        return parsed if _LEGACY else _response(parsed, hop)
    raise error


def _resent(hop: _Hop, content: bytes) -> dict[str, Any]:
    """The options that send ``content`` in place of the program's body, with its length
    said again when the program said one."""
    headers = dict(hop.options.get("headers") or {})
    for name in [n for n in headers if n.lower() == "content-length"]:
        headers[name] = str(len(content))
    return {"body": content, "headers": headers} if headers else {"body": content}


def _full_url(pool: Any, url: str) -> str:
    """The URL a pool's request goes to: as given when absolute (through a proxy that
    forwards it), else on the pool's own host."""
    if not url.startswith("/") and urlsplit(url).netloc:
        return url
    host = f"[{pool.host}]" if ":" in pool.host else pool.host
    port = "" if pool.port in (None, _PORTS.get(pool.scheme)) else f":{pool.port}"
    return f"{pool.scheme}://{host}{port}{url}"


def _sent_headers(pool: Any, given: Mapping[str, str] | None) -> list[tuple[str, str]]:
    """The headers urllib3's connection sends (http.client adds Host, as httpx does), but
    the proxy's own: they are for the proxy, as an httpx proxy adds them below the deck."""
    given = given if given is not None else {}
    pairs: Iterable[tuple[str, str]] = getattr(given, "iteritems", given.items)()
    proxy = {name.lower() for name in (pool.proxy_headers or ())} if pool.proxy else set()
    sent = [(name, value) for name, value in pairs if name.lower() not in proxy]
    names = {name.lower() for name, _ in sent}
    if "accept-encoding" not in names:
        sent.insert(0, ("Accept-Encoding", "identity"))
    if "user-agent" not in names:
        sent.insert(0, ("User-Agent", f"python-urllib3/{_VERSION}"))
    return sent


def _response(parsed: http.client.HTTPResponse, hop: _Hop) -> HTTPResponse:
    """``parsed`` as urllib3's connection gives it to the pool (the body preloaded when the
    program asked), with what ``_make_request`` sets on it."""
    options = hop.options
    response = response_of(
        parsed,
        hop.method,
        hop.url,
        preload_content=options.get("preload_content", True),
        decode_content=options.get("decode_content", True),
        enforce_content_length=options.get("enforce_content_length", True),
    )
    response.retries = options.get("retries")
    response._connection = options.get("response_conn")
    response._pool = hop.pool
    return response


def response_of(
    parsed: http.client.HTTPResponse, method: str, url: str, **options: Any
) -> HTTPResponse:
    """A ``urllib3.HTTPResponse`` over ``parsed`` (an answer as ``http.client`` parses it,
    ``_urllib.wire``), as urllib3's connection builds one; ``options`` as
    ``HTTPResponse`` takes them (``preload_content``, ``decode_content``…)."""
    headers = HTTPHeaderDict()
    for name, value in parsed.msg.items():
        headers.add(name, value)
    response = HTTPResponse(
        body=parsed,
        headers=headers,
        status=parsed.status,
        version=parsed.version,
        reason=parsed.reason,
        original_response=parsed,
        request_method=method,
        request_url=url,
        **options,
    )
    if hasattr(response, "version_string"):  # (urllib3 2.2 and later)
        response.version_string = "HTTP/1.1"
    return response


def body_pieces(raw: Any, httpx: Any, request: Any) -> Iterator[bytes]:
    """A live body's raw bytes as they come (a chunk at a time), from urllib3's response
    (or 1.26's ``http.client`` one), its failures as ``httpx2``'s (``_body_failure_as``):
    the requests adapter reads its bodies here too."""
    if isinstance(raw, http.client.HTTPResponse):  # urllib3 1.26's
        chunks: Iterator[bytes] = iter(lambda: raw.read1(_PIECE), b"")
    elif hasattr(raw, "read1"):  # urllib3 2.3 and later: what came, as it comes
        chunks = iter(lambda: raw.read1(_PIECE, decode_content=False), b"")
    else:  # by chunk when chunked, else by _PIECE bytes
        chunks = raw.stream(_PIECE, decode_content=False)
    while True:
        with failing_as(httpx, request, _body_failure_as):
            piece = next(chunks, b"")
        if not piece:
            return
        yield piece


def _body_failure_as(exc: Exception) -> str | None:
    """What a failure while a body is read is recorded as: the connection is open by then,
    so nothing of it is a connect error."""
    if isinstance(exc, u3.ReadTimeoutError | TimeoutError):
        return "ReadTimeout"
    if isinstance(exc, u3.ProtocolError):  # a reset, or a body cut short
        return "ReadError" if _reset(exc) else "RemoteProtocolError"
    if isinstance(exc, http.client.HTTPException):  # 1.26's, a body cut short
        return "RemoteProtocolError"
    return "ReadError" if isinstance(exc, u3.HTTPError | OSError) else None


def _reset(exc: u3.ProtocolError) -> bool:
    """Whether urllib3's ``ProtocolError`` wraps the connection dropping (an ``OSError`` that
    is not http.client's account of a response cut short)."""
    return any(
        isinstance(arg, OSError) and not isinstance(arg, http.client.HTTPException)
        for arg in exc.args
    )


def _close(raw: Any, conn: Any, sock: Any) -> None:
    """A live body done with: when it was not read to its end, what is left of it is on
    the connection, which is closed (the pool opens another), as urllib3 closes it; unless
    the connection has moved on to another socket since (the pool found this one dropped)."""
    if not raw.isclosed():
        raw.close()
        if getattr(conn, "sock", None) is sock:
            conn.close()


def _recorded_as(exc: Exception) -> str | None:
    """What a live failure of a request is recorded as (``None``: as it is, for one that is
    not the network's: a URL it cannot parse, a body it cannot send…)."""
    if isinstance(exc, u3.ProxyError):
        return "ProxyError"
    if isinstance(exc, u3.NewConnectionError | u3.SSLError | ssl.SSLError):
        return "ConnectError"
    if isinstance(exc, u3.ConnectTimeoutError):
        return "ConnectTimeout"
    if isinstance(exc, u3.ReadTimeoutError | TimeoutError):  # (socket.timeout on 1.26)
        return "ReadTimeout"
    if isinstance(exc, http.client.HTTPException):  # RemoteDisconnected, a body cut short
        return "RemoteProtocolError"
    if isinstance(exc, u3.ProtocolError):
        return "ReadError" if _reset(exc) else "RemoteProtocolError"
    return "ReadError" if isinstance(exc, OSError) else None


def _program_error(exc: Exception, httpx: Any, hop: _Hop) -> Exception:
    """What the connection raises where the deck raised ``exc``: its own error when it came
    from a live call, else the connection's for that failure."""
    cause = exc.__cause__
    if isinstance(cause, u3.HTTPError | OSError | http.client.HTTPException):
        return cause
    if isinstance(exc, httpx.ProxyError):
        refused = u3.NewConnectionError(hop.conn, f"Failed to establish a new connection: {exc}")
        return u3.ProxyError("Unable to connect to proxy", refused)
    if isinstance(exc, httpx.ConnectTimeout):
        return u3.ConnectTimeoutError(hop.conn, f"Connection to {hop.pool.host} timed out.")
    if isinstance(exc, httpx.ConnectError):
        return u3.NewConnectionError(hop.conn, f"Failed to establish a new connection: {exc}")
    if isinstance(exc, httpx.TimeoutException):
        return u3.ReadTimeoutError(hop.pool, hop.url, "Read timed out.")
    if isinstance(exc, httpx.RemoteProtocolError):
        return http.client.RemoteDisconnected("Remote end closed connection without response")
    return ConnectionResetError(errno.ECONNRESET, "Connection reset by peer")
