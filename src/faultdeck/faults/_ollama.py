"""Ollama's native API (``/api/chat``, ``/api/generate``) as its faults look: pure data.

Ollama answers a failure with ``{"error": "<message>"}`` and a status, which its SDK raises
as ``ollama.ResponseError(error, status_code)``. A local server has no quota, but under load
it answers 429, or 503 once its queue of pending requests is full; a model runner that dies
gives a 500. A stream (JSON lines) that fails after starting sends one more line,
``{"error": "…"}``, and stops: the SDK raises ``ResponseError`` for it (status ``-1``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

BUSY = "server busy, please try again.  maximum pending requests exceeded"
"""What Ollama answers (503) when its queue of pending requests is full."""

RUNNER_DIED = "llama runner process has terminated: exit status 2"
"""What Ollama answers (500) when the model's runner stops mid-request."""


def quota_response(params: Mapping[str, Any], name: str) -> tuple[int, dict[str, str], Any]:
    """A 429 with Ollama's error body (and ``retry-after`` when the fault gives a wait)."""
    headers = {"content-type": "application/json; charset=utf-8"}
    retry_after = params.get("retry_after")
    if retry_after is not None:
        headers["retry-after"] = f"{retry_after:g}"
    return 429, headers, {"error": "too many requests, please try again later"}


def transient_response(params: Mapping[str, Any], name: str) -> tuple[int, dict[str, str], Any]:
    """A 5xx: 503 is Ollama's busy answer, any other status its runner failing."""
    status = int(params.get("status", 503))
    message = BUSY if status == 503 else RUNNER_DIED
    return status, {"content-type": "application/json; charset=utf-8"}, {"error": message}


def error_event(name: str) -> dict[str, Any]:
    """The line Ollama ends a failed stream with."""
    return {"data": {"error": RUNNER_DIED}}
