"""``requests``: every request an ``HTTPAdapter`` sends (every ``Session`` mounts one for
``http://`` and ``https://`` unless given another) answers through the deck. An adapter of
the program's own that does not send through ``HTTPAdapter.send`` is left to it.

The program gets a real ``requests.Response``, built as ``HTTPAdapter.build_response``
builds it: on a ``urllib3.HTTPResponse`` (``preload_content=False``) over the answer as
``http.client`` parses it (``_urllib.wire``), so that requests decodes a gzip body,
streams (``stream=True``, ``iter_lines`` over server-sent events), takes cookies and
follows redirects (each hop its own call) as it does live. A transport error reaches the
program as requests' own: the one raised live, or for a replayed or injected one
``ConnectTimeout``, ``ReadTimeout`` or ``ConnectionError``; a body cut short or reset
raises ``ChunkedEncodingError`` or ``ConnectionError`` from the reading, as it does live.

``urllib3`` 1.26 and 2.x are known (requests 2.x runs on either); another is not routed,
and said so in one line.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

from requests import exceptions as rq
from urllib3 import exceptions as u3
from urllib3._collections import HTTPHeaderDict
from urllib3.response import HTTPResponse

from .._cassette.errorjson import unreached
from .._deck.deck import Deck
from ._state import deciding, send
from ._table import Adapter, Undo, replace
from ._urllib import body_bytes, header_pairs, http_module, live_response, nothing, wire

_URLLIB3 = Adapter("urllib3", "urllib3", (1, 26), (3,))
"""The versions of urllib3 (requests' own HTTP) that the responses are built for."""
_PIECE = 65536


def route(adapters: ModuleType) -> Undo:
    """Route ``requests.adapters.HTTPAdapter``; the undo."""
    unknown = _URLLIB3.unknown_version()
    if unknown is not None:
        sys.stderr.write(unknown + "\n")
        return nothing
    http = http_module("requests")
    if http is None:
        return nothing
    cls = adapters.HTTPAdapter
    original = cls.send

    def send_routed(
        self: Any,
        request: Any,
        stream: bool = False,
        timeout: Any = None,
        verify: Any = True,
        cert: Any = None,
        proxies: Any = None,
    ) -> Any:
        deck = deciding()
        if deck is None:
            return original(
                self,
                request,
                stream=stream,
                timeout=timeout,
                verify=verify,
                cert=cert,
                proxies=proxies,
            )

        def sent(prepared: Any) -> Any:  # live: the body read to the end, never preloaded
            return original(
                self,
                prepared,
                stream=True,
                timeout=timeout,
                verify=verify,
                cert=cert,
                proxies=proxies,
            )

        return _send(deck, http(), self, request, sent)

    return replace(cls, "send", send_routed)


def _send(deck: Deck, httpx: Any, adapter: Any, request: Any, sent: Callable[[Any], Any]) -> Any:
    """``request`` (a ``PreparedRequest``) answered through ``deck``, as ``adapter`` would."""
    body = request.body
    data = None if body is None else body_bytes(body)
    prepared = request
    if data is not None and not isinstance(body, bytes | str):  # a file or a generator
        prepared = request.copy()
        # A chunked body goes as an iterable: requests before 2.32 write its chunks themselves.
        prepared.body = [data] if "Transfer-Encoding" in request.headers else data
    routed = httpx.Request(
        request.method,
        request.url,
        headers=header_pairs(request.headers.items()),
        content=data,
    )

    def live(asked: Any) -> Any:  # ``asked``: the request as the deck sends it
        try:
            inner = sent(prepared if asked is routed else _sent_as(prepared, asked.content))
        except rq.RequestException as exc:
            error = _recorded_error(exc, httpx, asked)
            if error is None:
                raise
            raise error from exc
        raw = inner.raw
        return live_response(
            httpx,
            asked,
            raw.status,
            raw.reason or "",
            raw.headers.iteritems(),
            _pieces(raw, httpx, asked),
            lambda: _close(raw),
        )

    try:
        answer = send(deck, httpx, routed, live)
    except httpx.TransportError as exc:
        error = _program_error(exc, httpx, request)
    else:
        return adapter.build_response(request, _urllib3_response(request, answer, httpx))
    raise error


def _sent_as(prepared: Any, content: bytes) -> Any:
    """``prepared`` with the body the deck sends instead (a fork's other model)."""
    changed = prepared.copy()
    if "Transfer-Encoding" in changed.headers:
        changed.body = [content]
    else:
        changed.body = content
        changed.headers["Content-Length"] = str(len(content))
    return changed


def _urllib3_response(request: Any, answer: Any, httpx: Any) -> HTTPResponse:
    """``answer`` as urllib3's connection hands it to ``HTTPAdapter`` (unread)."""
    parsed = wire(answer, request.method, httpx)
    headers = HTTPHeaderDict()
    for name, value in parsed.msg.items():
        headers.add(name, value)
    return HTTPResponse(
        body=parsed,
        headers=headers,
        status=parsed.status,
        version=parsed.version,
        reason=parsed.reason,
        preload_content=False,
        decode_content=False,
        original_response=parsed,
        request_method=request.method,
        request_url=request.url,
    )


def _pieces(raw: Any, httpx: Any, request: Any) -> Iterator[bytes]:
    """A live urllib3 body's raw bytes as they come (a chunk at a time), its errors as
    ``httpx2``'s."""
    read1 = getattr(raw, "read1", None)  # urllib3 2.3 and later: what came, as it comes
    try:
        if read1 is None:  # by chunk when chunked, else by _PIECE bytes
            yield from raw.stream(_PIECE, decode_content=False)
            return
        while piece := read1(_PIECE, decode_content=False):
            yield piece
    except u3.ReadTimeoutError as exc:
        raise httpx.ReadTimeout(str(exc), request=request) from exc
    except u3.ProtocolError as exc:
        reset = any(isinstance(arg, OSError) for arg in exc.args)
        kind = httpx.ReadError if reset else httpx.RemoteProtocolError
        raise kind(str(exc), request=request) from exc
    except (u3.HTTPError, OSError) as exc:
        raise httpx.ReadError(str(exc), request=request) from exc


def _close(raw: Any) -> None:
    """A live body done with: its connection back to the pool (closed if unread)."""
    if not raw.closed:
        raw.close()
    raw.release_conn()


def _recorded_error(exc: Exception, httpx: Any, request: Any) -> Exception | None:
    """The ``httpx2`` error a live failure of requests is recorded as (``None``: as it is,
    for one that is not the network's: an invalid URL, a missing schema…)."""
    name = _recorded_as(exc)
    if name is None:
        return None
    error: Exception = getattr(httpx, name)(str(exc), request=request)
    return error


def _recorded_as(exc: Exception) -> str | None:
    if isinstance(exc, rq.ConnectTimeout):
        return "ConnectTimeout"
    if isinstance(exc, rq.Timeout):
        return "ReadTimeout"
    if isinstance(exc, rq.ProxyError):
        return "ProxyError"
    if isinstance(exc, rq.SSLError) or (isinstance(exc, rq.ConnectionError) and unreached(exc)):
        return "ConnectError"
    return "ReadError" if isinstance(exc, rq.ConnectionError) else None


def _program_error(exc: Exception, httpx: Any, request: Any) -> Exception:
    """What requests raises where the deck raised ``exc``: its own error when it came from
    a live call, else requests' for that failure."""
    cause = exc.__cause__
    if isinstance(cause, rq.RequestException):
        return cause
    message = str(exc)
    if isinstance(exc, httpx.ConnectTimeout):
        return rq.ConnectTimeout(message, request=request)
    if isinstance(exc, httpx.TimeoutException):
        return rq.ReadTimeout(message, request=request)
    if isinstance(exc, httpx.ProxyError):
        return rq.ProxyError(message, request=request)
    return rq.ConnectionError(message, request=request)
