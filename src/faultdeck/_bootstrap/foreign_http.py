"""The proxy's HTTP side, for a program that is not Python (``foreign``): each request
the program sends is relayed through the deck's transport, and its answer relayed back.

A request's framing is the proxy's own: hop-by-hop headers go no further, and a body comes
by its length or in chunks. An answer made from bytes (a replay, a live answer read whole)
goes as httpx decoded it, with its own length; a stream goes as it comes, chunk by chunk,
its bytes raw. An answer that never came drops the connection, as the upstream would have.
Imported only when such a program runs: a Python program needs none of http.server.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Set
from contextlib import AbstractContextManager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol

import httpx2
import orjson

from .._base.errors import FaultdeckError, ProcessKilled, ReplayMiss


class Served(Protocol):
    """What the proxy asks of the deck it serves (``foreign.Served``)."""

    routes: Mapping[str, str]
    client: httpx2.Client

    def target(self, path: str) -> str | None: ...
    def relaying(self) -> AbstractContextManager[None]: ...
    def kill(self) -> None: ...


# Headers of one hop (or made again for the next), never passed on either way.
_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    }
)
_NOT_FORWARDED = _HOP | {"host", "content-length", "expect"}
# A body relayed whole is sent as httpx decoded it, with its own length; a stream keeps its
# encoding (its bytes go raw) but not its length (it goes in chunks).
_WHOLE = frozenset({"content-encoding", "content-length"})
_RECHUNKED = frozenset({"content-length"})
_CHUNKED = (b"transfer-encoding", b"chunked")
_NO_BODY = frozenset({204, 304})


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, served: Served) -> None:
        super().__init__(("127.0.0.1", 0), _Relay)
        self.served = served


def proxy(served: Served) -> ThreadingHTTPServer:
    """A server on 127.0.0.1, on a free port, that relays each request through ``served``
    (not serving yet: ``serve_forever`` does)."""
    return _Server(served)


class _Relay(BaseHTTPRequestHandler):
    """One connection from the program: each request on it relayed through the deck."""

    protocol_version = "HTTP/1.1"  # every SDK speaks it: keep-alive, and chunks both ways
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Say nothing per request: the report says what was called."""

    def relay(self) -> None:
        """Answer the request through the deck's transport, as its upstream's URL."""
        served = self.server.served
        if (target := served.target(self.path)) is None:
            known = ", ".join(f"/{prefix}/" for prefix in served.routes)
            self._error(404, f"no provider at {self.path}; this proxy serves {known}")
            return
        try:
            body = self._body()
        except ValueError as exc:
            self._error(400, f"unreadable request body: {exc}")
            return
        headers = [(k, v) for k, v in self.headers.items() if k.lower() not in _NOT_FORWARDED]
        request = httpx2.Request(self.command, target, headers=headers, content=body)
        request.extensions = {"timeout": served.client.timeout.as_dict()}
        with served.relaying():
            try:
                answer = served.client.send(request, stream=True)
            except ReplayMiss as exc:
                self._error(404, str(exc))
            except (httpx2.TransportError, ProcessKilled) as exc:
                # No answer (unreachable, a timeout, a reset, a crash): the connection drops,
                # as it would have for the program talking to the upstream itself.
                self.close_connection = True
                if isinstance(exc, ProcessKilled):
                    served.kill()
            except FaultdeckError as exc:
                self._error(500, str(exc))
            else:
                self._answer(answer)

    def _body(self) -> bytes | None:
        """The request's body: by its length, or its chunks; ``None`` when it has none."""
        if "chunked" in self.headers.get("transfer-encoding", "").lower():
            pieces = []
            while size := int(self.rfile.readline(1024).split(b";")[0].strip() or b"0", 16):
                pieces.append(self.rfile.read(size))
                self.rfile.readline(1024)
            while self.rfile.readline(1024).strip():  # trailers, then the blank line
                pass
            return b"".join(pieces)
        length = self.headers.get("content-length")
        if length is not None and not length.strip().isdigit():
            raise ValueError(f"content-length {length!r}")
        return None if length is None else self.rfile.read(int(length))

    def _answer(self, answer: httpx2.Response) -> None:
        status, reason = answer.status_code, answer.reason_phrase
        head = _without(answer.headers.raw, _HOP)
        bodiless = self.command == "HEAD" or status in _NO_BODY or status < 200
        try:
            if answer.is_stream_consumed or bodiless:
                # Made from bytes (a replay, an answer read whole): sent with its own length.
                content = answer.read()  # to its end: only then is a live answer recorded
                if not bodiless:
                    head = [*_without(head, _WHOLE), (b"content-length", b"%d" % len(content))]
                self._head(status, reason, head)
                self.wfile.write(b"" if bodiless else content)
                return
            # A stream goes as it comes, in chunks of its own, whatever length it said: its
            # end reaches the program only once the transport, past its last piece, stored it.
            self._head(status, reason, [*_without(head, _RECHUNKED), _CHUNKED])
            for chunk in answer.iter_raw():
                if chunk:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            self.wfile.write(b"0\r\n\r\n")
        except (httpx2.TransportError, OSError):
            self.close_connection = True  # the stream broke off, or the program left
        finally:
            answer.close()

    def _head(self, status: int, reason: str, headers: list[tuple[bytes, bytes]]) -> None:
        lines = [b"HTTP/1.1 %d %s\r\n" % (status, reason.encode("latin-1", "replace"))]
        lines += [name + b": " + value + b"\r\n" for name, value in headers]
        self.wfile.write(b"".join(lines) + b"\r\n")

    def _error(self, status: int, message: str) -> None:
        """An answer of faultdeck's own, shaped as the providers shape theirs; the SDKs
        are told not to retry it."""
        body = orjson.dumps({"error": {"message": message, "type": "faultdeck", "code": None}})
        length = b"%d" % len(body)
        headers = [(b"content-type", b"application/json"), (b"content-length", length)]
        self._head(status, "faultdeck", [*headers, (b"x-should-retry", b"false")])
        self.wfile.write(body)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = relay


def _without(headers: Iterable[tuple[bytes, bytes]], names: Set[str]) -> list[tuple[bytes, bytes]]:
    return [(k, v) for k, v in headers if k.decode("latin-1").lower() not in names]
