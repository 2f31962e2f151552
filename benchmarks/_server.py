"""A tiny chat-completions server on 127.0.0.1, and the requests the benchmarks send it.

It answers every POST with the same ~8 KB chat completion, so recordings made through it
hold realistic bodies without any network but the loopback.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import orjson

PATH = "/v1/chat/completions"
REQUEST_HEADERS = {"content-type": "application/json", "authorization": "Bearer bench-not-a-key"}

_PARAGRAPH = (
    "The retry budget bounds how long the loop may wait in all: every backoff and every "
    "Retry-After it honours is taken from the same allowance, and when the allowance is "
    "spent the step degrades instead of waiting again. "
)


def completion() -> bytes:
    """The answer: an OpenAI-shaped chat completion of about 8 KB."""
    content = "\n\n".join(f"{i + 1}. {_PARAGRAPH * 2}" for i in range(17))
    body = {
        "id": "chatcmpl-9x8Yq2ZkT1aB3cD4eF5gH6",
        "object": "chat.completion",
        "created": 1764411948,
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": content,
                    "refusal": None,
                    "tool_calls": [
                        {
                            "id": "call_a1b2c3d4e5f6",
                            "type": "function",
                            "function": {
                                "name": "read_file",
                                "arguments": '{"path": "docs/retry-budget.md"}',
                            },
                        }
                    ],
                },
                "logprobs": None,
                "finish_reason": "tool_calls",
            }
        ],
        "usage": {
            "prompt_tokens": 1412,
            "completion_tokens": 1630,
            "total_tokens": 3042,
            "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
        },
        "service_tier": "default",
        "system_fingerprint": "fp_0ba0d124f1",
    }
    return orjson.dumps(body)


def request_bodies(n: int) -> list[bytes]:
    """``n`` distinct chat requests: each call is its own recording."""
    system = "You are a careful coding agent. Read before you write; cite the file you read."
    return [
        orjson.dumps(
            {
                "model": "gpt-4o-mini",
                "messages": [
                    {"role": "system", "content": system},
                    {"role": "user", "content": f"Call {i}: summarise the retry budget section."},
                ],
                "temperature": 0,
                "max_tokens": 1024,
            }
        )
        for i in range(n)
    ]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, so recording does not reconnect per call
    disable_nagle_algorithm = True  # else headers and body wait on a delayed ACK (~40 ms)
    answer = completion()

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(self.answer)))
        self.end_headers()
        self.wfile.write(self.answer)

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: the benchmark prints its own table."""


@contextmanager
def serving() -> Iterator[str]:
    """Serve on a free port of 127.0.0.1 in a thread; yield the chat-completions URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}{PATH}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
