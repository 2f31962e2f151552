"""What a fault looks like when Google's Gemini API sends it: pure data.

Google's APIs answer an error with one body, ``{"error": {"code", "message", "status",
"details"}}``, ``status`` being the canonical name of the code (``RESOURCE_EXHAUSTED`` for
a 429, ``UNAVAILABLE`` for a 503) and ``details`` typed messages (``@type``). The wait a quota
asks for is a ``google.rpc.RetryInfo`` detail (``"retryDelay": "2s"``), never a
``Retry-After`` header. A stream that gives up after starting sends the same error object
as one more SSE ``data:`` event. google-genai raises ``errors.ClientError`` for a 4xx and
``errors.ServerError`` for a 5xx, with the body's ``code``, ``status`` and the whole body as
``details``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

STATUS_NAMES: Mapping[int, str] = {
    400: "INVALID_ARGUMENT",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    499: "CANCELLED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}
"""HTTP status -> the canonical code name Google's error bodies carry."""

RETRY_INFO = "type.googleapis.com/google.rpc.RetryInfo"
QUOTA_FAILURE = "type.googleapis.com/google.rpc.QuotaFailure"
_MESSAGES: Mapping[int, str] = {
    429: (
        "You exceeded your current quota, please check your plan and billing details. For "
        "more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits."
    ),
    500: "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting",
    503: "The model is overloaded. Please try again later.",
    504: "Deadline expired before operation could complete.",
}
# The quota a per-minute limit or a per-day one names (a day's does not refill in a retry).
_PER_MINUTE = "GenerateRequestsPerMinutePerProjectPerModel-FreeTier"
_PER_DAY = "GenerateRequestsPerDayPerProjectPerModel-FreeTier"
_DELAY = re.compile(r"\s*(\d+(?:\.\d*)?)s\s*")
_JSON = {"content-type": "application/json; charset=UTF-8"}


def error_body(status: int, details: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Google's error body for HTTP ``status``."""
    error: dict[str, Any] = {
        "code": status,
        "message": _MESSAGES.get(status, "Internal error encountered."),
        "status": STATUS_NAMES.get(status, "UNKNOWN"),
    }
    if details:
        error["details"] = details
    return {"error": error}


def quota_response(params: Mapping[str, Any], name: str) -> tuple[int, dict[str, str], Any]:
    """A 429 ``RESOURCE_EXHAUSTED``: the quota it broke, and a ``RetryInfo`` when the fault
    has a ``retry_after``; ``code="insufficient_quota"`` breaks a per-day quota, which no
    wait in a run refills."""
    retry_after = params.get("retry_after")
    per_day = params.get("code") == "insufficient_quota"
    violation = {
        "quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
        "quotaId": _PER_DAY if per_day else _PER_MINUTE,
    }
    details: list[dict[str, Any]] = [{"@type": QUOTA_FAILURE, "violations": [violation]}]
    if retry_after is not None:
        details.append({"@type": RETRY_INFO, "retryDelay": f"{retry_after:g}s"})
    return 429, dict(_JSON), error_body(429, details)


def transient_response(params: Mapping[str, Any], name: str) -> tuple[int, dict[str, str], Any]:
    """A 5xx: ``UNAVAILABLE`` for a 503 (Google's overloaded model; a 529, which Google
    never sends, is that too), ``INTERNAL`` for a 500, ``DEADLINE_EXCEEDED`` for a 504."""
    status = int(params.get("status", 503))
    if status == 529:  # Anthropic's overloaded; Google's is a 503
        status = 503
    return status, dict(_JSON), error_body(status)


def error_event(name: str) -> dict[str, Any]:
    """The SSE event a stream that gives up after starting sends: the error object as data."""
    return {"data": error_body(503)}


def retry_delay(body: Any) -> float | None:
    """The seconds a ``RetryInfo`` detail of an error body asks to wait, or ``None``."""
    error = body.get("error") if isinstance(body, dict) else None
    details = error.get("details") if isinstance(error, dict) else None
    for detail in details if isinstance(details, list) else ():
        if isinstance(detail, dict) and detail.get("@type") == RETRY_INFO:
            delay = detail.get("retryDelay")
            found = _DELAY.fullmatch(delay) if isinstance(delay, str) else None
            if found is not None:
                return float(found.group(1))
    return None


def status_name(body: Any) -> str | None:
    """The canonical code name of an error body (``RESOURCE_EXHAUSTED``), or ``None``."""
    error = body.get("error") if isinstance(body, dict) else None
    status = error.get("status") if isinstance(error, dict) else None
    return status if isinstance(status, str) and status else None


_LATE = "no error: the answer comes ms later on the deck's clock"
WORDS: Mapping[str, str] = {
    "quota": "google.genai.errors.ClientError: 429 RESOURCE_EXHAUSTED with a QuotaFailure "
    "detail, and a RetryInfo retryDelay when retry_after is set (never a Retry-After header); "
    "insufficient_quota: a per-day quota, no RetryInfo",
    "timeout": "the httpx client's ReadTimeout (httpx or httpx2): google-genai lets it through",
    "transient": "google.genai.errors.ServerError: 503 UNAVAILABLE (529 too: Google's "
    "overloaded is a 503), 500 INTERNAL, 504 DEADLINE_EXCEEDED",
    "bad_tool_call": "a 200 whose first functionCall part's args break the schema its request "
    "sent; args that are no object (invalid_json, not_object) end the answer "
    "MALFORMED_FUNCTION_CALL without the call; a stream's chunks agree",
    "length_stop": "finish_reason MAX_TOKENS; the functionCall args keep the properties "
    "that fit whole",
    "slow_first_token": "no error: the answer (a stream: its first chunk) comes ms later on "
    "the deck's clock",
    "latency": _LATE,
    "crash": "fd.ProcessKilled (a BaseException) out of the call",
    "reset": "the httpx client's ReadError: google-genai lets it through",
    "stream_cut": "the httpx client's RemoteProtocolError while iterating, after N chunks "
    "(after=N); how=error_event: google.genai.errors.ServerError 503 UNAVAILABLE from the "
    "error chunk",
    "malformed_stream": "google.genai.errors.UnknownApiResponseError (a ValueError) while "
    "iterating, after the first chunk",
    "empty_answer": "a 200: a candidate with no parts, finish_reason STOP; response.text is None",
    "refusal": "a 200: the text as the model's answer, finish_reason STOP (Gemini has no "
    "refusal field)",
    "content_filter": "a 200: finish_reason SAFETY with a blocked safety rating, the "
    "functionCall parts gone",
    "reasoning_only": "a 200 holding one thought part, finish_reason STOP; response.text is None",
    "stale_answer": "the previous answer of this call name, again",
    "html_error": "a 5xx is google.genai.errors.ServerError, the page its message; a 200: "
    "json.JSONDecodeError (a stream: UnknownApiResponseError)",
}
"""What a program on google-genai sees of each fault kind that reaches a model call (the
``gemini`` surface of ``faultdeck faults``)."""
