"""What a fault looks like at the HTTP boundary, as the providers send it: pure data.

The kinds of ``_kinds`` read these: a quota or transient fault stands in for the call as
the provider's error response (OpenAI's 429 ``rate_limit_exceeded`` with ``retry-after-ms``,
``insufficient_quota``, Anthropic's 429 and 529), a bad tool call breaks the first tool call
of a real answer (streamed or not), and a stream may end in the provider's ``event: error``.
Which provider is read off the call's name (``anthropic.messages``, ``openai.…``).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import orjson

Params = Mapping[str, Any]
"""A fault's parameters, defaults filled in."""


def provider_of(name: str) -> str:
    """``openai`` or ``anthropic`` (the shape of the errors to send)."""
    return "anthropic" if name.startswith("anthropic") else "openai"


def quota_response(params: Params, name: str) -> tuple[int, dict[str, str], Any]:
    """The provider's 429 for a quota fault: with or without Retry-After, or a quota that
    no wait refills (``insufficient_quota``)."""
    provider = provider_of(name)
    headers = {"content-type": "application/json"}
    retry_after = params.get("retry_after")
    code = params.get("code", "rate_limit_exceeded")
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


def transient_response(params: Params, name: str) -> tuple[int, dict[str, str], Any]:
    """The provider's 5xx (or Anthropic's 529 ``overloaded_error``) for a transient fault."""
    provider = provider_of(name)
    headers = {"content-type": "application/json"}
    status = int(params.get("status", 503))
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


def break_tool_call(name: str, body: Any, how: str) -> Any:  # noqa: C901 - a branch per provider shape and per way to break it
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
