"""Mistral's faults as Mistral sends them: pure data.

Mistral's chat completions are OpenAI's wire but for three things: its errors are flat
objects (``{"object": "error", "message": …, "type": "rate_limited", "code": …}``, no
``error`` wrapper), which the ``mistralai`` SDK raises as ``SDKError`` carrying the status
code; a streamed tool call comes whole in one chunk (its ``function.name`` is required in
every delta, so OpenAI's split of a call into a head and argument pieces does not parse);
and a message has no ``refusal`` field, so a refusal is the model's text.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from ._formats import Body, Event, Wire
from ._openai_wire import CHAT, _chat

_Params = Mapping[str, Any]


def _error(message: str, kind: str, code: str) -> dict[str, Any]:
    return {"object": "error", "message": message, "type": kind, "param": None, "code": code}


def quota_response(params: _Params, name: str) -> tuple[int, dict[str, str], Any]:
    """Mistral's 429 ``rate_limited``, with ``retry-after`` when ``retry_after`` is set."""
    headers = {"content-type": "application/json"}
    retry_after = params.get("retry_after")
    if retry_after is not None:
        headers["retry-after"] = f"{retry_after:g}"
    return 429, headers, _error("Requests rate limit exceeded", "rate_limited", "1300")


def transient_response(params: _Params, name: str) -> tuple[int, dict[str, str], Any]:
    """Mistral's 5xx: ``internal_server_error`` for a 500, ``service_unavailable`` else."""
    status = int(params.get("status", 503))
    if status == 500:
        body = _error("Internal server error", "internal_server_error", "3000")
    else:
        body = _error("Service unavailable, please retry later", "service_unavailable", "3001")
    return status, {"content-type": "application/json"}, body


def error_event(name: str) -> dict[str, Any]:
    """The error a stream ends with when Mistral gives up after starting."""
    return {"data": _error("Internal server error", "internal_server_error", "3000")}


def _calls(event: Event) -> list[dict[str, Any]]:
    data = event.get("data")
    if not isinstance(data, dict):
        return []
    choices = data.get("choices") or [{}]
    calls = (choices[0].get("delta") or {}).get("tool_calls")
    return calls if isinstance(calls, list) else []


def _unfold(body: Body, recorded: list[Event]) -> list[Event]:
    """OpenAI's chunks for ``body``, each tool call whole in the chunk that opens it."""
    out: list[Event] = []
    for event in CHAT.unfold(body, recorded):
        calls = _calls(event)
        opened = _calls(out[-1]) if out and calls and "id" not in calls[0] else []
        if opened:
            function = opened[0]["function"]
            function["arguments"] += calls[0]["function"].get("arguments") or ""
            continue
        out.append(event)
    return out


MISTRAL_CHAT: Wire = replace(
    CHAT,
    title="Mistral Chat Completions",
    unfold=_unfold,
    shows={
        **CHAT.shows,
        "refusal": _chat(("tool_calls", "refusal"), "stop", content=lambda p: p["text"]),
    },
)
"""Mistral's chat completions: OpenAI's wire, tool calls whole per chunk, no refusal field."""
