"""Google Gemini's ``GenerateContentResponse``, and each misbehaviour and broken tool call as
it shows them (``_formats`` says what a ``Wire`` is).

An answer is ``candidates[0].content.parts``: text parts, ``functionCall`` parts (their
``args`` an object), ``thought: true`` parts of reasoning; ``finishReason`` says why it
ended. A stream (``streamGenerateContent?alt=sse``) sends the same object in chunks, each
with some of the parts, the last with the ``finishReason`` and the ``usageMetadata``: its
parts joined are the answer (google-genai hands the chunks over as they come).

An empty answer is a candidate with no parts ending ``STOP``. Gemini has no refusal field: a
refusal is the model's text, ending ``STOP``. A content filter ends ``SAFETY`` with a blocked
safety rating, its function calls dropped, the text before kept (as a stream cut there shows
it). A reasoning-only answer holds one ``thought`` part. A broken tool call is written into
the first ``functionCall`` part; ``args`` hold only an object, so arguments that are none (no
JSON, a list) end the answer ``MALFORMED_FUNCTION_CALL`` without the call, as Gemini ends one
it could not parse; an answer stopped inside the call ends ``MAX_TOKENS``. A stream is
folded, broken and unfolded again, so that every chunk agrees.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

import orjson

from ._formats import REASONING_TEXT, Body, Event, Wire, data_of, timed
from ._tool_calls import Breaker, ToolCall, Tools, tool_input

Params = Mapping[str, Any]
Part = dict[str, Any]

BLOCKED_RATING = {
    "category": "HARM_CATEGORY_DANGEROUS_CONTENT",
    "probability": "HIGH",
    "blocked": True,
}
"""The safety rating a content filter's answer carries."""


def _holds(body: Any) -> bool:
    if not isinstance(body, dict) or "error" in body:
        return False
    candidates = body.get("candidates")
    return isinstance(candidates, list) and bool(candidates) and isinstance(candidates[0], dict)


def _joins(last: Part, part: Part) -> bool:
    """Whether a streamed text ``part`` continues the text part ``last``."""
    plain = {"text", "thought"}
    return (
        set(last) <= plain
        and set(part) <= plain
        and "text" in last
        and "text" in part
        and bool(last.get("thought")) == bool(part.get("thought"))
    )


def _fold(events: list[Event]) -> Body | None:
    """The answer a stream carries: its chunks' parts joined (text runs into one part), the
    last chunk's ``finishReason``, ratings and usage."""
    chunks = [d for d in data_of(events) if _holds(d)]
    if not chunks:
        return None
    candidate: dict[str, Any] = {}
    parts: list[Part] = []
    for chunk in chunks:
        streamed = chunk["candidates"][0]
        content = streamed.get("content") or {}
        for part in content.get("parts") or ():
            if parts and _joins(parts[-1], part):
                parts[-1] = {**parts[-1], "text": parts[-1]["text"] + part["text"]}
            elif isinstance(part, dict):
                parts.append(dict(part))
        for key, value in streamed.items():
            if key != "content":
                candidate[key] = value
    role = next((c["candidates"][0].get("content", {}).get("role") for c in chunks), "model")
    body: Body = {"candidates": [{"content": {"role": role or "model", "parts": parts}}]}
    body["candidates"][0].update(candidate)
    for chunk in chunks:
        body.update({key: value for key, value in chunk.items() if key != "candidates"})
    return body


def _unfold(body: Body, recorded: list[Event]) -> list[Event]:
    """The chunks Gemini streams an answer as: one per part, the last with what ends it
    (``finishReason``, ratings) and the usage; an answer with no parts in one chunk."""
    candidate = body["candidates"][0]
    content = candidate.get("content") or {}
    parts = content.get("parts") or []
    ending = {key: value for key, value in candidate.items() if key not in ("content", "index")}
    rest = {key: value for key, value in body.items() if key not in ("candidates", "usageMetadata")}
    out: list[Event] = []
    pieces: list[list[Part] | None] = [[part] for part in parts] or [None]
    for position, piece in enumerate(pieces):
        last = position == len(pieces) - 1
        shown: dict[str, Any] = {}
        if piece is not None:
            shown["content"] = {**content, "parts": piece}
        elif content:
            shown["content"] = content
        shown["index"] = candidate.get("index", 0)
        if last:
            shown.update(ending)
        chunk: dict[str, Any] = {"candidates": [shown]}
        if last and "usageMetadata" in body:
            chunk["usageMetadata"] = body["usageMetadata"]
        chunk.update(rest)
        out.append({"data": chunk})
    return timed(out, recorded)


def _ends(
    finish: str,
    parts: Callable[[Params, list[Part]], list[Part] | None],
    ratings: list[dict[str, Any]] | None = None,
) -> Callable[[Params, Body], Body]:
    """A misbehaviour: the parts ``parts`` makes of the answer's (``None``: no parts at all),
    ending with ``finish``."""

    def show(params: Params, body: Body) -> Body:
        candidate = body["candidates"][0]
        content = candidate.get("content") or {"role": "model"}
        made = parts(params, list(content.get("parts") or []))
        content = {key: value for key, value in content.items() if key != "parts"}
        if made is not None:
            content["parts"] = made
        candidate["content"] = content
        candidate["finishReason"] = finish
        if ratings is not None:
            candidate["safetyRatings"] = ratings
        body["candidates"] = [candidate]
        return body

    return show


GEMINI = Wire(
    "Gemini GenerateContent",
    _holds,
    _fold,
    _unfold,
    {
        "empty_answer": _ends("STOP", lambda p, parts: None),
        "refusal": _ends("STOP", lambda p, parts: [{"text": p["text"]}]),
        "content_filter": _ends(
            "SAFETY",
            lambda p, parts: [part for part in parts if "functionCall" not in part],
            [BLOCKED_RATING],
        ),
        "reasoning_only": _ends(
            "STOP", lambda p, parts: [{"text": REASONING_TEXT, "thought": True}]
        ),
    },
)
"""Gemini's ``generateContent`` and ``streamGenerateContent`` answers."""


def write_call(body: dict[str, Any], breaker: Breaker, tools: Tools) -> bool:
    """Break the first ``functionCall`` of a whole answer in place; ``False`` when it holds
    none (a writer of ``_tool_answers``)."""
    if not _holds(body):
        return False
    candidate = body["candidates"][0]
    parts = (candidate.get("content") or {}).get("parts")
    if not isinstance(parts, list):
        return False
    for index, part in enumerate(parts):
        call = part.get("functionCall") if isinstance(part, dict) else None
        if not isinstance(call, dict):
            continue
        arguments = orjson.dumps(call.get("args", {})).decode()
        broken = breaker(ToolCall(str(call.get("name", "")), arguments, call.get("id", "")), tools)
        shown = tool_input(broken, arguments)
        if not isinstance(shown, dict):  # args are an object: Gemini says it could not make one
            del parts[index:]
            candidate["finishReason"] = "MALFORMED_FUNCTION_CALL"
            candidate["finishMessage"] = (
                f"Malformed function call: {broken.call.name}({broken.call.arguments})"
            )
            return True
        call["name"], call["args"] = broken.call.name, shown
        if call.get("id") or broken.call.id:
            call["id"] = broken.call.id
        if broken.twin:
            parts.insert(index + 1, copy.deepcopy(part))
        if broken.stopped:
            del parts[index + 1 :]
            candidate["finishReason"] = "MAX_TOKENS"
        return True
    return False


def rewrite_stream(events: list[Event], breaker: Breaker, tools: Tools) -> list[Event] | None:
    """Break the first ``functionCall`` of a stream: folded, broken, unfolded (a rewriter
    of ``_tool_streams``); ``None`` when it holds none."""
    body = _fold(events)
    if body is None or not write_call(body, breaker, tools):
        return None
    return _unfold(body, events)
