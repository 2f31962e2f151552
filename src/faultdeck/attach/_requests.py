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
from collections.abc import Callable
from types import ModuleType
from typing import Any

from requests import exceptions as rq

from .._cassette.errorjson import unreached
from .._deck.deck import Deck
from ._state import deciding, send
from ._table import ADAPTERS, Undo, replace
from ._urllib import body_bytes, failing_as, header_pairs, http_module, live_response, nothing, wire
from ._urllib3 import body_pieces, response_of

_URLLIB3 = next(adapter for adapter in ADAPTERS if adapter.library == "urllib3")
"""urllib3's row: requests' own HTTP, whose responses are built here as that adapter's."""


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
        with failing_as(httpx, asked, _recorded_as):
            inner = sent(prepared if asked is routed else _sent_as(prepared, asked.content))
        raw = inner.raw
        return live_response(
            httpx,
            asked,
            raw.status,
            raw.reason or "",
            raw.headers.iteritems(),
            body_pieces(raw, httpx, asked),
            lambda: _close(raw),
        )

    try:
        answer = send(deck, httpx, routed, live)
    except httpx.TransportError as exc:
        error = _program_error(exc, httpx, request)
    else:
        parsed = wire(answer, request.method, httpx)  # unread, as urllib3's connection gives it
        raw = response_of(
            parsed, request.method, request.url, preload_content=False, decode_content=False
        )
        return adapter.build_response(request, raw)
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


def _close(raw: Any) -> None:
    """A live body done with: its connection back to the pool (closed if unread)."""
    if not raw.closed:
        raw.close()
    raw.release_conn()


def _recorded_as(exc: Exception) -> str | None:
    """What a live failure of requests is recorded as (``None``: as it is, for one that is
    not the network's: an invalid URL, a missing schema…)."""
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
