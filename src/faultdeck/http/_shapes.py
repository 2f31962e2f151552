"""What HTTP looks like to the deck: a request as a boundary call, a response as stored,
and the failures providers really send.

Requests: kind ``model`` for the known LLM endpoints (named like
``openai.chat.completions``), else ``http`` (named ``GET /v1/models``); args are the
method, path, query, parsed JSON body and the allowlisted headers. Credentials and
transport noise (user-agent, ``x-stainless-*``, idempotency keys, content-length) are
never part of a key and never stored, because only allowlisted headers are kept at all.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

import orjson

from ..faults._fault import Fault

# Request headers that change what a provider answers.
KEEP_REQUEST_HEADERS = frozenset({"anthropic-version", "anthropic-beta", "openai-beta"})
# Response headers a client or a loop reads; everything else (date, server, cookies,
# content-length of a body we store decoded) is left out.
KEEP_RESPONSE_HEADERS = frozenset(
    {
        "content-type",
        "retry-after",
        "retry-after-ms",
        "x-should-retry",
        "request-id",
        "x-request-id",
        "openai-processing-ms",
    }
)
KEEP_RESPONSE_PREFIXES = ("x-ratelimit-", "anthropic-ratelimit-")
ENDPOINTS = (
    ("/chat/completions", "openai.chat.completions"),
    ("/responses", "openai.responses"),
    ("/embeddings", "openai.embeddings"),
    ("/completions", "openai.completions"),
    ("/messages", "anthropic.messages"),
)


def name_of(method: str, path: str) -> tuple[str, str]:
    """The boundary kind and name of a request."""
    if method == "POST":
        for suffix, name in ENDPOINTS:
            if path.endswith(suffix):
                return "model", name
    return "http", f"{method} {path}"


def request_args(
    method: str,
    path: str,
    query: Sequence[Sequence[str]],
    headers: Any,
    body: bytes,
    keep: frozenset[str],
) -> dict[str, Any]:
    """A request as the args of a boundary call."""
    args: dict[str, Any] = {"method": method, "path": path}
    if query:
        args["query"] = [list(pair) for pair in query]
    kept = {name: headers[name] for name in keep if name in headers}
    if kept:
        args["headers"] = dict(sorted(kept.items()))
    if body:
        args["body"] = parse_body(body)
    return args


def parse_body(body: bytes) -> Any:
    """JSON bodies as parsed JSON (hashed by meaning, not bytes), else text."""
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError:
        return body.decode("utf-8", errors="replace")


def kept_headers(headers: Any) -> dict[str, str]:
    """The response headers worth storing."""
    return {
        k.lower(): v
        for k, v in headers.items()
        if k.lower() in KEEP_RESPONSE_HEADERS or k.lower().startswith(KEEP_RESPONSE_PREFIXES)
    }


def body_bytes(body: Any) -> bytes:
    """A stored body as the bytes a client reads."""
    return body.encode() if isinstance(body, str) else orjson.dumps(body)


def classify(
    status: int, headers: dict[str, str], body: Any
) -> tuple[str | None, float | None, str | None]:
    """How a loop sees a response: (error name, Retry-After seconds, provider code)."""
    if status < 400:
        return None, None, None
    retry_after = None
    if "retry-after-ms" in headers:
        retry_after = _float(headers["retry-after-ms"], 1000)
    elif "retry-after" in headers:
        retry_after = _float(headers["retry-after"], 1)
    code = None
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        value = error.get("code") or error.get("type")
        code = value if isinstance(value, str) else None
    name = "RateLimitError" if status == 429 else "APIStatusError"
    return name, retry_after, code


def _float(text: str, per_second: float) -> float | None:
    try:
        return float(text) / per_second
    except ValueError:
        return None


def provider_of(name: str) -> str:
    """``openai`` or ``anthropic`` (the shape of the errors to send)."""
    return "anthropic" if name.startswith("anthropic") else "openai"


def fault_response(fault: Fault, name: str) -> tuple[int, dict[str, str], Any]:
    """The provider-shaped response that stands in for a quota or transient fault."""
    provider = provider_of(name)
    headers = {"content-type": "application/json"}
    if fault.kind == "quota":
        retry_after = fault.param("retry_after")
        code = fault.param("code", "rate_limit_exceeded")
        if retry_after is not None:
            headers["retry-after"] = f"{retry_after:g}"
            headers["retry-after-ms"] = f"{retry_after * 1000:g}"
        if provider == "anthropic":
            headers["anthropic-ratelimit-requests-remaining"] = "0"
            message = "Number of request tokens has exceeded your per-minute rate limit"
            body: Any = {"type": "error", "error": {"type": "rate_limit_error", "message": message}}
            return 429, headers, body
        if code == "insufficient_quota":
            message = "You exceeded your current quota, please check your plan and billing details."
            body = {
                "error": {
                    "message": message,
                    "type": "insufficient_quota",
                    "param": None,
                    "code": "insufficient_quota",
                }
            }
            return 429, headers, body
        headers.update(
            {
                "x-ratelimit-limit-requests": "500",
                "x-ratelimit-remaining-requests": "0",
                "x-ratelimit-reset-requests": f"{retry_after or 1:g}s",
            }
        )
        message = "Rate limit reached for requests. Please try again later."
        body = {"error": {"message": message, "type": "requests", "param": None, "code": code}}
        return 429, headers, body
    status = int(fault.param("status", 503))
    if provider == "anthropic":
        kind = "overloaded_error" if status == 529 else "api_error"
        message = "Overloaded" if status == 529 else "Internal server error"
        return status, headers, {"type": "error", "error": {"type": kind, "message": message}}
    message = "The server had an error while processing your request."
    return (
        status,
        headers,
        {"error": {"message": message, "type": "server_error", "param": None, "code": None}},
    )


def break_arguments(arguments: str, how: str) -> str:
    """A tool call's JSON arguments, broken the way ``how`` says."""
    if how == "unparseable":
        return arguments[: max(1, len(arguments) // 2)]
    try:
        parsed = orjson.loads(arguments)
    except orjson.JSONDecodeError:
        return arguments[: max(1, len(arguments) // 2)]
    if not isinstance(parsed, dict) or not parsed:
        return "{}" if how == "missing_field" else "[]"
    first = next(iter(parsed))
    if how == "missing_field":
        del parsed[first]
    elif how == "wrong_type":
        parsed[first] = [parsed[first]] if not isinstance(parsed[first], list) else 12345
    return orjson.dumps(parsed).decode()


def break_tool_call(name: str, body: Any, how: str) -> Any:
    """A copy of a non-streamed answer whose first tool call breaks its schema."""
    body = copy.deepcopy(body)
    if not isinstance(body, dict):
        return body
    if name == "openai.chat.completions":
        for choice in body.get("choices", []):
            for call in (choice.get("message") or {}).get("tool_calls") or []:
                _break_function(call.get("function", {}), how)
                return body
    elif name == "openai.responses":
        for item in body.get("output", []):
            if item.get("type") == "function_call":
                _break_function(item, how)
                return body
    elif name == "anthropic.messages":
        for block in body.get("content", []):
            if block.get("type") == "tool_use":
                if how == "unknown_tool":
                    block["name"] = "no_such_tool"
                else:
                    broken = break_arguments(orjson.dumps(block.get("input", {})).decode(), how)
                    try:
                        block["input"] = orjson.loads(broken)
                    except orjson.JSONDecodeError:
                        block["input"] = broken  # an input that is not even an object
                return body
    return body


def _break_function(function: dict[str, Any], how: str) -> None:
    if how == "unknown_tool":
        function["name"] = "no_such_tool"
    else:
        function["arguments"] = break_arguments(str(function.get("arguments", "")), how)


def break_stream_tool_call(
    name: str, events: list[dict[str, Any]], how: str
) -> list[dict[str, Any]]:
    """A copy of streamed events whose first tool call's arguments break their schema: the
    argument pieces are joined, broken, and sent as the first piece."""
    events = copy.deepcopy(events)
    pieces: list[tuple[dict[str, Any], str]] = []
    for event in events:
        data = event.get("data")
        if not isinstance(data, dict):
            continue
        if name == "openai.chat.completions":
            for choice in data.get("choices", []):
                for call in (choice.get("delta") or {}).get("tool_calls") or []:
                    function = call.get("function") or {}
                    if "arguments" in function:
                        pieces.append((function, "arguments"))
        elif name == "anthropic.messages":
            delta = data.get("delta") or {}
            if delta.get("type") == "input_json_delta":
                pieces.append((delta, "partial_json"))
        elif name == "openai.responses" and data.get("type") == (
            "response.function_call_arguments.delta"
        ):
            pieces.append((data, "delta"))
    if not pieces:
        return events
    whole = "".join(str(holder[field]) for holder, field in pieces)
    broken = break_arguments(whole, how)
    for index, (holder, field) in enumerate(pieces):
        holder[field] = broken if index == 0 else ""
    return events


def error_event(name: str) -> dict[str, Any]:
    """The mid-stream error event a provider sends when it gives up after starting."""
    if provider_of(name) == "anthropic":
        return {
            "event": "error",
            "data": {
                "type": "error",
                "error": {"type": "overloaded_error", "message": "Overloaded"},
            },
        }
    return {
        "data": {
            "error": {
                "message": "The server had an error while processing your request.",
                "type": "server_error",
                "code": None,
            }
        }
    }
