"""The replay proxy: ``ANY /c/{name}/v1/…`` answered through the cassette ``name``.

Each request goes through an ``httpx.AsyncClient`` whose transport is faultdeck's own
``AsyncTransport`` around the cassette's deck, so a request through the proxy becomes
exactly the call, the key and the stored answer that the in-process HTTP boundary makes
of it (same redaction: the client's API key is forwarded, never stored). Live calls go to
``--upstream`` + the provider path; a replay opens no connection.

One deck per cassette, opened on first use and shared by every client of that name, so a
cassette has one writer; ``Decks.close`` writes their end lines on shutdown.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import orjson
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from .._base.errors import (
    CassetteLocked,
    CassetteNotFound,
    ConfigError,
    FaultdeckError,
    ProcessKilled,
    ReplayMiss,
)
from .._cassette.reader import load
from .._cassette.writer import partial_path
from .._deck.deck import Deck
from ..http import AsyncTransport
from ._config import DECK_REPEATS, REPLAYS, ServerConfig
from ._faults import HEADER, RequestFaults, parse_header, request_fault
from ._names import NameRefused, cassette_name, cassette_path
from ._responses import error

# Headers that belong to one hop, or to faultdeck, never forwarded to the upstream.
_NOT_FORWARDED = frozenset(
    {
        "host",
        "content-length",
        "connection",
        "keep-alive",
        "transfer-encoding",
        "te",
        "upgrade",
        "trailer",
        "proxy-authorization",
        "proxy-connection",
        "cookie",
    }
)
# Headers of one hop, never relayed to the client: the framing is this server's own.
_HOP = frozenset(
    {
        b"connection",
        b"keep-alive",
        b"proxy-authenticate",
        b"proxy-connection",
        b"te",
        b"trailer",
        b"transfer-encoding",
        b"upgrade",
    }
)
# A body held whole is sent as httpx decoded it, with its own length.
_WHOLE = frozenset({b"content-encoding", b"content-length"})
# Statuses whose answer has no body, so no length either (RFC 9110 8.6).
_NO_BODY = frozenset({204, 304})
# Never reached the upstream: nothing was recorded, the client is told so (502).
_UNREACHED = (httpx.ConnectError, httpx.ConnectTimeout, httpx.UnsupportedProtocol)
_PROVIDER_ROOT = "v1"


def split_target(target: str) -> tuple[str, str]:
    """``NAME/v1/chat/completions`` → (``NAME``, ``/v1/chat/completions``): the name is
    every segment before the first ``v1`` segment.

    Raises:
        NameRefused: there is no ``v1`` segment after a name (404).
    """
    segments = target.split("/")
    if _PROVIDER_ROOT in segments[1:]:
        at = segments.index(_PROVIDER_ROOT, 1)
        return "/".join(segments[:at]), "/" + "/".join(segments[at:])
    raise NameRefused(
        404, "no provider path after the cassette name: use /c/NAME/v1/… (e.g. /c/run/v1/models)"
    )


class _NoUpstream:
    """The inner transport when no upstream is set: every live call is refused."""

    async def handle_async_request(self, request: Any) -> Any:
        raise httpx.ConnectError(
            "no upstream: start the server with --upstream URL to record", request=request
        )

    async def aclose(self) -> None:
        return None


@dataclass(slots=True)
class _Opened:
    deck: Deck
    client: httpx.AsyncClient
    made: tuple[Path, ...] = ()
    """What opening the deck created (the cassette, its new folders), to take back when the
    server stops having recorded nothing into it."""


class Decks:
    """The open decks, one per cassette file, each with the client that goes through it.

    Args:
        config: the server's settings.
    """

    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        self._open: dict[str, _Opened] = {}
        self._lock = asyncio.Lock()

    @property
    def names(self) -> list[str]:
        """The names of the cassettes open now."""
        return sorted(cassette_name(self.config.cassettes, Path(p)) for p in self._open)

    def opened(self, path: Path) -> Deck | None:
        """The deck open on the cassette file ``path`` (from ``cassette_path``), if any."""
        opened = self._open.get(str(path))
        return opened.deck if opened is not None else None

    async def client(self, name: str) -> httpx.AsyncClient:
        """The client for cassette ``name``, opening its deck on first use.

        Raises:
            NameRefused: the name may not be used.
            FaultdeckError: the cassette cannot be opened (missing in replay, locked, …).
        """
        path = cassette_path(self.config.cassettes, name)
        opened = self._open.get(str(path))
        if opened is not None:
            return opened.client
        async with self._lock:
            opened = self._open.get(str(path))
            if opened is None:
                opened = self._open_deck(path)
                self._open[str(path)] = opened
        return opened.client

    def _open_deck(self, path: Path) -> _Opened:
        config = self.config
        made: tuple[Path, ...] = ()
        if config.mode != "replay" and not path.exists():
            missing = [p for p in path.parents if not p.exists()]
            made = (path, *missing)  # innermost first: the order they are taken back in
            path.parent.mkdir(parents=True, exist_ok=True)
        # Only a replay cycles: append and resume record what a repeat asks for.
        repeats = DECK_REPEATS[config.repeats] if config.mode in REPLAYS else "miss"
        deck = Deck(path, mode=config.mode, faults=RequestFaults(config.faults), repeats=repeats)
        deck.open()
        inner: Any = (
            _NoUpstream()
            if config.upstream is None or config.mode == "replay"
            else httpx.AsyncHTTPTransport()
        )
        # A replayed stream comes as it was recorded: its first event late, the rest paced.
        transport = AsyncTransport(deck, httpx=httpx, transport=inner, stream_timing=True)
        timeout = httpx.Timeout(None, connect=10.0)
        client = httpx.AsyncClient(transport=transport, timeout=timeout)
        # The upstream gets the client's headers, not httpx's defaults: an Accept-Encoding
        # the client never sent would bring it a body compressed it cannot read.
        client.headers.clear()
        return _Opened(deck, client, made)

    async def close(self) -> None:
        """Close every deck (its end line, its lock) and its client."""
        async with self._lock:
            opened, self._open = list(self._open.values()), {}
        problems: list[FaultdeckError] = []
        for one in opened:
            await one.client.aclose()
            # A fresh recording that holds nothing (the upstream never answered) does not
            # replace the cassette it would have: closed as failed, the old one stays.
            partial = Path(partial_path(os.path.realpath(one.deck.path)))
            empty = partial.exists() and not _holds_calls(partial)
            try:
                one.deck.close("error" if empty else "ok")
            except FaultdeckError as exc:  # one cassette that cannot be closed spares the rest
                problems.append(exc)
                continue
            if empty:
                partial.unlink(missing_ok=True)
            if one.made:
                _take_back(one.made)
        if problems:
            raise problems[0]


def _holds_calls(path: Path) -> bool:
    """Whether the cassette at ``path`` holds a recorded call (an unreadable one counts as
    holding something: it is not ours to remove)."""
    try:
        return bool(load(path).entries)
    except FaultdeckError:
        return True


def _take_back(made: tuple[Path, ...]) -> None:
    """Remove a cassette the server created but recorded nothing into (every call failed
    before an answer, or none came), and the folders made for it, if still empty."""
    cassette, *folders = made
    if _holds_calls(cassette):
        return
    with contextlib.suppress(OSError):
        cassette.unlink()
    for folder in folders:
        try:
            folder.rmdir()
        except OSError:  # not empty: something else lives there now
            return


async def read_body(request: Request, limit: int) -> bytes | None:
    """The request's body, or ``None`` when it is over ``limit`` bytes."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        return None
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def _opening_error(exc: FaultdeckError) -> Response:
    first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    if isinstance(exc, CassetteNotFound):
        return error(404, "faultdeck_cassette_not_found", first)
    if isinstance(exc, CassetteLocked):
        return error(409, "faultdeck_cassette_locked", first)
    if isinstance(exc, ConfigError):
        return error(400, "faultdeck_bad_request", first)
    return error(409, "faultdeck_cassette_unusable", first)


def not_json(request: Request, body: bytes) -> str | None:
    """Why a body that says it is JSON is not, in one line; ``None`` when it is (or does
    not say so). The providers' APIs take JSON: nothing else is forwarded or looked up."""
    if not body or "json" not in request.headers.get("content-type", ""):
        return None
    try:
        orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        return f"the request body is not JSON ({exc}); send the JSON the provider's API takes"
    return None


async def proxy(request: Request) -> Response:
    """``ANY /c/{name}/v1/…``: the provider's answer, from the cassette or the upstream."""
    decks: Decks = request.app.state.decks
    config = decks.config
    try:
        name, path = split_target(request.path_params["name"])
        fault_header = request.headers.get(HEADER)
        fault = parse_header(fault_header) if fault_header is not None else None
        body = await read_body(request, config.max_body)
        if body is None:
            return error(413, "faultdeck_too_large", f"request body over {config.max_body} bytes")
        unreadable = not_json(request, body)
        if unreadable is not None:
            return error(400, "faultdeck_bad_request", unreadable)
        client = await decks.client(name)
    except NameRefused as exc:
        return error(exc.status, "faultdeck_bad_name", exc.reason)
    except FaultdeckError as exc:
        return _opening_error(exc)
    upstream = (config.upstream or "http://upstream.invalid").rstrip("/")
    query = request.url.query
    outgoing = client.build_request(
        request.method,
        f"{upstream}{path}" + (f"?{query}" if query else ""),
        headers=[(k, v) for k, v in request.headers.items() if _forwarded(k)],
        content=body,
    )
    try:
        with request_fault(fault):
            answer = await client.send(outgoing, stream=True)
    except ReplayMiss as exc:
        return error(404, "faultdeck_replay_miss", str(exc), {"x-should-retry": "false"})
    except _UNREACHED as exc:
        return error(502, "faultdeck_upstream_unreachable", f"{upstream}: {exc}")
    except (httpx.TransportError, ProcessKilled):
        return Relayed(None)  # a timeout, a reset, a crash: the connection drops
    except FaultdeckError as exc:
        return _opening_error(exc)
    return Relayed(answer, request.method)


def _forwarded(header: str) -> bool:
    lower = header.lower()
    return lower not in _NOT_FORWARDED and not lower.startswith("x-faultdeck-")


class Relayed(Response):
    """The upstream's (or the cassette's) answer relayed as the transport gives it: its
    status, its headers as their bytes (but those of one hop), its body as bytes, never
    re-encoded. A stream (SSE or not) goes chunk by chunk as the transport yields it, its
    bytes raw, with the ``content-encoding`` and ``content-length`` they came with. A body
    the transport made whole (a replay, an answer it read) goes as httpx decoded it, with
    its own length. ``None``, or a stream that breaks, drops the connection before the
    answer is complete, as a reset would.

    Args:
        answer: the transport's response, sent with ``stream=True`` and not read yet.
        method: the request's method: a ``HEAD`` answer keeps the length it was given.
    """

    def __init__(self, answer: httpx.Response | None, method: str = "GET") -> None:
        self.answer = answer
        self.method = method
        self.status_code = 200 if answer is None else answer.status_code
        self.background = None
        self.raw_headers = (
            []
            if answer is None
            else [
                (name.lower(), value)
                for name, value in answer.headers.raw
                if name.lower() not in _HOP
            ]
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        answer = self.answer
        if answer is None:
            await send({"type": "http.response.start", "status": 200, "headers": []})
            return
        try:
            headers = list(self.raw_headers)
            # A response made from bytes (a replay, a live answer read whole) was read as
            # it was made; a stream was not, and is relayed as it comes.
            if answer.is_stream_consumed:
                content = await answer.aread()
                headers = [pair for pair in headers if pair[0] not in _WHOLE]
                headers.extend(self._length(answer, content))
                start = {"type": "http.response.start", "status": self.status_code}
                await send({**start, "headers": headers})
                await send({"type": "http.response.body", "body": content})
                return
            await send(
                {"type": "http.response.start", "status": self.status_code, "headers": headers}
            )
            async for chunk in answer.aiter_raw():
                if chunk:
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
        except httpx.TransportError:
            return  # the stream broke off (a cut, a reset): the connection drops with it
        finally:
            await answer.aclose()
        await send({"type": "http.response.body", "body": b""})

    def _length(self, answer: httpx.Response, content: bytes) -> list[tuple[bytes, bytes]]:
        """The ``content-length`` to send with a body held whole: its own, but none for a
        status that has no body, and the one the answer carries for a ``HEAD``."""
        if self.status_code in _NO_BODY or self.status_code < 200:
            return []
        if self.method == "HEAD":
            return [
                (b"content-length", v)
                for k, v in answer.headers.raw
                if k.lower() == b"content-length"
            ]
        return [(b"content-length", b"%d" % len(content))]
