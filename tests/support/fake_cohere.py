"""A local fake Cohere v2 server for faultdeck's provider tests.

Speaks enough of Cohere's v2 API (``POST /v2/chat``, ``/v2/embed``) for the real ``cohere``
SDK (``ClientV2``) to parse its answers. ``/v2/chat`` answers one JSON object, or with
``"stream": true`` server-sent events: ``message-start``, ``content-start`` /
``content-delta`` / ``content-end`` for text, ``tool-plan-delta``, ``tool-call-start`` /
``tool-call-delta`` / ``tool-call-end`` for a tool call, and ``message-end`` with the
finish reason and usage. Ids (the message's, the tool call's) are fresh on every answer.
The script is the fake upstream's: a tool result ``R`` -> ``"It is R in Paris."``; tools
offered -> a call of ``get_weather`` with ``{"city": "Paris"}``; else ``"Hello from the
fake upstream."``.

Run it with ``Upstream(app=create_app())``.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tests.support.fake_upstream import (
    OPENAI_TOOLS,
    TOOL_ARGUMENTS,
    _chat_reply,
    _hex,
    _json_pieces,
    _record,
    _sse_stream,
    _stream_delay,
    _words,
)

PLAN = "I will look up the weather."
COHERE_TOOLS = OPENAI_TOOLS  # Cohere v2 takes tools in OpenAI's shape


def _usage() -> dict[str, Any]:
    return {
        "billed_units": {"input_tokens": 12, "output_tokens": 6},
        "tokens": {"input_tokens": 30, "output_tokens": 6},
    }


def _event(name: str, data: dict[str, Any]) -> str:
    return f"event: {name}\ndata: {json.dumps({'type': name, **data})}\n\n"


async def chat(request: Request) -> Response:
    body = await _record(request) or {}
    text, tool = _chat_reply(body)
    message_id = _hex()
    call_id = f"{tool}_{_hex()[:12]}"
    arguments = json.dumps(TOOL_ARGUMENTS)
    finish = "TOOL_CALL" if tool else "COMPLETE"
    if not body.get("stream"):
        message: dict[str, Any] = {"role": "assistant"}
        if tool:
            function = {"name": tool, "arguments": arguments}
            message["tool_plan"] = PLAN
            message["tool_calls"] = [{"id": call_id, "type": "function", "function": function}]
        else:
            message["content"] = [{"type": "text", "text": text}]
        answer = {"id": message_id, "finish_reason": finish, "message": message, "usage": _usage()}
        return JSONResponse(answer)
    start = {"role": "assistant", "content": [], "tool_plan": "", "tool_calls": [], "citations": []}
    events = [_event("message-start", {"id": message_id, "delta": {"message": start}})]
    if tool:
        events.append(_event("tool-plan-delta", {"delta": {"message": {"tool_plan": PLAN}}}))
        function = {"name": tool, "arguments": ""}
        call = {"id": call_id, "type": "function", "function": function}
        events.append(
            _event("tool-call-start", {"index": 0, "delta": {"message": {"tool_calls": call}}})
        )
        for piece in _json_pieces(arguments):
            delta: dict[str, Any] = {"message": {"tool_calls": {"function": {"arguments": piece}}}}
            events.append(_event("tool-call-delta", {"index": 0, "delta": delta}))
        events.append(_event("tool-call-end", {"index": 0}))
    else:
        content: dict[str, Any] = {"message": {"content": {"type": "text", "text": ""}}}
        events.append(_event("content-start", {"index": 0, "delta": content}))
        for word in _words(text or ""):
            delta = {"message": {"content": {"text": word}}}
            events.append(_event("content-delta", {"index": 0, "delta": delta}))
        events.append(_event("content-end", {"index": 0}))
    end = {"finish_reason": finish, "usage": _usage()}
    events.append(_event("message-end", {"delta": end}))
    return _sse_stream(events, _stream_delay(request), {"x-request-id": _hex()})


async def embed(request: Request) -> Response:
    body = await _record(request) or {}
    texts = body.get("texts") or []
    vectors = [[0.25, -0.5, float(i)] for i in range(len(texts))]
    answer = {
        "id": _hex(),
        "embeddings": {"float": vectors},
        "texts": texts,
        "meta": {"api_version": {"version": "2"}},
        "response_type": "embeddings_by_type",
    }
    return JSONResponse(answer)


def create_app(*, stream_delay: float | None = None) -> Starlette:
    """The fake Cohere app."""
    app = Starlette(
        routes=[
            Route("/v2/chat", chat, methods=["POST"]),
            Route("/v2/embed", embed, methods=["POST"]),
        ]
    )
    app.state.requests = []
    app.state.stream_delay = stream_delay
    return app
