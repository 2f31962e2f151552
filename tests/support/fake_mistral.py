"""A local fake Mistral API: ``POST /v1/chat/completions`` and ``/v1/fim/completions`` as
Mistral answers them.

The same script as the fake upstream's (a tool offered -> a call of ``get_weather`` with
``{"city": "Paris"}``; a tool result ``R`` -> ``"It is R in Paris."``), in Mistral's shape:
no ``refusal`` on a message, ids of 9 letters and digits for tool calls, and a streamed tool
call whole in one chunk, the stream ending ``data: [DONE]``. Ids and ``created`` are fresh on
every answer. A request without ``authorization: Bearer`` gets Mistral's 401. A FIM
completion answers ``return a + b`` between the prompt and the suffix, in the same shape.
"""

from __future__ import annotations

import json
import secrets
import string
import time
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tests.support.fake_upstream import (
    TOOL_ARGUMENTS,
    _chat_reply,
    _json_body,
    _sse_stream,
    _stream_delay,
    _words,
)

_ALNUM = string.ascii_letters + string.digits


def _id(n: int) -> str:
    return "".join(secrets.choice(_ALNUM) for _ in range(n))


def _usage(body: dict[str, Any], text: str) -> dict[str, int]:
    prompt = max(1, len(json.dumps(body.get("messages") or []).split()))
    completion = max(1, len(text.split()))
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


FIM_TEXT = "    return a + b"


async def chat(request: Request) -> Response:
    if not request.headers.get("authorization", "").startswith("Bearer "):
        return JSONResponse({"detail": "Unauthorized"}, status_code=401)
    body = await _json_body(request)
    fim = request.url.path.endswith("/fim/completions")
    text, tool = (FIM_TEXT, None) if fim else _chat_reply(body)
    head = {
        "id": _id(32).lower(),
        "object": "chat.completion",
        "model": str(body.get("model", "mistral-small-latest")),
        "created": int(time.time()),
    }
    calls = None
    if tool is not None:
        function = {"name": tool, "arguments": json.dumps(TOOL_ARGUMENTS)}
        calls = [{"id": _id(9), "type": "function", "function": function, "index": 0}]
    finish = "tool_calls" if calls else "stop"
    if not body.get("stream"):
        message = {"role": "assistant", "content": text or "", "tool_calls": calls, "prefix": False}
        choice = {"index": 0, "message": message, "finish_reason": finish}
        usage = _usage(body, text or "")
        return JSONResponse({**head, "usage": usage, "choices": [choice]})

    def chunk(delta: dict[str, Any], finish: str | None = None, **more: Any) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        data = {**head, "object": "chat.completion.chunk", "choices": [choice], **more}
        return f"data: {json.dumps(data, separators=(',', ':'))}\n\n"

    events = [chunk({"role": "assistant", "content": ""})]
    if calls:
        events.append(chunk({"tool_calls": calls}))
    else:
        events += [chunk({"content": word}) for word in _words(text or "")]
    events.append(chunk({"content": ""}, finish, usage=_usage(body, text or "")))
    events.append("data: [DONE]\n\n")
    return _sse_stream(events, _stream_delay(request), {})


def create_app() -> Starlette:
    """The fake Mistral app."""
    app = Starlette(
        routes=[
            Route("/v1/chat/completions", chat, methods=["POST"]),
            Route("/v1/fim/completions", chat, methods=["POST"]),
        ]
    )
    app.state.requests = []
    app.state.stream_delay = None
    return app
