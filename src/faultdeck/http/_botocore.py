"""botocore's seam: a ``before-send`` handler that answers a client's request through a
deck, so that boto3's Bedrock runtime client (and any botocore client) records, replays and
rehearses on the same HTTP path as httpx's clients.

botocore emits ``before-send.<service>.<operation>`` with the signed request just before
it sends it, and uses the first handler's answer that is not ``None`` instead of sending.
The handler turns the request into an ``httpx`` request, puts it through a ``Transport``
(the one record/replay/fault path), and turns the answer into botocore's ``AWSResponse``,
whose body botocore reads through ``raw.stream()`` (an event stream, a JSON answer) or
``raw.read()`` (``invoke_model``'s blob). An error of the HTTP path becomes botocore's own:
a timeout ``ReadTimeoutError``, a refused connection ``EndpointConnectionError``, a
dropped one ``ConnectionClosedError``, a stream cut while read ``ResponseStreamingError``.

botocore is imported only when a client is attached (it is the caller's, already loaded).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from typing import Any

from .._base.errors import ConfigError
from .._deck.deck import Deck

Answer = Callable[[Any], Any]
"""Answers an ``httpx`` request with an ``httpx`` response (a transport's
``handle_request``), or ``None`` to let botocore send it itself."""

EVENT = "before-send"
"""The botocore event the handler answers (``before-send.bedrock-runtime.*`` for one
service)."""
UNIQUE_ID = "faultdeck.http"
"""The id the handler is registered under: registering again replaces it."""


def attach_botocore(client: Any, deck: Deck, *, httpx: Any = None) -> None:
    """Route every request of a botocore (boto3) client through ``deck``: recorded,
    replayed, faults injected, as ``Transport`` routes an httpx client's.

        client = boto3.client("bedrock-runtime", region_name="us-east-1")
        fd.http.attach_botocore(client, deck)

    Live calls go over ``httpx`` with the client's connect and read timeouts. Attaching a
    client again replaces the deck it answers through.

    Args:
        client: a botocore client (``boto3.client(...)``).
        deck: the deck.
        httpx: the HTTP module to go live with, ``httpx`` (the default) or ``httpx2``.

    Raises:
        ConfigError: ``client`` is no botocore client (a boto3 session or resource).
    """
    from ._transport import Transport

    if not hasattr(getattr(client, "meta", None), "events"):
        raise ConfigError(
            f"attach_botocore: a {type(client).__name__} is not a botocore client; pass "
            "the one boto3.client(...) makes (a boto3 resource's is resource.meta.client)"
        )
    transport = Transport(deck, httpx=httpx)
    register(client, Handler(transport.handle_request, transport.httpx, client.meta.config))


def register(client: Any, handler: Handler) -> None:
    """Put ``handler`` on ``client``'s ``before-send`` events, replacing one put before."""
    events = client.meta.events
    events.unregister(EVENT, unique_id=UNIQUE_ID)
    events.register(EVENT, handler, unique_id=UNIQUE_ID)


class Handler:
    """A ``before-send`` handler: a botocore request answered by ``answer`` (``None`` lets
    botocore send it).

    Args:
        answer: answers an ``httpx`` request (``Answer``).
        httpx: the HTTP module of the requests made.
        config: the client's ``botocore.config.Config`` (its timeouts), or ``None``.
    """

    def __init__(self, answer: Answer, httpx: Any, config: Any) -> None:
        self.answer = answer
        self.httpx = httpx
        self.timeout = {
            "connect": getattr(config, "connect_timeout", None),
            "read": getattr(config, "read_timeout", None),
            "write": getattr(config, "read_timeout", None),
            "pool": getattr(config, "connect_timeout", None),
        }

    def __call__(self, request: Any, **kwargs: Any) -> Any:
        """The answer to botocore's ``AWSPreparedRequest``, as an ``AWSResponse``."""
        httpx = self.httpx
        sent = httpx.Request(
            request.method,
            request.url,
            headers=[(k, v) for k, v in request.headers.items()],
            content=_body(request.body),
            extensions={"timeout": self.timeout},
        )
        try:
            response = self.answer(sent)
        except httpx.HTTPError as exc:
            raise _botocore_error(exc, request.url, httpx) from exc
        if response is None:
            return None
        awsrequest = importlib.import_module("botocore.awsrequest")
        headers = [
            (k, v)
            for k, v in response.headers.multi_items()
            if k.lower() not in ("content-encoding", "transfer-encoding")
            and not (k.lower() == "content-length" and "content-encoding" in response.headers)
        ]
        return awsrequest.AWSResponse(
            request.url, response.status_code, dict(headers), Raw(response, request.url, httpx)
        )


def _body(body: Any) -> bytes:
    if body is None:
        return b""
    if isinstance(body, str):
        return body.encode("utf-8")
    if isinstance(body, (bytes, bytearray)):
        return bytes(body)
    read = getattr(body, "read", None)  # a file-like body: read whole, put back at its start
    if read is None:
        return b"".join(body)
    data: bytes = read()
    if hasattr(body, "seek"):
        body.seek(0)
    return data


def _botocore_error(exc: Exception, url: str, httpx: Any) -> Exception:
    """An HTTP error as the botocore exception its own HTTP client would have raised."""
    errors = importlib.import_module("botocore.exceptions")
    if isinstance(exc, httpx.ConnectTimeout):
        found = errors.ConnectTimeoutError(endpoint_url=url, error=exc)
    elif isinstance(exc, httpx.TimeoutException):
        found = errors.ReadTimeoutError(endpoint_url=url, error=exc)
    elif isinstance(exc, httpx.ConnectError):
        found = errors.EndpointConnectionError(endpoint_url=url, error=exc)
    else:
        found = errors.ConnectionClosedError(endpoint_url=url, error=exc)
    return found  # type: ignore[no-any-return]


class Raw:
    """An ``httpx`` response as the ``raw`` of an ``AWSResponse``: its decoded body read
    in pieces (``stream``) or by size (``read``)."""

    def __init__(self, response: Any, url: str, httpx: Any) -> None:
        self.response = response
        self.url = url
        self.httpx = httpx
        self.pieces: Iterator[bytes] | None = None
        self.held = b""

    def stream(self, amt: int | None = None, decode_content: bool = True) -> Iterator[bytes]:
        """The body's pieces as they come (botocore's event-stream reader and
        ``AWSResponse.content`` read it so)."""
        if self.held:
            held, self.held = self.held, b""
            yield held
        while (piece := self._next()) is not None:
            yield piece

    def _next(self) -> bytes | None:
        """The body's next piece, ``None`` at its end. (One iterator, advanced by hand: a
        generator over it, dropped half read, would close it.)"""
        if self.pieces is None:
            self.pieces = iter(self.response.iter_bytes())
        try:
            return next(self.pieces, None)
        except self.httpx.HTTPError as exc:
            errors = importlib.import_module("botocore.exceptions")
            if isinstance(exc, self.httpx.TimeoutException):
                raise errors.ReadTimeoutError(endpoint_url=self.url, error=exc) from exc
            raise errors.ResponseStreamingError(error=exc) from exc

    def read(self, amt: int | None = None) -> bytes:
        """At most ``amt`` bytes of the body (all that is left without ``amt``)."""
        while amt is None or len(self.held) < amt:
            piece = self._next()
            if piece is None:
                break
            self.held += piece
        if amt is None:
            amt = len(self.held)
        data, self.held = self.held[:amt], self.held[amt:]
        return data

    def readable(self) -> bool:
        """A body is read, never written."""
        return True

    def close(self) -> None:
        """Close the response (a stream read to its end records itself first)."""
        self.response.close()
