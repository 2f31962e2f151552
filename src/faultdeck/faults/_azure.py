"""Azure OpenAI's faults as Azure sends them: pure data.

Azure OpenAI speaks OpenAI's wire (the ``openai`` SDK's ``AzureOpenAI`` client parses it),
but its errors are its own: a 429 whose ``error.code`` is ``"429"`` and whose message names
the operation and says how long to wait (with ``retry-after`` and ``retry-after-ms``), 5xx
bodies coded ``InternalServerError`` / ``ServiceUnavailable``, and a content filter whose
results come on each choice (``content_filter_results``: per category, ``filtered`` and a
``severity``) of a 200 that finishes ``content_filter``. The ``content_filter`` fault kind
shows that: the answer filtered, the SDK raising nothing (its stream helper raises
``ContentFilterFinishReasonError``). A prompt the filter refuses (Azure's 400 whose
``error.code`` is ``content_filter``) is not a fault kind of its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from ._formats import Body, Wire
from ._openai_wire import CHAT

_Params = Mapping[str, Any]

_OPERATIONS = {
    "chat.completions": "ChatCompletions_Create",
    "completions": "Completions_Create",
    "embeddings": "Embeddings_Create",
    "responses": "Responses_Create",
}
_CATEGORIES = ("hate", "self_harm", "sexual", "violence")
_UNAVAILABLE = "The service is temporarily unable to process your request. Please try again later."


def _operation(name: str) -> str:
    return _OPERATIONS.get(name.partition(".")[2], "ChatCompletions_Create")


def quota_response(params: _Params, name: str) -> tuple[int, dict[str, str], Any]:
    """Azure's 429: a token rate limit with the wait in its message and headers, or, with
    no ``retry_after``, a quota no wait refills soon (no hint given)."""
    headers = {"content-type": "application/json"}
    retry_after = params.get("retry_after")
    operation = _operation(name)
    if retry_after is None:
        message = (
            f"Requests to the {operation} Operation under Azure OpenAI API have exceeded "
            "the token quota of your current pricing tier. Please go here: "
            "https://aka.ms/oai/quotaincrease if you would like to further increase the "
            "default rate limit."
        )
    else:
        wait = max(1, round(retry_after))
        headers["retry-after"] = f"{retry_after:g}"
        headers["retry-after-ms"] = f"{retry_after * 1000:g}"
        headers["x-ratelimit-remaining-requests"] = "0"
        headers["x-ratelimit-remaining-tokens"] = "0"
        message = (
            f"Requests to the {operation} Operation under Azure OpenAI API have exceeded "
            "token rate limit of your current AIServices S0 pricing tier. Please retry "
            f"after {wait} second{'s' if wait != 1 else ''}. Please go here: "
            "https://aka.ms/oai/quotaincrease if you would like to further increase the "
            "default rate limit."
        )
    return 429, headers, {"error": {"code": "429", "message": message}}


def transient_response(params: _Params, name: str) -> tuple[int, dict[str, str], Any]:
    """Azure's 5xx: ``InternalServerError`` for a 500, ``ServiceUnavailable`` otherwise."""
    status = int(params.get("status", 503))
    code = "InternalServerError" if status == 500 else "ServiceUnavailable"
    body = {"error": {"code": code, "message": _UNAVAILABLE, "status": status}}
    return status, {"content-type": "application/json"}, body


def filter_results(filtered: str | None) -> dict[str, Any]:
    """The content filter's verdict per category, ``filtered`` one flagged at medium."""
    return {
        category: {"filtered": category == filtered, "severity": "medium"}
        if category == filtered
        else {"filtered": False, "severity": "safe"}
        for category in _CATEGORIES
    }


_chat_filtered = CHAT.shows["content_filter"]


def _filtered(params: _Params, body: Body) -> Body:
    """OpenAI's filtered answer, each choice carrying Azure's verdict."""
    shown = _chat_filtered(params, body)
    for choice in shown["choices"]:
        choice["content_filter_results"] = filter_results("violence")
    return shown


AZURE_CHAT: Wire = replace(
    CHAT,
    title="Azure OpenAI Chat Completions",
    shows={**CHAT.shows, "content_filter": _filtered},
)
"""Azure's chat completions: OpenAI's wire, its content filter's verdict on each choice."""
