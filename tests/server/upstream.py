"""A provider that sends more than chat JSON, for the clients that are not Python: the fake
provider's routes (tests/support/fake_upstream.py) and, beside them, bytes that are not
text (a PNG, random octets), JSON gzipped for a client that asks, a redirect, pagination
and cookie headers, a 429, a 204, an upload echo and a slow ``text/plain`` trickle. Every
answer of its own is the same on every request, so what a client gets directly and through
the proxy compare as they are.

A ``Gate`` holds a stream's rest at the upstream until the test, having seen the first
chunk arrive at the client, opens it: a proxy that buffers a stream shows as a first chunk
that arrived only after the rest was sent.
"""

from __future__ import annotations

import asyncio
import gzip
import hashlib
import json
import random
import struct
import threading
import zlib
from collections.abc import AsyncIterator

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tests.support.fake_upstream import create_app

GATE_TIMEOUT = 10.0
"""How long the upstream holds a stream's rest before sending it anyway (only a proxy that
buffers makes it wait that long)."""

GATED = frozenset({"/v1/chat/completions", "/v1/trickle"})
"""The routes whose streams the gate holds after their first chunk."""

TRICKLE = (b"first line\n", b"second line\n", b"third line\n")
HEADERS = {"x-upstream-trace": "trace-7", "cache-control": "max-age=60"}


def png(width: int, height: int, *, seed: int) -> bytes:
    """A real PNG of random pixels (so its bytes are far from UTF-8)."""
    rng = random.Random(seed)
    rows = b"".join(b"\x00" + rng.randbytes(width * 3) for _ in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data)
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    idat = zlib.compress(rows)
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")
    )


PIXELS = png(48, 48, seed=34)
BLOB = b"\xff\xfe\x00" + random.Random(35).randbytes(4093)
"""An ``application/octet-stream`` file: invalid UTF-8 from its first byte."""


class Gate:
    """Holds a stream after its first chunk until ``open`` (or ``GATE_TIMEOUT``)."""

    def __init__(self) -> None:
        self.opened = threading.Event()
        self.released = False
        """Whether the upstream has sent the rest of the stream it held."""

    def arm(self) -> None:
        """Hold the next stream again."""
        self.opened.clear()
        self.released = False

    def open(self) -> None:
        """Let the held stream go on."""
        self.opened.set()

    async def hold(self) -> None:
        await asyncio.to_thread(self.opened.wait, GATE_TIMEOUT)
        self.released = True


class Gated:
    """ASGI middleware: a response on a ``GATED`` route sends its first body chunk, then
    waits for the gate before the next."""

    def __init__(self, app: ASGIApp, gate: Gate) -> None:
        self.app = app
        self.gate = gate

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] not in GATED:
            await self.app(scope, receive, send)
            return
        sent = 0

        async def held(message: Message) -> None:
            nonlocal sent
            if message["type"] == "http.response.body" and message.get("body"):
                if sent == 1:
                    await self.gate.hold()
                sent += 1
            await send(message)

        await self.app(scope, receive, held)


async def file_content(request: Request) -> Response:
    disposition = 'attachment; filename="blob.bin"'
    headers = {**HEADERS, "etag": '"blob-v1"', "content-disposition": disposition}
    return Response(BLOB, media_type="application/octet-stream", headers=headers)


async def busy(request: Request) -> Response:
    body = {"error": {"message": "slow down", "type": "requests", "code": "rate_limit_exceeded"}}
    headers = {"retry-after": "7", "x-ratelimit-remaining-requests": "0", **HEADERS}
    return JSONResponse(body, status_code=429, headers=headers)


async def pixel(request: Request) -> Response:
    headers = {**HEADERS, "etag": '"pixel-v1"', "last-modified": "Tue, 02 Jan 2024 03:04:05 GMT"}
    return Response(PIXELS, media_type="image/png", headers=headers)


async def moved(request: Request) -> Response:
    return Response(status_code=302, headers={"location": "/v1/static/pixel.png", **HEADERS})


async def items(request: Request) -> Response:
    link = '</v1/items?after=item_2>; rel="next"'
    response = JSONResponse(
        {"data": [{"id": "item_1"}, {"id": "item_2"}], "has_more": True},
        headers={"link": link, "x-total-count": "3", **HEADERS},
    )
    response.set_cookie("theme", "dark", path="/")
    response.set_cookie("lang", "fr", path="/", samesite="lax")
    return response


async def deleted(request: Request) -> Response:
    return Response(status_code=204, headers={"x-deleted": request.path_params["item"]})


async def uploads(request: Request) -> Response:
    body = await request.body()
    digest = hashlib.sha256(body).hexdigest()
    return JSONResponse({"size": len(body), "sha256": digest, "head": body[:4].hex()})


SQUEEZED = {"data": [{"id": f"item_{n}", "text": "same words again " * 4} for n in range(20)]}


async def squeezed(request: Request) -> Response:
    """JSON, gzipped for a client that accepts it."""
    body = json.dumps(SQUEEZED).encode()
    headers = {"vary": "Accept-Encoding", **HEADERS}
    if "gzip" in request.headers.get("accept-encoding", ""):
        body = gzip.compress(body, mtime=0)
        headers["content-encoding"] = "gzip"
    return Response(body, media_type="application/json", headers=headers)


async def trickle(request: Request) -> Response:
    async def pieces() -> AsyncIterator[bytes]:
        for piece in TRICKLE:
            yield piece

    return StreamingResponse(pieces(), media_type="text/plain", headers={"x-trickle": "yes"})


def create_world(gate: Gate) -> Starlette:
    """The provider: its own routes first, then the fake provider's."""
    return Starlette(
        routes=[
            Route("/v1/files/{file}/content", file_content, methods=["GET"]),
            Route("/v1/models/busy-model", busy, methods=["GET"]),
            Route("/v1/static/pixel.png", pixel, methods=["GET"]),
            Route("/v1/moved", moved, methods=["GET"]),
            Route("/v1/items", items, methods=["GET"]),
            Route("/v1/items/{item}", deleted, methods=["DELETE"]),
            Route("/v1/uploads", uploads, methods=["POST"]),
            Route("/v1/squeezed", squeezed, methods=["GET"]),
            Route("/v1/trickle", trickle, methods=["GET"]),
            Mount("", app=create_app()),
        ],
        middleware=[Middleware(Gated, gate=gate)],
    )
