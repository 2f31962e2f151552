"""Cohere's v2 API (``/v2/chat``, ``/v2/embed``) as its faults look: pure data.

Cohere answers a failure with ``{"message": "<text>"}`` and a status, and its SDK raises a
class per status: ``TooManyRequestsError`` (429), ``InternalServerError`` (500),
``ServiceUnavailableError`` (503), ``GatewayTimeoutError`` (504), each with ``status_code``,
``headers`` and ``body``. A stream (server-sent events) has no error event its SDK reads:
one that gives up after starting ends its message with ``finish_reason: "ERROR"``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_JSON = {"content-type": "application/json"}
_MESSAGES = {
    500: "internal server error, this has been reported to our developers",
    503: "service unavailable, please try again later",
    504: "gateway timeout, please try again later",
}


def quota_response(params: Mapping[str, Any], name: str) -> tuple[int, dict[str, str], Any]:
    """Cohere's 429 (with ``retry-after`` when the fault gives a wait)."""
    headers = dict(_JSON)
    retry_after = params.get("retry_after")
    if retry_after is not None:
        headers["retry-after"] = f"{retry_after:g}"
    message = "You are past the rate limit for this API key. Please try again later."
    return 429, headers, {"message": message}


def transient_response(params: Mapping[str, Any], name: str) -> tuple[int, dict[str, str], Any]:
    """Cohere's 5xx."""
    status = int(params.get("status", 503))
    message = _MESSAGES.get(status, "internal server error")
    return status, dict(_JSON), {"message": message}


def error_event(name: str) -> dict[str, Any]:
    """How a Cohere stream ends when the model gives up after starting."""
    data = {"type": "message-end", "delta": {"finish_reason": "ERROR"}}
    return {"event": "message-end", "data": data}
