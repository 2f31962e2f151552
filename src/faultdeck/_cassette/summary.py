"""A cassette in brief: as ``faultdeck show --format json`` and the server's API give it,
and as ``faultdeck compare`` sums it up (its calls, the tokens its answers say they used,
the time they took, the faults recorded in it, the models its requests asked for)."""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from .format import Entry, Recording

USAGE_IN = ("input_tokens", "prompt_tokens", "inputTokens", "promptTokenCount")
"""The names a provider's ``usage`` gives the tokens read (Anthropic, OpenAI's Responses API
and Cohere's ``tokens``; OpenAI's Chat Completions; Bedrock; Gemini's ``usageMetadata``),
the first found counting."""
USAGE_OUT = ("output_tokens", "completion_tokens", "outputTokens", "candidatesTokenCount")
"""The names a provider's ``usage`` gives the tokens written, likewise."""


def status(recording: Recording) -> str:
    """How the recorded run ended: ``ok``, ``failed`` or ``interrupted``."""
    if recording.interrupted:
        return "interrupted"
    return "failed" if recording.failed else "ok"


def show_json(recording: Recording, cassette: str) -> dict[str, Any]:
    """A cassette as ``faultdeck show --format json`` prints it.

    Args:
        recording: the cassette, loaded.
        cassette: what to call it (the path given, or the name in the server's folder).
    """
    return {
        "cassette": cassette,
        "header": recording.header.to_json(),
        "ended": recording.end,
        "status": status(recording),
        "interrupted": recording.interrupted,
        "in_flight": [i.seq for i in recording.in_flight()],
        "calls": [dict(e.to_json(), line=e.line) for e in recording.entries],
    }


_MODEL_IN_PATH = re.compile(r"/models/([^/:]+):[A-Za-z]+$|/model/([^/]+)/[a-z-]+$")
"""Where a path names its model: Gemini's ``…/models/{model}:generateContent`` (Vertex AI's
publisher paths too), Bedrock's ``/model/{modelId}/converse`` (the id percent-encoded)."""


def model_in_path(path: Any) -> re.Match[str] | None:
    """Where ``path`` names the model it asks (``_MODEL_IN_PATH``): group 1 for Gemini's,
    group 2 for Bedrock's; ``None`` when it names none."""
    return _MODEL_IN_PATH.search(path) if type(path) is str else None


def requested_model(args: Any) -> str | None:
    """The model an HTTP request's args ask for: the ``model`` field of its JSON body (an
    OpenAI, Anthropic, Mistral… request), else the model its path names (Gemini, Bedrock),
    or ``None``."""
    if type(args) is not dict or "method" not in args:
        return None
    body = args.get("body")
    model = body.get("model") if type(body) is dict else None
    if type(model) is str and model:
        return model
    found = model_in_path(args.get("path"))
    return urllib.parse.unquote(found.group(found.lastindex or 0)) if found else None


def usage_counts(answer: Any) -> tuple[int | None, int | None]:
    """The tokens read and written that an answer (a body, a stream event's data) says it
    used, each ``None`` where it says none: in its ``usage`` (Cohere's under ``tokens``; a
    Cohere stream's in its end's ``delta``), Gemini's ``usageMetadata``, or Ollama's
    ``prompt_eval_count`` and ``eval_count`` on the answer itself."""
    if type(answer) is not dict:
        return None, None
    delta = answer.get("delta")
    ended = delta.get("usage") if type(delta) is dict else None
    for usage in (answer.get("usage"), answer.get("usageMetadata"), ended):
        if type(usage) is not dict:
            continue
        tokens = usage.get("tokens")
        counted = tokens if type(tokens) is dict else usage
        counts = _count(counted, USAGE_IN), _count(counted, USAGE_OUT)
        if counts != (None, None):
            return counts
    return _count(answer, ("prompt_eval_count",)), _count(answer, ("eval_count",))


def _count(usage: dict[str, Any], names: tuple[str, ...]) -> int | None:
    for name in names:
        count = usage.get(name)
        if type(count) is int:
            return count
    return None


@dataclass(frozen=True, slots=True)
class Brief:
    """A cassette summed up, as ``faultdeck compare`` prints a row of it.

    Attributes:
        calls: how many calls it recorded.
        tokens_in, tokens_out: the tokens its answers say they read and wrote, summed over
            the calls whose answers say (``None``: no answer says).
        ms: the recorded time of its calls, summed, in milliseconds.
        faults: how many of its calls were recorded under an injected fault.
        models: the models its requests asked for, each once, in the order first asked.
    """

    calls: int
    tokens_in: int | None
    tokens_out: int | None
    ms: float
    faults: int
    models: tuple[str, ...]


def brief(recording: Recording) -> Brief:
    """``recording`` summed up (``Brief``)."""
    tokens: list[int | None] = [None, None]
    models: dict[str, None] = {}
    for entry in recording.entries:
        for side, count in enumerate(entry_tokens(entry)):
            if count is not None:
                tokens[side] = (tokens[side] or 0) + count
        model = requested_model(entry.args)
        if model is not None:
            models.setdefault(model)
    return Brief(
        calls=len(recording.entries),
        tokens_in=tokens[0],
        tokens_out=tokens[1],
        ms=round(sum(entry.ms for entry in recording.entries), 3),
        faults=sum(entry.fault is not None for entry in recording.entries),
        models=tuple(models),
    )


def entry_tokens(entry: Entry) -> tuple[int | None, int | None]:
    """The tokens one recorded answer says it read and wrote. A stream says it in its
    events (OpenAI's last chunk when usage was asked for; Anthropic's ``message_start``
    and ``message_delta``): the last event that names each count gives it."""
    found: list[int | None] = [None, None]
    for body in _answers(entry):
        for side, count in enumerate(usage_counts(body)):
            if count is not None:
                found[side] = count
    return found[0], found[1]


def _answers(entry: Entry) -> Iterator[dict[str, Any]]:
    """The objects of a recorded answer that may hold a ``usage``: its body (an HTTP
    answer's, or the value itself), or each stream event's data; and the envelope inside
    (a Responses stream's ``response``, an Anthropic stream's ``message``)."""
    value = entry.value
    if entry.result == "error" or type(value) is not dict:
        return
    if entry.result == "stream":
        bodies = [event.get("data") for event in value.get("events", ()) if type(event) is dict]
    else:
        bodies = [value.get("body") if "status" in value and "body" in value else value]
    for body in bodies:
        if type(body) is not dict:
            continue
        inner = body.get("response") or body.get("message")
        if type(inner) is dict:
            yield inner
        yield body
