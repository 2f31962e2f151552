"""Cohere's v2 Chat format (``/v2/chat``), and each misbehaviour and broken tool call as it
shows them (``_formats`` says what a ``Wire`` is).

An answer is ``message`` (``role``, ``content``: a list of ``text`` and ``thinking`` items,
``tool_plan``, ``tool_calls`` whose ``function.arguments`` is JSON text, as OpenAI's), the
``finish_reason`` (``COMPLETE``, ``MAX_TOKENS``, ``TOOL_CALL``…) and the ``usage``. A stream
(server-sent events, each named by its ``type``) opens with ``message-start``; each content
item comes as ``content-start``, ``content-delta``s and ``content-end``, the plan as
``tool-plan-delta``, each tool call as ``tool-call-start``, ``tool-call-delta``s and
``tool-call-end``; ``message-end`` carries the finish reason and the usage.

An empty answer is a message with no content ending ``COMPLETE``. Cohere has no refusal
field: a refusal is the model's text, its plan and tool calls gone. Cohere's finish reasons
have no content filter (its safety modes shape the text itself). A reasoning-only answer
holds one ``thinking`` item. A broken tool call is written into the first of
``tool_calls``, as OpenAI's; an answer stopped inside it ends ``MAX_TOKENS``. A stream is
folded, broken and unfolded again, so that every event agrees.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from ._formats import REASONING_TEXT, Body, Event, Show, Wire, data_of, timed
from ._tool_calls import Breaker, Tools, break_function_call

Params = Mapping[str, Any]


def _holds(body: Any) -> bool:
    return isinstance(body, dict) and isinstance(body.get("message"), dict) and "id" in body


def _message(delta: Any) -> dict[str, Any]:
    message = delta.get("message") if isinstance(delta, dict) else None
    return message if isinstance(message, dict) else {}


def _fold(events: list[Event]) -> Body | None:
    """The answer a stream carries: its content items and tool calls built from their
    starts and deltas, its plan joined, the finish reason and usage of ``message-end``."""
    body: Body | None = None
    content: dict[int, dict[str, Any]] = {}
    calls: dict[int, dict[str, Any]] = {}
    plan = ""
    for data in data_of(events):
        kind, index = data.get("type"), data.get("index", 0)
        message = _message(data.get("delta"))
        if kind == "message-start":
            body = {"id": data.get("id", ""), "message": {"role": message.get("role", "assistant")}}
        elif kind == "content-start":
            content[index] = dict(message.get("content") or {})
        elif kind == "content-delta":
            _extend(content.setdefault(index, {"type": "text"}), message.get("content"))
        elif kind == "tool-plan-delta":
            plan += str(message.get("tool_plan") or "")
        elif kind == "tool-call-start":
            calls[index] = copy.deepcopy(message.get("tool_calls") or {})
        elif kind == "tool-call-delta":
            function = calls.setdefault(index, {}).setdefault("function", {})
            _extend(function, (message.get("tool_calls") or {}).get("function"))
        elif kind == "message-end" and body is not None:
            delta = data.get("delta") or {}
            body.update({k: v for k, v in delta.items() if k in ("finish_reason", "usage")})
    return None if body is None else _folded(body, content, calls, plan)


def _folded(
    body: Body, content: dict[int, dict[str, Any]], calls: dict[int, dict[str, Any]], plan: str
) -> Body:
    """The folded answer: its message holding the content items and calls, by index."""
    message = body["message"]
    for field, held in (("content", content), ("tool_calls", calls)):
        if held:
            message[field] = [held[i] for i in sorted(held)]
    if plan:
        message["tool_plan"] = plan
    return body


def _extend(item: dict[str, Any], piece: Any) -> None:
    """A delta's text (``text``, ``thinking``, ``arguments``) added to ``item``'s."""
    for field, value in (piece or {}).items() if isinstance(piece, dict) else ():
        if field in ("text", "thinking", "arguments"):
            item[field] = str(item.get(field) or "") + str(value)


def _event(kind: str, **data: Any) -> Event:
    return {"event": kind, "data": {"type": kind, **data}}


def _unfold(body: Body, recorded: list[Event]) -> list[Event]:
    """The events Cohere streams an answer as: its start, each content item (started,
    written in one delta, ended), the plan, each tool call (its arguments in one delta),
    and the end with the finish reason and usage."""
    message = body.get("message") or {}
    start = {"role": message.get("role", "assistant"), "content": [], "tool_plan": ""}
    start.update(tool_calls=[], citations=[])
    out = [_event("message-start", id=body.get("id", ""), delta={"message": start})]
    for index, item in enumerate(message.get("content") or ()):
        field = "thinking" if item.get("type") == "thinking" else "text"
        opened = {"type": item.get("type", "text"), field: ""}
        out.append(_event("content-start", index=index, delta={"message": {"content": opened}}))
        piece = {"message": {"content": {field: item.get(field, "")}}}
        out.append(_event("content-delta", index=index, delta=piece))
        out.append(_event("content-end", index=index))
    if message.get("tool_plan"):
        plan = {"message": {"tool_plan": message["tool_plan"]}}
        out.append(_event("tool-plan-delta", delta=plan))
    for index, call in enumerate(message.get("tool_calls") or ()):
        function = call.get("function") or {}
        opened = {**call, "function": {**function, "arguments": ""}}
        started = {"message": {"tool_calls": opened}}
        out.append(_event("tool-call-start", index=index, delta=started))
        piece = {"function": {"arguments": function.get("arguments", "")}}
        delta = {"message": {"tool_calls": piece}}
        out.append(_event("tool-call-delta", index=index, delta=delta))
        out.append(_event("tool-call-end", index=index))
    end = {key: body[key] for key in ("finish_reason", "usage") if key in body}
    out.append(_event("message-end", delta=end))
    return timed(out, recorded)


def _answer(*content: dict[str, Any]) -> Show:
    """A misbehaviour: the message holds ``content`` (``{text}``: the fault's text) and no
    plan or tool call, and the answer ends ``COMPLETE``."""

    def show(params: Params, body: Body) -> Body:
        items = [
            {**item, "text": params["text"]} if item.get("text") == "{text}" else dict(item)
            for item in content
        ]
        message: dict[str, Any] = {"role": body["message"].get("role", "assistant")}
        if items:
            message["content"] = items
        body["message"] = message
        body["finish_reason"] = "COMPLETE"
        return body

    return show


CHAT = Wire(
    "Cohere v2 Chat",
    _holds,
    _fold,
    _unfold,
    {
        "empty_answer": _answer(),
        "refusal": _answer({"type": "text", "text": "{text}"}),
        "reasoning_only": _answer({"type": "thinking", "thinking": REASONING_TEXT}),
    },
    {"content_filter": "Cohere's finish reasons have no content filter"},
)
"""Cohere's ``/v2/chat`` answers, whole and streamed."""


def break_answer(body: dict[str, Any], breaker: Breaker, tools: Tools) -> bool:
    """The first tool call of a Cohere chat answer broken in place (a ``Writer``);
    ``False`` when it holds none."""
    message = body.get("message")
    calls = message.get("tool_calls") if isinstance(message, dict) else None
    broken = break_function_call(calls, breaker, tools)
    if broken is None:
        return False
    if broken.stopped:
        body["finish_reason"] = "MAX_TOKENS"
    return True


def break_events(events: list[Event], breaker: Breaker, tools: Tools) -> list[Event] | None:
    """The stream's first tool call broken (a ``Rewriter``): folded, broken, unfolded
    again at the recorded times; ``None`` when it holds no tool call."""
    body = _fold(events)
    if body is None or not break_answer(body, breaker, tools):
        return None
    return _unfold(body, events)
