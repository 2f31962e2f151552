"""OpenAI's two answer formats, Chat Completions and Responses, and each misbehaviour as
they show it (``_formats`` says what a ``Wire`` is).

Chat Completions: an empty answer is ``content: ""`` finishing ``stop``; a refusal is the
message's own ``refusal`` field with ``content: null``; a content filter finishes
``content_filter`` with the tool calls gone. It has no reasoning to show alone.

Responses: an empty answer is one message holding an empty ``output_text``; a refusal is a
message whose content is a ``refusal`` item; a content filter leaves the response
``incomplete`` (``incomplete_details.reason: content_filter``) with its function calls
gone; a reasoning-only answer holds one ``reasoning`` item and nothing else. Its stream
is made of the final response, as the API streams one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ._formats import REASONING_TEXT, Body, Event, Wire, data_of, item_id, timed

Params = Mapping[str, Any]

# -- Chat Completions --------------------------------------------------------------------

_CHAT_HEAD = ("id", "created", "model", "service_tier", "system_fingerprint")
_CHAT_TOOLS = ("tool_calls", "function_call")


def _chat_holds(body: Any) -> bool:
    choices = body.get("choices") if isinstance(body, dict) else None
    return (
        isinstance(choices, list)
        and bool(choices)
        and all(isinstance(c, dict) and isinstance(c.get("message"), dict) for c in choices)
    )


def _chat(drop: tuple[str, ...], finish: str, **message: Any) -> Callable[[Params, Body], Body]:
    """A misbehaviour of every choice: the message's ``drop`` fields gone, ``message``'s
    set (a callable takes the fault's parameters), and the choice finishing ``finish``."""

    def show(params: Params, body: Body) -> Body:
        for choice in body["choices"]:
            held = choice["message"]
            for name in drop:
                held.pop(name, None)
            for name, value in message.items():
                held[name] = value(params) if callable(value) else value
            choice["finish_reason"] = finish
        return body

    return show


def _chat_fold(events: list[Event]) -> Body | None:
    """The chat completion a stream of chunks carries, as the SDK accumulates it."""
    chunks = [d for d in data_of(events) if d.get("object") == "chat.completion.chunk"]
    if not chunks:
        return None
    body: Body = {name: chunks[0][name] for name in _CHAT_HEAD if name in chunks[0]}
    body["object"] = "chat.completion"
    choices: dict[int, dict[str, Any]] = {}
    for chunk in chunks:
        if chunk.get("usage"):
            body["usage"] = chunk["usage"]
        for part in chunk.get("choices") or ():
            index = part.get("index", 0)
            choice = choices.setdefault(index, _chat_choice(index))
            _chat_delta(choice["message"], part.get("delta") or {})
            if part.get("finish_reason") is not None:
                choice["finish_reason"] = part["finish_reason"]
    body["choices"] = [choices[index] for index in sorted(choices)]
    return body


def _chat_choice(index: int) -> dict[str, Any]:
    message = {"role": "assistant", "content": None, "refusal": None}
    return {"index": index, "message": message, "logprobs": None, "finish_reason": None}


def _chat_delta(message: dict[str, Any], delta: dict[str, Any]) -> None:
    for name in ("content", "refusal"):
        if isinstance(delta.get(name), str):
            message[name] = (message[name] or "") + delta[name]
    for piece in delta.get("tool_calls") or ():
        calls = message.setdefault("tool_calls", [])
        index = piece.get("index", 0)
        while len(calls) <= index:
            calls.append(
                {"id": None, "type": "function", "function": {"name": "", "arguments": ""}}
            )
        call = calls[index]
        if piece.get("id"):
            call["id"] = piece["id"]
        function = piece.get("function") or {}
        call["function"]["name"] += function.get("name") or ""
        call["function"]["arguments"] += function.get("arguments") or ""


def _chat_unfold(body: Body, recorded: list[Event]) -> list[Event]:
    """The chunks a chat completion streams as: the role first, then its content, its
    refusal and each tool call, then the finish; the usage chunk where the recorded stream
    had one (``stream_options.include_usage``); ``[DONE]``."""
    head: dict[str, Any] = {name: body[name] for name in _CHAT_HEAD if name in body}
    head["object"] = "chat.completion.chunk"

    def chunk(index: int, delta: dict[str, Any], finish: str | None = None) -> Event:
        choice = {"index": index, "delta": delta, "logprobs": None, "finish_reason": finish}
        return {"data": {**head, "choices": [choice]}}

    out: list[Event] = []
    for choice in body["choices"]:
        index, message = choice.get("index", 0), choice["message"]
        first: dict[str, Any] = {"role": "assistant"}
        first["content"] = "" if isinstance(message.get("content"), str) else None
        if message.get("refusal") is not None:
            first["refusal"] = ""
        out.append(chunk(index, first))
        out += [
            chunk(index, {name: message[name]})
            for name in ("content", "refusal")
            if message.get(name)
        ]
        for n, call in enumerate(message.get("tool_calls") or ()):
            function = call.get("function") or {}
            named = {"name": function.get("name"), "arguments": ""}
            opened = {"index": n, "id": call.get("id"), "type": "function", "function": named}
            arguments = {"index": n, "function": {"arguments": function.get("arguments", "")}}
            out += [
                chunk(index, {"tool_calls": [opened]}),
                chunk(index, {"tool_calls": [arguments]}),
            ]
        out.append(chunk(index, {}, choice.get("finish_reason")))
    if body.get("usage") and any(d.get("usage") for d in data_of(recorded)):
        out.append({"data": {**head, "choices": [], "usage": body["usage"]}})
    out.append({"data": "[DONE]"})
    return timed(out, recorded)


CHAT = Wire(
    "OpenAI Chat Completions",
    _chat_holds,
    _chat_fold,
    _chat_unfold,
    {
        "empty_answer": _chat((*_CHAT_TOOLS, "audio"), "stop", content="", refusal=None),
        "refusal": _chat(
            (*_CHAT_TOOLS, "audio"), "stop", content=None, refusal=lambda p: p["text"]
        ),
        "content_filter": _chat(_CHAT_TOOLS, "content_filter"),
    },
    {"reasoning_only": "it has no reasoning"},
)

# -- Responses ---------------------------------------------------------------------------

_FINAL = {
    "completed": "response.completed",
    "incomplete": "response.incomplete",
    "failed": "response.failed",
}
_TOOL_CALLS = frozenset({"function_call", "custom_tool_call"})


def _responses_holds(body: Any) -> bool:
    return (
        isinstance(body, dict)
        and body.get("object") == "response"
        and isinstance(body.get("output"), list)
    )


def _answered(*output: Callable[[Params, Body], dict[str, Any]]) -> Callable[[Params, Body], Body]:
    """A misbehaviour that answers with ``output`` alone, the response completed."""

    def show(params: Params, body: Body) -> Body:
        body["output"] = [make(params, body) for make in output]
        body.update(status="completed", incomplete_details=None, error=None)
        return body

    return show


def _message(
    *content: Callable[[Params], dict[str, Any]],
) -> Callable[[Params, Body], dict[str, Any]]:
    """An output message holding ``content`` (its id the answer's first message's)."""

    def make(params: Params, body: Body) -> dict[str, Any]:
        old = next((i for i in body["output"] if i.get("type") == "message" and i.get("id")), None)
        return {
            "id": old["id"] if old is not None else item_id(body, "msg"),
            "type": "message",
            "status": "completed",
            "role": "assistant",
            "content": [part(params) for part in content],
        }

    return make


def _reasoning(params: Params, body: Body) -> dict[str, Any]:
    summary = [{"type": "summary_text", "text": REASONING_TEXT}]
    return {"id": item_id(body, "rs"), "type": "reasoning", "summary": summary}


def _filtered(params: Params, body: Body) -> Body:
    body["output"] = [i for i in body["output"] if i.get("type") not in _TOOL_CALLS]
    body.update(status="incomplete", incomplete_details={"reason": "content_filter"})
    return body


def _responses_fold(events: list[Event]) -> Body | None:
    """The response a stream carries: its final event's (``response.completed``,
    ``.incomplete``, ``.failed``), else its first one's with the items done so far."""
    data = data_of(events)
    for d in reversed(data):
        if d.get("type") in _FINAL.values() and isinstance(d.get("response"), dict):
            return dict(d["response"])
    started = next((d["response"] for d in data if isinstance(d.get("response"), dict)), None)
    if started is None:
        return None
    done = [d["item"] for d in data if d.get("type") == "response.output_item.done"]
    return {**started, "output": [item for item in done if isinstance(item, dict)]}


def _responses_unfold(body: Body, recorded: list[Event]) -> list[Event]:
    """The events the API streams a response as: created and in progress (no output yet),
    each output item added, filled in and done, then the final event its status names,
    numbered in order."""
    out: list[Event] = []

    def emit(kind: str, **fields: Any) -> None:
        out.append({"event": kind, "data": {"type": kind, "sequence_number": len(out), **fields}})

    pending = {**body, "status": "in_progress", "output": [], "usage": None}
    pending.update(incomplete_details=None, error=None)
    if "completed_at" in body:
        pending["completed_at"] = None
    emit("response.created", response=pending)
    emit("response.in_progress", response=pending)
    for index, item in enumerate(body["output"]):
        at = {"item_id": item.get("id"), "output_index": index}
        start, fill = _ITEMS.get(item.get("type"), _AS_IS)
        emit("response.output_item.added", output_index=index, item=start(item))
        fill(emit, at, item)
        emit("response.output_item.done", output_index=index, item=item)
    emit(_FINAL.get(body.get("status", ""), "response.completed"), response=body)
    return timed(out, recorded)


Emit = Callable[..., None]


def _message_parts(emit: Emit, at: dict[str, Any], item: dict[str, Any]) -> None:
    for n, part in enumerate(item.get("content") or ()):
        where = {**at, "content_index": n}
        kind = part.get("type")
        if kind == "output_text":
            text = part.get("text", "")
            emit("response.content_part.added", **where, part={**part, "text": ""})
            emit("response.output_text.delta", **where, delta=text, logprobs=[])
            emit("response.output_text.done", **where, text=text, logprobs=[])
        elif kind == "refusal":
            refusal = part.get("refusal", "")
            emit("response.content_part.added", **where, part={**part, "refusal": ""})
            emit("response.refusal.delta", **where, delta=refusal)
            emit("response.refusal.done", **where, refusal=refusal)
        else:
            emit("response.content_part.added", **where, part=part)
        emit("response.content_part.done", **where, part=part)


def _call_arguments(emit: Emit, at: dict[str, Any], item: dict[str, Any]) -> None:
    arguments = item.get("arguments", "")
    emit("response.function_call_arguments.delta", **at, delta=arguments)
    emit("response.function_call_arguments.done", **at, arguments=arguments)


def _summary_parts(emit: Emit, at: dict[str, Any], item: dict[str, Any]) -> None:
    for n, part in enumerate(item.get("summary") or ()):
        where, text = {**at, "summary_index": n}, part.get("text", "")
        emit("response.reasoning_summary_part.added", **where, part={**part, "text": ""})
        emit("response.reasoning_summary_text.delta", **where, delta=text)
        emit("response.reasoning_summary_text.done", **where, text=text)
        emit("response.reasoning_summary_part.done", **where, part=part)


def _begun(**empty: Any) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """An output item as it is added: in progress, ``empty``'s fields not filled in yet."""
    return lambda item: {**item, **empty, **({"status": "in_progress"} if "status" in item else {})}


def _as_added(emit: Emit, at: dict[str, Any], item: dict[str, Any]) -> None:
    """An item no misbehaviour makes (a web search call): added and done, nothing between."""


Begin = Callable[[dict[str, Any]], dict[str, Any]]
Fill = Callable[[Emit, dict[str, Any], dict[str, Any]], None]
_AS_IS: tuple[Begin, Fill] = (_begun(), _as_added)
_ITEMS: dict[str, tuple[Begin, Fill]] = {
    "message": (_begun(content=[]), _message_parts),
    "function_call": (_begun(arguments=""), _call_arguments),
    "reasoning": (_begun(summary=[]), _summary_parts),
}
"""Item type -> (the item as added, the events that fill it in)."""

RESPONSES = Wire(
    "OpenAI Responses",
    _responses_holds,
    _responses_fold,
    _responses_unfold,
    {
        "empty_answer": _answered(
            _message(
                lambda p: {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
            )
        ),
        "refusal": _answered(_message(lambda p: {"type": "refusal", "refusal": p["text"]})),
        "content_filter": _filtered,
        "reasoning_only": _answered(_reasoning),
    },
)
