"""Ollama's native chat (``/api/chat``) and generate (``/api/generate``) formats, and each
misbehaviour and broken tool call as they show them (``_formats`` says what a ``Wire`` is).

An answer is one object: ``message`` (``role``, ``content``, ``thinking``, ``tool_calls``
whose ``function.arguments`` is a JSON object, not text), ``done: true``, ``done_reason``
(``stop``, ``length``) and the timings. A stream is the same object in lines: each line's
``message`` a piece of the content (or the tool calls, whole), ``done: false``, the last line
``done: true`` with the reason and the timings.

An empty answer is ``content: ""`` ending ``stop``. Ollama has no refusal field: a refusal
is the model's text, its tool calls gone. A local server has no content filter. A
reasoning-only answer holds ``thinking`` and nothing else. A tool call whose arguments are
no JSON object cannot stand in ``tool_calls`` (Ollama parses the model's call before it
answers): the call is gone and its text is the message's ``content``, as Ollama leaves a
call it could not parse; an answer cut inside its call ends ``done_reason: "length"`` so.

A generate answer is the same object with the text in ``response`` (and ``thinking``)
instead of a ``message``, and no tool calls; its stream's lines each hold a piece of the
``response``, the last one ``""``.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import orjson

from ._formats import REASONING_TEXT, Body, Event, Wire, data_of, timed
from ._tool_calls import Breaker, ToolCall, Tools

Params = Mapping[str, Any]


def _holds(body: Any) -> bool:
    return isinstance(body, dict) and isinstance(body.get("message"), dict) and "done" in body


def _fold(events: list[Event]) -> Body | None:
    """The answer a stream carries: its pieces of content and thinking joined, its tool
    calls gathered, the last line's reason and timings."""
    data = [d for d in data_of(events) if isinstance(d.get("message"), dict)]
    if not data:
        return None
    content, thinking = "", ""
    calls: list[Any] = []
    for d in data:
        message = d["message"]
        content += str(message.get("content") or "")
        thinking += str(message.get("thinking") or "")
        calls.extend(message.get("tool_calls") or ())
    body: Body = copy.deepcopy(data[-1])
    message = {**body["message"], "content": content}
    if thinking:
        message["thinking"] = thinking
    if calls:
        message["tool_calls"] = calls
    body["message"] = message
    return body


def _unfold(body: Body, recorded: list[Event]) -> list[Event]:
    """The lines Ollama streams an answer as: the thinking, the content, the tool calls,
    each on a line of its own (``done: false``), then the last line with the reason."""
    message = body.get("message") or {}
    role = message.get("role", "assistant")
    head = {k: v for k, v in body.items() if k in ("model", "created_at")}
    out: list[Event] = []
    for field in ("thinking", "content", "tool_calls"):
        if message.get(field):
            piece = {"role": role, "content": "", field: message[field]}
            out.append({"data": {**head, "message": piece, "done": False}})
    last = {**body, "message": {"role": role, "content": ""}}
    out.append({"data": last})
    return timed(out, recorded)


def _answer(content: str = "", reason: str = "stop", *, thinking: str | None = None) -> Any:
    def show(params: Params, body: Body) -> Body:
        message: dict[str, Any] = {"role": body["message"].get("role", "assistant")}
        message["content"] = params["text"] if content == "{text}" else content
        if thinking is not None:
            message["thinking"] = thinking
        body["message"] = message
        body["done_reason"] = reason
        return body

    return show


CHAT = Wire(
    "Ollama chat",
    _holds,
    _fold,
    _unfold,
    {
        "empty_answer": _answer(),
        "refusal": _answer("{text}"),
        "reasoning_only": _answer(thinking=REASONING_TEXT),
    },
    {"content_filter": "a local server has no content filter"},
)


def _generated(body: Any) -> bool:
    return isinstance(body, dict) and isinstance(body.get("response"), str) and "done" in body


def _fold_generated(events: list[Event]) -> Body | None:
    """The answer a generate stream carries: its pieces of response and thinking joined,
    the last line's reason and timings."""
    data = [d for d in data_of(events) if isinstance(d.get("response"), str)]
    if not data:
        return None
    body: Body = copy.deepcopy(data[-1])
    body["response"] = "".join(d["response"] for d in data)
    thinking = "".join(str(d.get("thinking") or "") for d in data)
    if thinking:
        body["thinking"] = thinking
    return body


def _unfold_generated(body: Body, recorded: list[Event]) -> list[Event]:
    """The lines Ollama streams a generated answer as: the thinking, the response, each on
    a line of its own (``done: false``), then the last line with the reason."""
    head = {k: v for k, v in body.items() if k in ("model", "created_at")}
    out: list[Event] = []
    if body.get("thinking"):
        out.append({"data": {**head, "response": "", "thinking": body["thinking"], "done": False}})
    if body.get("response"):
        out.append({"data": {**head, "response": body["response"], "done": False}})
    last = {k: v for k, v in body.items() if k != "thinking"}
    out.append({"data": {**last, "response": ""}})
    return timed(out, recorded)


def _generated_answer(response: str = "", *, thinking: str | None = None) -> Any:
    def show(params: Params, body: Body) -> Body:
        body.pop("thinking", None)
        body["response"] = params["text"] if response == "{text}" else response
        if thinking is not None:
            body["thinking"] = thinking
        body["done_reason"] = "stop"
        return body

    return show


GENERATE = Wire(
    "Ollama generate",
    _generated,
    _fold_generated,
    _unfold_generated,
    {
        "empty_answer": _generated_answer(),
        "refusal": _generated_answer("{text}"),
        "reasoning_only": _generated_answer(thinking=REASONING_TEXT),
    },
    {"content_filter": "a local server has no content filter"},
)


def break_answer(body: dict[str, Any], breaker: Breaker, tools: Tools) -> bool:
    """The first tool call of an Ollama chat answer broken in place (a ``Writer``);
    ``False`` when it holds none."""
    message = body.get("message")
    if not isinstance(message, dict):
        return False
    calls = message.get("tool_calls")
    if not calls or not isinstance(calls[0], dict):
        return False
    first = calls[0]
    function = first.setdefault("function", {})
    arguments = orjson.dumps(function.get("arguments", {})).decode()
    call = ToolCall(str(function.get("name", "")), arguments, str(first.get("id", "")))
    broken = breaker(call, tools)
    function["name"] = broken.call.name
    if "id" in first:
        first["id"] = broken.call.id
    try:
        parsed = orjson.loads(broken.call.arguments)
    except orjson.JSONDecodeError:
        parsed = None
    if isinstance(parsed, dict):
        function["arguments"] = parsed
        if broken.twin:
            calls.insert(1, copy.deepcopy(first))
        kept = 1 if broken.stopped else len(calls)
    else:  # no object: the call is gone, left as the model's text
        name = orjson.dumps(broken.call.name).decode()
        text = f'{{"name": {name}, "arguments": {broken.call.arguments}'
        end = "" if broken.stopped else "}"
        message["content"] = f"{message.get('content') or ''}{text}{end}"
        kept = 0 if broken.stopped else len(calls)
        del calls[0]
    del calls[kept:]
    if broken.stopped:
        body["done_reason"] = "length"
    if not calls:
        message.pop("tool_calls", None)
    return True


def break_events(events: list[Event], breaker: Breaker, tools: Tools) -> list[Event] | None:
    """The stream's first tool call broken (a ``Rewriter``): the stream folded, its answer
    broken, and unfolded into lines again at the recorded times; ``None`` when it holds no
    tool call."""
    body = _fold(events)
    if body is None or not break_answer(body, breaker, tools):
        return None
    return _unfold(body, events)
