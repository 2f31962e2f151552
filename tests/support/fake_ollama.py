"""A local fake Ollama server for faultdeck's provider tests.

Speaks enough of Ollama's native API (``POST /api/chat``, ``/api/generate``, ``/api/embed``)
for the real ``ollama`` SDK to parse its answers, and its OpenAI-compatible
``/v1/chat/completions`` (the fake upstream's). A native answer streams unless the request
says ``"stream": false``, as newline-delimited JSON (``application/x-ndjson``): one object a
line, the last with ``"done": true``. ``created_at`` is fresh on every object (a recorder has
to normalize it). The script is the fake upstream's: a tool result ``R`` -> ``"It is R in
Paris."``; tools offered -> a call of ``get_weather`` with ``{"city": "Paris"}``; else
``"Hello from the fake upstream."``.

A last message ``echo: T`` is answered ``T`` in pieces of three characters (a secret in it
split across lines). Run it with ``Upstream(app=create_app())``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from tests.support.fake_upstream import (
    OPENAI_TOOLS,
    TOOL_ARGUMENTS,
    _chat_reply,
    _record,
    _stream_delay,
    _words,
    chat_completions,
)

NDJSON = "application/x-ndjson"
TIMINGS = {
    "total_duration": 5_000_000,
    "load_duration": 1_000_000,
    "prompt_eval_count": 12,
    "prompt_eval_duration": 1_000_000,
    "eval_count": 6,
    "eval_duration": 3_000_000,
}
OLLAMA_TOOLS = OPENAI_TOOLS  # Ollama takes tools in OpenAI's shape


def _created_at() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _lines(objects: list[dict[str, Any]], delay: float) -> StreamingResponse:
    async def gen() -> AsyncIterator[bytes]:
        for i, obj in enumerate(objects):
            if i and delay > 0:
                await asyncio.sleep(delay)
            yield (json.dumps({**obj, "created_at": _created_at()}) + "\n").encode()

    return StreamingResponse(gen(), media_type=NDJSON)


def _thirds(text: str) -> list[str]:
    return [text[i : i + 3] for i in range(0, len(text), 3)]


def _streams(body: dict[str, Any]) -> bool:
    return body.get("stream", True) is not False


async def chat(request: Request) -> Response:
    body = await _record(request) or {}
    model = body.get("model", "llama-fake")
    text, tool = _chat_reply(body)
    last = (body.get("messages") or [{}])[-1].get("content") or ""
    echoed = last.startswith("echo: ")
    if echoed:
        text, tool = last.removeprefix("echo: "), None
    done = {"model": model, "done": True, "done_reason": "stop", **TIMINGS}
    calls = [{"function": {"name": tool, "arguments": TOOL_ARGUMENTS}}] if tool else None
    if not _streams(body):
        message: dict[str, Any] = {"role": "assistant", "content": text or ""}
        if calls:
            message["tool_calls"] = calls
        return JSONResponse({**done, "created_at": _created_at(), "message": message})
    objects: list[dict[str, Any]] = [
        {"model": model, "message": {"role": "assistant", "content": w}, "done": False}
        for w in (_thirds(text or "") if echoed else _words(text or ""))
    ]
    if calls:
        message = {"role": "assistant", "content": "", "tool_calls": calls}
        objects.append({"model": model, "message": message, "done": False})
    objects.append({**done, "message": {"role": "assistant", "content": ""}})
    return _lines(objects, _stream_delay(request))


async def generate(request: Request) -> Response:
    body = await _record(request) or {}
    model = body.get("model", "llama-fake")
    text = f"You said: {body.get('prompt', '')}"
    done = {"model": model, "done": True, "done_reason": "stop", **TIMINGS}
    if not _streams(body):
        return JSONResponse({**done, "created_at": _created_at(), "response": text})
    objects = [{"model": model, "response": w, "done": False} for w in _words(text)]
    objects.append({**done, "response": ""})
    return _lines(objects, _stream_delay(request))


async def embed(request: Request) -> Response:
    body = await _record(request) or {}
    inputs = body.get("input", "")
    count = len(inputs) if isinstance(inputs, list) else 1
    vectors = [[0.25, -0.5, float(i)] for i in range(count)]
    return JSONResponse({"model": body.get("model"), "embeddings": vectors, **TIMINGS})


def create_app(*, stream_delay: float | None = None) -> Starlette:
    """The fake Ollama app."""
    app = Starlette(
        routes=[
            Route("/api/chat", chat, methods=["POST"]),
            Route("/api/generate", generate, methods=["POST"]),
            Route("/api/embed", embed, methods=["POST"]),
            Route("/v1/chat/completions", chat_completions, methods=["POST"]),
        ]
    )
    app.state.requests = []
    app.state.stream_delay = stream_delay
    return app
