"""A local fake LLM upstream for faultdeck's HTTP tests.

A Starlette app that speaks just enough of the OpenAI (Chat Completions, Responses) and
Anthropic (Messages) HTTP APIs for the real ``openai`` and ``anthropic`` SDKs to parse its
answers, strict validation included. Every reply is scripted by the conversation and is
deterministic, EXCEPT ids (``chatcmpl-…``, ``call_…``, ``resp_…``, ``msg_…``, ``toolu_…``,
request-id headers) and timestamps (``created``, ``created_at``), which are fresh on every
response: a recorder has to normalize them.

Script (OpenAI Chat Completions and Anthropic Messages alike):

* the last message carries a tool result ``R`` -> text ``"It is R in Paris."``;
* otherwise, tools offered -> a call of ``get_weather`` (or of the first tool when none has
  that name) with arguments ``{"city": "Paris"}``;
* otherwise -> text ``"Hello from the fake upstream."``.

The Responses API always answers ``"Hello from the fake upstream."``.

What reached the upstream is kept on the app (``app.state.requests``), not in the module.
:class:`Upstream` runs the app under uvicorn on 127.0.0.1 in a background thread.
"""

from __future__ import annotations

import asyncio
import json
import re
import socket
import threading
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from types import TracebackType
from typing import Any, Literal, TypedDict, cast

import uvicorn
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

__all__ = [
    "DEFAULT_TEXT",
    "STREAM_DELAY",
    "TOOL_ARGUMENTS",
    "RecordedRequest",
    "Upstream",
    "create_app",
    "tool_result_text",
]

STREAM_DELAY: float = 0.005
"""Seconds slept between two streamed chunks/events (read at stream time)."""

DEFAULT_TEXT = "Hello from the fake upstream."
TOOL_NAME = "get_weather"
TOOL_ARGUMENTS: dict[str, Any] = {"city": "Paris"}
MODELS_CREATED = 1_700_000_000  # a model's creation date is a fact, not a response timestamp

JSONDict = dict[str, Any]


class RecordedRequest(TypedDict):
    method: str
    path: str
    query: str
    headers: dict[str, str]
    json: Any


# --------------------------------------------------------------------------- helpers


def tool_result_text(result: str) -> str:
    """The scripted reply once a tool returned ``result``."""
    return f"It is {result} in Paris."


def _hex() -> str:
    return uuid.uuid4().hex


def _now() -> int:
    return int(time.time())


def _words(text: str) -> list[str]:
    """Split ``text`` into pieces that concatenate back to it (leading spaces kept)."""
    return re.findall(r"\s*\S+\s*$|\s*\S+", text) or ([text] if text else [])


def _json_pieces(payload: str) -> list[str]:
    """Split a JSON string into 3 pieces (fewer if it is short)."""
    if len(payload) < 3:
        return [payload]
    third = len(payload) // 3
    return [payload[:third], payload[third : 2 * third], payload[2 * third :]]


def _count_tokens(value: object) -> int:
    """A deterministic, rough token count."""
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return max(1, len(text.split()))


def _text_of(content: object) -> str:
    """Text of a message/tool-result content: a string or a list of text blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts: list[str] = []
        for block in content:
            if isinstance(block, dict) and isinstance(block.get("text"), str):
                parts.append(block["text"])
            elif isinstance(block, str):
                parts.append(block)
        return "".join(parts)
    return "" if content is None else str(content)


def _pick_tool(names: list[str]) -> str | None:
    if not names:
        return None
    return TOOL_NAME if TOOL_NAME in names else names[0]


def _stream_delay(request: Request) -> float:
    delay = getattr(request.app.state, "stream_delay", None)
    return STREAM_DELAY if delay is None else float(delay)


def _error(status: int, message: str, kind: str) -> JSONResponse:
    return JSONResponse(
        {"type": "error", "error": {"message": message, "type": kind, "code": None}},
        status_code=status,
    )


async def _record(request: Request) -> Any:
    """Append the request to ``app.state.requests``; return its JSON body (or None)."""
    raw = await request.body()
    body: Any = None
    if raw:
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
    entry: RecordedRequest = {
        "method": request.method,
        "path": request.url.path,
        "query": request.url.query,
        "headers": {key.lower(): value for key, value in request.headers.items()},
        "json": body,
    }
    request.app.state.requests.append(entry)
    return body


async def _json_body(request: Request) -> JSONDict:
    body = await _record(request)
    if not isinstance(body, dict):
        raise HTTPException(400, "request body must be a JSON object")
    return cast(JSONDict, body)


def _sse_stream(events: list[str], delay: float, headers: dict[str, str]) -> StreamingResponse:
    async def gen() -> AsyncIterator[bytes]:
        for i, event in enumerate(events):
            if i and delay > 0:
                await asyncio.sleep(delay)
            yield event.encode("utf-8")

    return StreamingResponse(
        gen(),
        media_type="text/event-stream",
        headers={"cache-control": "no-cache", **headers},
    )


def _dumps(obj: object) -> str:
    return json.dumps(obj, separators=(",", ":"))


# ------------------------------------------------------------ OpenAI Chat Completions


def _chat_reply(body: JSONDict) -> tuple[str | None, str | None]:
    """(text, tool_name): exactly one is set."""
    messages = body.get("messages") or []
    last = messages[-1] if messages and isinstance(messages[-1], dict) else {}
    if last.get("role") == "tool":
        return tool_result_text(_text_of(last.get("content"))), None
    names = [
        str((tool.get("function") or {}).get("name", ""))
        for tool in body.get("tools") or []
        if isinstance(tool, dict)
    ]
    tool = _pick_tool(names)
    if tool is not None:
        return None, tool
    return DEFAULT_TEXT, None


def _chat_usage(body: JSONDict, completion: str) -> JSONDict:
    prompt_tokens = _count_tokens(body.get("messages") or [])
    completion_tokens = _count_tokens(completion)
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": 0,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


async def chat_completions(request: Request) -> Response:
    body = await _json_body(request)
    model = str(body.get("model", "gpt-fake"))
    text, tool = _chat_reply(body)
    completion_id = f"chatcmpl-{_hex()}"
    created = _now()
    arguments = json.dumps(TOOL_ARGUMENTS)
    call_id = f"call_{_hex()[:24]}"
    finish_reason = "stop" if text is not None else "tool_calls"
    headers = {"x-request-id": f"req_{_hex()}"}

    if not body.get("stream"):
        message: JSONDict = {
            "role": "assistant",
            "content": text,
            "refusal": None,
            "annotations": [],
        }
        if tool is not None:
            message["tool_calls"] = [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": tool, "arguments": arguments},
                }
            ]
        payload = {
            "id": completion_id,
            "object": "chat.completion",
            "created": created,
            "model": model,
            "choices": [
                {"index": 0, "message": message, "logprobs": None, "finish_reason": finish_reason}
            ],
            "usage": _chat_usage(body, text if text is not None else arguments),
            "service_tier": "default",
            "system_fingerprint": "fp_fake",
        }
        return JSONResponse(payload, headers=headers)

    def chunk(delta: JSONDict, finish: str | None = None) -> str:
        data = {
            "id": completion_id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "service_tier": "default",
            "system_fingerprint": "fp_fake",
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }
        return f"data: {_dumps(data)}\n\n"

    events = [chunk({"role": "assistant", "content": ""})]
    if text is not None:
        events += [chunk({"content": word}) for word in _words(text)]
    else:
        events.append(
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": call_id,
                            "type": "function",
                            "function": {"name": tool, "arguments": ""},
                        }
                    ]
                }
            )
        )
        events += [
            chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]})
            for piece in _json_pieces(arguments)
        ]
    events.append(chunk({}, finish_reason))
    stream_options = body.get("stream_options") or {}
    if isinstance(stream_options, dict) and stream_options.get("include_usage"):
        usage_chunk = {
            "id": completion_id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "service_tier": "default",
            "system_fingerprint": "fp_fake",
            "choices": [],
            "usage": _chat_usage(body, text if text is not None else arguments),
        }
        events.append(f"data: {_dumps(usage_chunk)}\n\n")
    events.append("data: [DONE]\n\n")
    return _sse_stream(events, _stream_delay(request), headers)


# --------------------------------------------------------------- OpenAI Responses API


def _responses_usage(body: JSONDict, text: str) -> JSONDict:
    input_tokens = _count_tokens(body.get("input") or "")
    output_tokens = _count_tokens(text)
    return {
        "input_tokens": input_tokens,
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens": output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": input_tokens + output_tokens,
    }


def _response_object(
    body: JSONDict,
    response_id: str,
    created_at: int,
    *,
    status: str,
    output: list[JSONDict],
    usage: JSONDict | None,
) -> JSONDict:
    return {
        "id": response_id,
        "object": "response",
        "created_at": created_at,
        "status": status,
        "completed_at": _now() if status == "completed" else None,
        "background": False,
        "error": None,
        "incomplete_details": None,
        "instructions": body.get("instructions"),
        "max_output_tokens": body.get("max_output_tokens"),
        "max_tool_calls": None,
        "model": str(body.get("model", "gpt-fake")),
        "output": output,
        "parallel_tool_calls": True,
        "previous_response_id": body.get("previous_response_id"),
        "reasoning": {"effort": None, "summary": None},
        "service_tier": "default",
        "store": True,
        "temperature": 1.0,
        "text": {"format": {"type": "text"}, "verbosity": "medium"},
        "tool_choice": "auto",
        "tools": [],
        "top_logprobs": 0,
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": usage,
        "user": None,
        "metadata": {},
    }


def _output_text_part(text: str) -> JSONDict:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def _output_message(item_id: str, status: str, content: list[JSONDict]) -> JSONDict:
    return {
        "id": item_id,
        "type": "message",
        "status": status,
        "role": "assistant",
        "content": content,
    }


async def responses(request: Request) -> Response:
    body = await _json_body(request)
    text = DEFAULT_TEXT
    response_id = f"resp_{_hex()}"
    item_id = f"msg_{_hex()}"
    created_at = _now()
    headers = {"x-request-id": f"req_{_hex()}"}
    done_item = _output_message(item_id, "completed", [_output_text_part(text)])

    if not body.get("stream"):
        payload = _response_object(
            body,
            response_id,
            created_at,
            status="completed",
            output=[done_item],
            usage=_responses_usage(body, text),
        )
        return JSONResponse(payload, headers=headers)

    events: list[str] = []

    def emit(kind: str, fields: JSONDict) -> None:
        data = {"type": kind, "sequence_number": len(events), **fields}
        events.append(f"event: {kind}\ndata: {_dumps(data)}\n\n")

    pending = _response_object(
        body, response_id, created_at, status="in_progress", output=[], usage=None
    )
    emit("response.created", {"response": pending})
    emit("response.in_progress", {"response": pending})
    where = {"item_id": item_id, "output_index": 0, "content_index": 0}
    emit(
        "response.output_item.added",
        {"output_index": 0, "item": _output_message(item_id, "in_progress", [])},
    )
    emit("response.content_part.added", {**where, "part": _output_text_part("")})
    for word in _words(text):
        emit("response.output_text.delta", {**where, "delta": word, "logprobs": []})
    emit("response.output_text.done", {**where, "text": text, "logprobs": []})
    emit("response.content_part.done", {**where, "part": _output_text_part(text)})
    emit("response.output_item.done", {"output_index": 0, "item": done_item})
    completed = _response_object(
        body,
        response_id,
        created_at,
        status="completed",
        output=[done_item],
        usage=_responses_usage(body, text),
    )
    emit("response.completed", {"response": completed})
    return _sse_stream(events, _stream_delay(request), headers)


# ---------------------------------------------------------------- Anthropic Messages


def _anthropic_reply(body: JSONDict) -> tuple[str | None, str | None]:
    """(text, tool_name): exactly one is set."""
    messages = body.get("messages") or []
    last = messages[-1] if messages and isinstance(messages[-1], dict) else {}
    content = last.get("content")
    if last.get("role") == "user" and isinstance(content, list):
        for block in content:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                return tool_result_text(_text_of(block.get("content"))), None
    names = [
        str(tool.get("name", "")) for tool in body.get("tools") or [] if isinstance(tool, dict)
    ]
    tool = _pick_tool(names)
    if tool is not None:
        return None, tool
    return DEFAULT_TEXT, None


def _anthropic_usage(input_tokens: int, output_tokens: int) -> JSONDict:
    return {
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "service_tier": "standard",
    }


async def messages(request: Request) -> Response:
    body = await _json_body(request)
    model = str(body.get("model", "claude-fake"))
    text, tool = _anthropic_reply(body)
    message_id = f"msg_{_hex()}"
    tool_id = f"toolu_{_hex()}"
    stop_reason = "end_turn" if text is not None else "tool_use"
    input_tokens = _count_tokens([body.get("system"), body.get("messages") or []])
    arguments = json.dumps(TOOL_ARGUMENTS)
    output_tokens = _count_tokens(text if text is not None else arguments)
    headers = {"request-id": f"req_{_hex()}"}

    def message(content: list[JSONDict], stop: str | None, usage: JSONDict) -> JSONDict:
        return {
            "id": message_id,
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": usage,
        }

    if not body.get("stream"):
        block: JSONDict
        if text is not None:
            block = {"type": "text", "text": text}
        else:
            block = {"type": "tool_use", "id": tool_id, "name": tool, "input": TOOL_ARGUMENTS}
        payload = message([block], stop_reason, _anthropic_usage(input_tokens, output_tokens))
        return JSONResponse(payload, headers=headers)

    events: list[str] = []

    def emit(kind: str, fields: JSONDict) -> None:
        events.append(f"event: {kind}\ndata: {_dumps({'type': kind, **fields})}\n\n")

    emit("message_start", {"message": message([], None, _anthropic_usage(input_tokens, 1))})
    if text is not None:
        start_block: JSONDict = {"type": "text", "text": ""}
        deltas = [{"type": "text_delta", "text": word} for word in _words(text)]
    else:
        start_block = {"type": "tool_use", "id": tool_id, "name": tool, "input": {}}
        deltas = [
            {"type": "input_json_delta", "partial_json": piece} for piece in _json_pieces(arguments)
        ]
    emit("content_block_start", {"index": 0, "content_block": start_block})
    emit("ping", {})
    for delta in deltas:
        emit("content_block_delta", {"index": 0, "delta": delta})
    emit("content_block_stop", {"index": 0})
    emit(
        "message_delta",
        {
            "delta": {"stop_reason": stop_reason, "stop_sequence": None},
            "usage": {"output_tokens": output_tokens},
        },
    )
    emit("message_stop", {})
    return _sse_stream(events, _stream_delay(request), headers)


# ------------------------------------------------------------------- plain endpoints


async def models(request: Request) -> Response:
    await _record(request)
    data = [
        {"id": name, "object": "model", "created": MODELS_CREATED, "owned_by": "faultdeck"}
        for name in ("gpt-fake", "claude-fake")
    ]
    return JSONResponse({"object": "list", "data": data})


async def health(request: Request) -> Response:
    await _record(request)
    return JSONResponse({"ok": True})


async def _http_error(request: Request, exc: Exception) -> Response:
    status = exc.status_code if isinstance(exc, HTTPException) else 500
    detail = exc.detail if isinstance(exc, HTTPException) else "internal error"
    if status in (404, 405):
        await _record(request)  # the endpoints record themselves; unmatched paths do it here
    if status == 404:
        return _error(404, f"Unknown path: {request.method} {request.url.path}", "not_found_error")
    kind = "invalid_request_error" if status < 500 else "api_error"
    return _error(status, str(detail), kind)


def create_app(*, stream_delay: float | None = None) -> Starlette:
    """The fake upstream app. ``stream_delay`` overrides :data:`STREAM_DELAY` for this app."""
    app = Starlette(
        routes=[
            Route("/v1/chat/completions", chat_completions, methods=["POST"]),
            Route("/v1/responses", responses, methods=["POST"]),
            Route("/v1/messages", messages, methods=["POST"]),
            Route("/v1/models", models, methods=["GET"]),
            Route("/health", health, methods=["GET"]),
        ],
        exception_handlers={HTTPException: _http_error},
    )
    app.state.requests = []
    app.state.stream_delay = stream_delay
    return app


# ---------------------------------------------------------------------------- runner


class _ThreadedServer(uvicorn.Server):
    """A uvicorn server that never touches signal handlers (it runs off the main thread)."""

    @contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


class Upstream:
    """Runs the app under uvicorn on 127.0.0.1 on a free port in a background thread."""

    START_TIMEOUT = 10.0
    STOP_TIMEOUT = 10.0

    def __init__(self, *, stream_delay: float | None = None, app: Starlette | None = None) -> None:
        """``app`` serves another app instead (an MCP server's), with its lifespan run."""
        self.app: Starlette = app if app is not None else create_app(stream_delay=stream_delay)
        self._lifespan: Literal["on", "off"] = "off" if app is None else "on"
        self._socket: socket.socket | None = None
        self._server: _ThreadedServer | None = None
        self._thread: threading.Thread | None = None
        self._url: str | None = None

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``; only once started."""
        if self._url is None:
            raise RuntimeError("Upstream is not started")
        return self._url

    @property
    def requests(self) -> list[RecordedRequest]:
        """A copy of what reached the upstream, oldest first."""
        return list(cast(list[RecordedRequest], self.app.state.requests))

    def reset(self) -> None:
        """Forget the recorded requests."""
        self.app.state.requests.clear()

    def start(self) -> None:
        if self._thread is not None:
            raise RuntimeError("Upstream already started")
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        self._socket = sock
        port = sock.getsockname()[1]
        config = uvicorn.Config(
            self.app,
            host="127.0.0.1",
            port=port,
            log_level="warning",
            access_log=False,
            lifespan=self._lifespan,
            loop="asyncio",
            http="h11",
            ws="none",
            timeout_graceful_shutdown=2,
        )
        server = _ThreadedServer(config)
        self._server = server
        thread = threading.Thread(
            target=server.run,
            kwargs={"sockets": [sock]},
            name=f"fake-upstream:{port}",
            daemon=True,
        )
        self._thread = thread
        thread.start()
        deadline = time.monotonic() + self.START_TIMEOUT
        while not server.started:
            if not thread.is_alive():
                self._cleanup()
                raise RuntimeError("fake upstream server thread died during startup")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"fake upstream did not start in {self.START_TIMEOUT} s")
            time.sleep(0.01)
        self._url = f"http://127.0.0.1:{port}"

    def stop(self) -> None:
        server, thread = self._server, self._thread
        if server is None or thread is None:
            return
        server.should_exit = True
        thread.join(self.STOP_TIMEOUT)
        if thread.is_alive():
            server.force_exit = True
            thread.join(self.STOP_TIMEOUT)
        alive = thread.is_alive()
        self._cleanup()
        if alive:
            raise RuntimeError(f"fake upstream did not stop in {2 * self.STOP_TIMEOUT} s")

    def _cleanup(self) -> None:
        if self._socket is not None:
            self._socket.close()  # uvicorn closes it on shutdown; closing twice is harmless
        self._socket = None
        self._server = None
        self._thread = None
        self._url = None

    def __enter__(self) -> Upstream:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


# The weather tool the tests hand the SDKs, in each provider's shape.
OPENAI_TOOLS: list[Any] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather in a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]
ANTHROPIC_TOOLS: list[Any] = [
    {
        "name": "get_weather",
        "description": "Weather in a city.",
        "input_schema": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    }
]
