"""The fake model's HTTP: one handler for the three APIs, whole answers and streams.

HTTP/1.1 with keep-alive, as the SDKs' clients expect: a whole answer carries its length, a
stream is sent chunked, an event a chunk, so a client's connection stays open for its next
request.
"""

from __future__ import annotations

from http.server import BaseHTTPRequestHandler
from typing import Any

import orjson

from . import _wire
from ._script import Asked, answer, asked_chat, asked_responses

_ROUTES = "the fake answers POST …/chat/completions, …/responses, …/messages, GET …/models"


class Handler(BaseHTTPRequestHandler):
    """One connection's requests to the fake model (``self.server`` holds the script)."""

    protocol_version = "HTTP/1.1"
    server_version = "faultdeck-fake"

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: a request is not news."""

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            model = {"id": "fake-model", "object": "model", "created": 0, "owned_by": "faultdeck"}
            self._json(200, {"object": "list", "data": [model]})
        else:
            self._error(404, f"no route GET {self.path}; {_ROUTES}")

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        try:
            body = orjson.loads(raw)
        except orjson.JSONDecodeError:
            self._error(400, "the request body is not JSON")
            return
        if not isinstance(body, dict):
            self._error(400, "the request body is not a JSON object")
            return
        path = self.path.partition("?")[0].rstrip("/")
        seed = raw + path.encode()
        server: Any = self.server
        stream = bool(body.get("stream"))
        if path.endswith("/chat/completions"):
            turn = answer(server.script, asked_chat(body.get("messages") or []))
            if stream:
                self._events(_wire.chat_events(body, turn, seed))
            else:
                self._json(200, _wire.chat(body, turn, seed))
        elif path.endswith("/responses"):
            asked = self._asked_responses(body)
            turn = answer(server.script, asked)
            with server.lock:
                server.responses[_wire.ids(seed, "resp_")[0]] = asked.turn + 1
            if stream:
                self._events(_wire.response_events(body, turn, seed))
            else:
                self._json(200, _wire.response(body, turn, seed))
        elif path.endswith("/messages"):
            turn = answer(server.script, asked_chat(body.get("messages") or []))
            if stream:
                self._events(_wire.message_events(body, turn, seed))
            else:
                self._json(200, _wire.message(body, turn, seed))
        else:
            self._error(404, f"no route POST {self.path}; {_ROUTES}")

    def _asked_responses(self, body: dict[str, Any]) -> Asked:
        server: Any = self.server
        with server.lock:
            earlier = server.responses.get(body.get("previous_response_id"), 0)
        return asked_responses(body.get("input"), earlier)

    def _json(self, status: int, payload: Any) -> None:
        data = orjson.dumps(payload)
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status: int, message: str) -> None:
        self._json(
            status,
            {
                "error": {
                    "message": message,
                    "type": "invalid_request_error",
                    "param": None,
                    "code": None,
                }
            },
        )

    def _events(self, events: list[_wire.Event]) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        for name, data in events:
            text = data if isinstance(data, str) else orjson.dumps(data).decode()
            block = (f"event: {name}\n" if name else "") + f"data: {text}\n\n"
            self._chunk(block.encode())
        self._chunk(b"")

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()
