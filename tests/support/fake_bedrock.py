"""A local fake of the AWS Bedrock runtime for faultdeck's provider tests.

A Starlette app that speaks enough of ``bedrock-runtime`` for boto3's client to parse its
answers: ``POST /model/{modelId}/converse`` (JSON), ``/converse-stream`` (AWS's binary
event stream, ``application/vnd.amazon.eventstream``: messageStart, contentBlockStart,
contentBlockDelta, contentBlockStop, messageStop, metadata), ``/invoke`` (an Anthropic
Messages body) and ``/invoke-with-response-stream`` (``chunk`` events carrying base64
JSON). Its event-stream encoder is its own (a few lines of ``struct`` and ``binascii``),
not faultdeck's, so a test shows faultdeck's framing against an independent one and
botocore's decoder.

Script: the last message carries a ``toolResult`` R -> text ``"It is R in Paris."``; else
tools offered -> a ``toolUse`` of ``get_weather`` with ``{"city": "Paris"}``; else text
``"Hello from the fake Bedrock."``. Request ids (``x-amzn-requestid``), tool-use ids and
each event's ``p`` padding (AWS pads every event's JSON to hide its length) are fresh on
every response; latencies vary.

What reached it is kept on the app (``app.state.requests``: method, path, headers, body).
Run it with ``tests.support.fake_upstream.Upstream(app=create_app())``.
"""

from __future__ import annotations

import base64
import binascii
import json
import random
import string
import struct
import uuid
from collections.abc import Iterator
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

DEFAULT_TEXT = "Hello from the fake Bedrock."
TOOL_NAME = "get_weather"
TOOL_ARGUMENTS: dict[str, Any] = {"city": "Paris"}
EVENTSTREAM = "application/vnd.amazon.eventstream"
TOOL_CONFIG: dict[str, Any] = {
    "tools": [
        {
            "toolSpec": {
                "name": TOOL_NAME,
                "description": "The weather in a city.",
                "inputSchema": {
                    "json": {
                        "type": "object",
                        "properties": {"city": {"type": "string"}},
                        "required": ["city"],
                    }
                },
            }
        }
    ]
}


def frame(headers: dict[str, str], payload: bytes) -> bytes:
    """One event-stream message, string headers only."""
    head = b""
    for name, value in headers.items():
        raw, text = name.encode(), value.encode()
        head += struct.pack(">B", len(raw)) + raw + struct.pack(">BH", 7, len(text)) + text
    prelude = struct.pack(">II", 12 + len(head) + len(payload) + 4, len(head))
    prelude += struct.pack(">I", binascii.crc32(prelude))
    body = prelude + head + payload
    return body + struct.pack(">I", binascii.crc32(body))


def event(name: str, data: dict[str, Any]) -> bytes:
    """An ``event`` message of JSON ``data``, padded as AWS pads it."""
    padded = {**data, "p": _padding()}
    headers = {":event-type": name, ":content-type": "application/json", ":message-type": "event"}
    return frame(headers, json.dumps(padded, separators=(",", ":")).encode())


def _padding() -> str:
    alphabet = string.ascii_letters + string.digits
    return "".join(random.choices(alphabet, k=random.randint(4, 40)))


def reply_of(body: dict[str, Any]) -> tuple[str, dict[str, Any] | None]:
    """The scripted text, or the tool use, answering a Converse request."""
    messages = body.get("messages") or []
    last = messages[-1] if messages else {}
    for block in last.get("content") or []:
        result = block.get("toolResult") if isinstance(block, dict) else None
        if result is not None:
            parts = result.get("content") or []
            text = "".join(
                p.get("text", "") or json.dumps(p.get("json")) for p in parts if isinstance(p, dict)
            )
            return f"It is {text} in Paris.", None
    if (body.get("toolConfig") or {}).get("tools"):
        return "", {"toolUseId": f"tooluse_{uuid.uuid4().hex[:22]}", "name": TOOL_NAME}
    return DEFAULT_TEXT, None


def _usage(text: str) -> dict[str, int]:
    out = max(1, len(text.split()))
    return {"inputTokens": 12, "outputTokens": out, "totalTokens": 12 + out}


async def _read(request: Request) -> dict[str, Any]:
    raw = await request.body()
    request.app.state.requests.append(
        {
            "method": request.method,
            "path": request.url.path,
            "headers": dict(request.headers),
            "body": raw,
        }
    )
    return json.loads(raw) if raw else {}


def _headers(content_type: str = "application/json") -> dict[str, str]:
    return {"x-amzn-requestid": str(uuid.uuid4()), "content-type": content_type}


async def converse(request: Request) -> Response:
    text, tool = reply_of(await _read(request))
    if tool is not None:
        content: list[dict[str, Any]] = [{"toolUse": {**tool, "input": TOOL_ARGUMENTS}}]
        stop = "tool_use"
    else:
        content, stop = [{"text": text}], "end_turn"
    answer = {
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": stop,
        "usage": _usage(text or "tool"),
        "metrics": {"latencyMs": random.randint(100, 900)},
    }
    return JSONResponse(answer, headers=_headers())


def _converse_events(text: str, tool: dict[str, Any] | None) -> Iterator[bytes]:
    yield event("messageStart", {"role": "assistant"})
    if tool is not None:
        yield event("contentBlockStart", {"contentBlockIndex": 0, "start": {"toolUse": tool}})
        arguments = json.dumps(TOOL_ARGUMENTS)
        for piece in (arguments[:9], arguments[9:]):
            delta = {"toolUse": {"input": piece}}
            yield event("contentBlockDelta", {"contentBlockIndex": 0, "delta": delta})
        stop = "tool_use"
    else:
        for word in text.split(" "):
            piece = word if word == text.split(" ")[0] else " " + word
            yield event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": piece}})
        stop = "end_turn"
    yield event("contentBlockStop", {"contentBlockIndex": 0})
    yield event("messageStop", {"stopReason": stop})
    metrics = {"latencyMs": random.randint(100, 900)}
    yield event("metadata", {"usage": _usage(text or "tool"), "metrics": metrics})


async def converse_stream(request: Request) -> Response:
    text, tool = reply_of(await _read(request))
    return StreamingResponse(_converse_events(text, tool), headers=_headers(EVENTSTREAM))


def _claude_message(text: str) -> dict[str, Any]:
    return {
        "id": f"msg_bdrk_{uuid.uuid4().hex[:24]}",
        "type": "message",
        "role": "assistant",
        "model": "claude-x",
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 12, "output_tokens": 5},
    }


async def invoke(request: Request) -> Response:
    await _read(request)
    return JSONResponse(_claude_message(DEFAULT_TEXT), headers=_headers())


def _chunks() -> Iterator[bytes]:
    message = _claude_message("")
    events = [
        {"type": "message_start", "message": message},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}},
        {"type": "message_stop"},
    ]
    for one in events:
        encoded = base64.b64encode(json.dumps(one).encode()).decode()
        yield event("chunk", {"bytes": encoded})


async def invoke_stream(request: Request) -> Response:
    await _read(request)
    return StreamingResponse(_chunks(), headers=_headers(EVENTSTREAM))


def create_app() -> Starlette:
    """The fake Bedrock runtime."""
    app = Starlette(
        routes=[
            Route("/model/{model_id:path}/converse", converse, methods=["POST"]),
            Route("/model/{model_id:path}/converse-stream", converse_stream, methods=["POST"]),
            Route("/model/{model_id:path}/invoke", invoke, methods=["POST"]),
            Route(
                "/model/{model_id:path}/invoke-with-response-stream",
                invoke_stream,
                methods=["POST"],
            ),
        ]
    )
    app.state.requests = []
    return app
