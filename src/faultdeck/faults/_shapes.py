"""What a fault looks like at the HTTP boundary, as the providers send it: pure data.

The kinds of ``_kinds`` read these: a quota or transient fault stands in for the call as
the provider's error response (OpenAI's 429 ``rate_limit_exceeded`` with ``retry-after-ms``,
``insufficient_quota``, Anthropic's 429 and 529), and a stream may end in the provider's
``event: error``. Which provider is read off the call's name (``anthropic.messages``,
``openai.…``); a provider with errors of its own has them in ``OWN_SHAPES`` (Azure's,
Mistral's), and a provider speaking another's wire names it in ``WIRE_OF``. A broken tool
call inside a real answer is ``_tool_calls``' (how it breaks), ``_tool_answers``' and
``_tool_streams``' (where each provider shows it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .._base.errors import ConfigError
from . import _azure as azure
from . import _bedrock as bedrock
from . import _cohere as cohere
from . import _gemini as gemini
from . import _mistral as mistral
from . import _ollama as ollama

Params = Mapping[str, Any]
"""A fault's parameters, defaults filled in."""

Respond = Callable[[Params, str], tuple[int, dict[str, str], Any]]


@dataclass(frozen=True, slots=True)
class ErrorShapes:
    """How a provider with errors of its own sends a quota fault, a transient one, and the
    error a stream it gives up on ends with (``None``: OpenAI's)."""

    quota: Respond
    transient: Respond
    error_event: Callable[[str], dict[str, Any]] | None = None


OWN_SHAPES: Mapping[str, ErrorShapes] = {
    "azure": ErrorShapes(azure.quota_response, azure.transient_response),
    "mistral": ErrorShapes(mistral.quota_response, mistral.transient_response, mistral.error_event),
    "gemini": ErrorShapes(gemini.quota_response, gemini.transient_response, gemini.error_event),
    "ollama": ErrorShapes(ollama.quota_response, ollama.transient_response, ollama.error_event),
    "cohere": ErrorShapes(cohere.quota_response, cohere.transient_response, cohere.error_event),
    "bedrock": ErrorShapes(bedrock.quota_response, bedrock.transient_response, bedrock.error_event),
}
"""Call-name prefix -> the errors of a provider that sends its own (the rest send
OpenAI's or Anthropic's)."""

WIRE_OF: Mapping[str, str] = {
    "azure": "openai",
    "mistral": "openai",
    "groq": "openai",
    "openrouter": "openai",
    "together": "openai",
    "fireworks": "openai",
    "deepseek": "openai",
}
"""Call-name prefix -> the provider whose wire format its model calls speak."""


def wire_of(name: str) -> str:
    """The call name of the same API in the wire format ``name``'s calls speak:
    ``azure.chat.completions`` -> ``openai.chat.completions``; ``name`` itself otherwise."""
    provider, dot, api = name.partition(".")
    wire = WIRE_OF.get(provider)
    return f"{wire}.{api}" if dot and wire is not None else name


SILENT: Mapping[str, str] = {
    "openai.embeddings": "OpenAI Embeddings (vectors, no message)",
    "openai.completions": "legacy OpenAI Completions",
    "ollama.embed": "Ollama embeddings (vectors, no message)",
    "cohere.embed": "Cohere embeddings (vectors, no message)",
    "bedrock.invoke_model": "Bedrock InvokeModel (each model's own body)",
    "bedrock.invoke_model_stream": "Bedrock InvokeModel (each model's own body)",
}
"""Model calls whose answers show no misbehaviour: a fault that would break one (a tool
call, an empty or refused answer…) is a ``ConfigError`` there, never a silent no-op."""


NO_TOOL_CALLS: Mapping[str, str] = {
    "ollama.generate": "Ollama generate (text, no tool calls)",
    "mistral.fim.completions": "Mistral FIM completions (code, no tool calls)",
}
"""Model calls whose answers show the misbehaviours of text (empty, refused, reasoning
only) but hold no tool calls: a tool-call fault there is a ``ConfigError`` too."""

TOOL_CALL_KINDS = frozenset({"bad_tool_call", "length_stop"})
"""The fault kinds that break a tool call in an answer."""


def silent_about(name: str) -> str | None:
    """What model call ``name`` is, when its answers show no misbehaviour (``SILENT``)."""
    return SILENT.get(name) or SILENT.get(wire_of(name))


def without_tool_calls(name: str) -> str | None:
    """What model call ``name`` is, when its answers hold no tool calls to break."""
    return silent_about(name) or NO_TOOL_CALLS.get(name)


def refuse_tool_call_fault(name: str, able: Iterable[str]) -> None:
    """Raise, when call ``name`` is a model call whose answers show no tool-call fault.

    Raises:
        ConfigError: naming the calls it can land on (``able``).
    """
    title = without_tool_calls(name)
    if title is not None:
        raise ConfigError(
            f"a tool-call fault at {name}: {title} cannot show it; land it on "
            f"{' or '.join(able)} calls (.on(name=…))"
        )


def _own(name: str) -> ErrorShapes | None:
    return OWN_SHAPES.get(name.partition(".")[0])


def provider_of(name: str) -> str:
    """The provider whose errors a call named ``name`` gets: its name's prefix when it has
    errors of its own (``OWN_SHAPES``), else ``anthropic`` or ``openai``."""
    prefix = name.partition(".")[0]
    if prefix in OWN_SHAPES:
        return prefix
    return "anthropic" if name.startswith("anthropic") else "openai"


def quota_response(params: Params, name: str) -> tuple[int, dict[str, str], Any]:
    """The provider's 429 for a quota fault: with or without Retry-After, or a quota that
    no wait refills (``insufficient_quota``)."""
    own = _own(name)
    if own is not None:
        return own.quota(params, name)
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
    own = _own(name)
    if own is not None:
        return own.transient(params, name)
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


def error_event(name: str) -> dict[str, Any]:
    """The mid-stream error event a provider sends when it gives up after starting."""
    own = _own(name)
    if own is not None and own.error_event is not None:
        return own.error_event(name)
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
