"""A broken tool call written into a stream's events, every event agreeing with it.

One rewriter per provider shape, in ``REWRITERS``. Each gathers the first tool call from the
events that carry it (its name, its id, its argument pieces joined), asks the fault how it
breaks, and writes the ``Broken`` call into every event that shows it, so that a program
reading the pieces and one reading what the SDK accumulates see the same call:

- OpenAI Chat Completions: the ``tool_calls`` deltas (the name, the id, the argument pieces);
  ``finish_reason`` becomes ``length`` when the answer stops inside the call.
- OpenAI Responses: ``output_item.added``, the ``function_call_arguments`` deltas and
  ``.done``, ``output_item.done`` and the response of ``response.completed`` (what
  ``get_final_response()`` reads); stopped inside the call, the stream ends in
  ``response.incomplete`` (``max_output_tokens``), as the API ends one.
- Anthropic Messages: ``content_block_start``, the ``input_json_delta`` pieces (which the
  SDK parses as they come); ``stop_reason`` becomes ``max_tokens`` when stopped.

The broken arguments go out in as many pieces as the recorded ones. A twin call follows
the first's last event, the indexes after it moved up by one; a stopped answer drops the
events of what came after the call. Events keep the timing of those they follow.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from . import _cohere_wire, _ollama_wire
from ._bedrock_wire import break_converse_stream
from ._gemini_wire import rewrite_stream
from ._shapes import refuse_tool_call_fault, wire_of
from ._tool_answers import WRITERS, function_item, write_item
from ._tool_calls import Breaker, Broken, ToolCall, Tools, pieces

Events = list[dict[str, Any]]
Rewriter = Callable[[Events, Breaker, Tools], Events | None]
"""Breaks the first tool call of a stream's events (a copy, changed in place); returns the
events as they go out, or ``None`` when the stream holds no tool call."""


def _data(events: Events) -> Iterator[tuple[int, dict[str, Any]]]:
    for position, event in enumerate(events):
        data = event.get("data")
        if isinstance(data, dict):
            yield position, data


def _spread(holders: list[dict[str, Any]], key: str, text: str, *, whole: bool = False) -> None:
    """``text`` written into the holders that hold ``key``: in as many pieces as they
    are, or (``whole``) all in the first and nothing in the others."""
    held = [holder for holder in holders if key in holder]
    parts = [text, *[""] * (len(held) - 1)] if whole else list(pieces(text, len(held)))
    for holder, part in zip(held, parts, strict=True):
        holder[key] = part


def _moved(data: dict[str, Any], key: str, at: int, broken: Broken) -> bool:
    """Whether the event ``data`` survives the break, its ``key`` (an index) moved past a
    twin at ``at``: the events of what comes after a call the answer stopped in do not."""
    index = data.get(key)
    if not isinstance(index, int) or index <= at:
        return True
    if broken.stopped:
        return False
    if broken.twin:
        data[key] = index + 1
    return True


def _chat(events: Events, breaker: Breaker, tools: Tools) -> Events | None:  # noqa: C901 - the deltas of a call, then what follows it
    where: tuple[Any, Any] | None = None
    entries: list[tuple[int, dict[str, Any]]] = []  # the first call's deltas, by position
    for position, data in _data(events):
        for choice in data.get("choices") or ():
            delta = choice.get("delta") if isinstance(choice, dict) else None
            for entry in (delta or {}).get("tool_calls") or ():
                key = (choice.get("index", 0), entry.get("index", 0))
                where = where or key
                if key == where:
                    entries.append((position, entry))
    if where is None:
        return None
    functions = [f for _, e in entries if isinstance(f := e.get("function"), dict)]
    call = ToolCall(
        "".join(str(f.get("name") or "") for f in functions),
        "".join(str(f.get("arguments") or "") for f in functions),
        next((str(e["id"]) for _, e in entries if e.get("id")), ""),
    )
    broken = breaker(call, tools)
    _spread(functions, "name", broken.call.name, whole=True)
    _spread(functions, "arguments", broken.call.arguments)
    for _, entry in entries:
        if entry.get("id"):
            entry["id"] = broken.call.id
    choice_at, call_at = where
    for _, data in _data(events):
        for choice in data.get("choices") or ():
            if not isinstance(choice, dict) or choice.get("index", 0) != choice_at:
                continue
            delta = choice.get("delta") or {}
            if delta.get("tool_calls"):
                delta["tool_calls"] = [
                    e for e in delta["tool_calls"] if _moved(e, "index", call_at, broken)
                ]
            if broken.stopped and choice.get("finish_reason"):
                choice["finish_reason"] = "length"
    if broken.twin:
        last = entries[-1][0]
        events.insert(last + 1, _chat_twin(events[last], choice_at, call_at + 1, broken.call))
    return events


def _chat_twin(after: dict[str, Any], choice: Any, index: int, call: ToolCall) -> dict[str, Any]:
    """A chunk that brings the twin call whole, in the envelope of the chunk ``after``."""
    data = {k: copy.deepcopy(v) for k, v in after["data"].items() if k not in ("choices", "usage")}
    function = {"name": call.name, "arguments": call.arguments}
    entry = {"index": index, "id": call.id, "type": "function", "function": function}
    delta = {"tool_calls": [entry]}
    data["choices"] = [{"index": choice, "delta": delta, "logprobs": None, "finish_reason": None}]
    return {**{k: v for k, v in after.items() if k != "data"}, "data": data}


def _twin(
    events: Events,
    key: str,
    index: int,
    field: str,
    text: str,
    holder: Callable[[dict[str, Any]], Any] = lambda data: data,
) -> Events:
    """Copies of a call's events for its twin at ``index`` (each event's ``key``): its
    arguments ``text`` whole in the first piece (``field`` of the event's ``holder``), the
    other pieces dropped."""
    out: Events = []
    seen = False
    for event in copy.deepcopy(events):
        data = event["data"]
        held = holder(data)
        if isinstance(held, dict) and field in held:
            if seen:
                continue
            seen, held[field] = True, text
        data[key] = index
        out.append(event)
    return out


def _responses(events: Events, breaker: Breaker, tools: Tools) -> Events | None:  # noqa: C901 - the events of an item, the response, then what follows
    added = next(
        (
            data
            for _, data in _data(events)
            if data.get("type") == "response.output_item.added"
            and isinstance(data.get("item"), dict)
            and data["item"].get("type") == "function_call"
        ),
        None,
    )
    if added is None:
        return None
    at = added.get("output_index", 0)
    mine = [(p, d) for p, d in _data(events) if d.get("output_index") == at and "response" not in d]
    deltas = [d for _, d in mine if d.get("type") == "response.function_call_arguments.delta"]
    call = function_item(added["item"])
    if deltas:
        call = ToolCall(call.name, "".join(str(d.get("delta", "")) for d in deltas), call.id)
    broken = breaker(call, tools)
    _spread(deltas, "delta", broken.call.arguments)
    for _, data in mine:
        kind = data.get("type")
        if kind in ("response.output_item.added", "response.output_item.done"):
            write_item(data["item"], broken, whole=kind == "response.output_item.done")
        elif kind == "response.function_call_arguments.done":
            data["arguments"] = broken.call.arguments
            if "name" in data:
                data["name"] = broken.call.name

    def fixed(call: ToolCall, tools: Tools) -> Broken:
        return broken  # the one break, written into the responses the events carry

    for _, data in _data(events):
        if isinstance(data.get("response"), dict):
            WRITERS["openai.responses"](data["response"], fixed, tools)
    own = [events[p] for p, _ in mine]
    out: Events = []
    for event in events:
        shown = event.get("data")
        if isinstance(shown, dict):
            if not _moved(shown, "output_index", at, broken):
                continue
            if broken.stopped and shown.get("type") == "response.completed":
                shown["type"] = "response.incomplete"
                if event.get("event") is not None:
                    event["event"] = "response.incomplete"
        out.append(event)
        if broken.twin and event is own[-1]:
            out.extend(_twin(own, "output_index", at + 1, "delta", broken.call.arguments))
    if broken.twin or broken.stopped:
        _renumber(out)
    return out


def _renumber(events: Events) -> None:
    """The Responses events' ``sequence_number`` made consecutive again."""
    numbered = [d for _, d in _data(events) if isinstance(d.get("sequence_number"), int)]
    first = numbered[0]["sequence_number"] if numbered else 0
    for offset, data in enumerate(numbered):
        data["sequence_number"] = first + offset


def _messages(events: Events, breaker: Breaker, tools: Tools) -> Events | None:
    start = next(
        (
            data
            for _, data in _data(events)
            if data.get("type") == "content_block_start"
            and isinstance(data.get("content_block"), dict)
            and data["content_block"].get("type") == "tool_use"
        ),
        None,
    )
    if start is None:
        return None
    at, block = start.get("index", 0), start["content_block"]
    mine = [
        event
        for event in events
        if isinstance(data := event.get("data"), dict)
        and str(data.get("type", "")).startswith("content_block")
        and data.get("index") == at
    ]
    deltas = [
        delta
        for event in mine
        if isinstance(delta := event["data"].get("delta"), dict)
        and delta.get("type") == "input_json_delta"
    ]
    arguments = "".join(str(delta.get("partial_json", "")) for delta in deltas)
    call = ToolCall(str(block.get("name", "")), arguments, block.get("id", ""))
    broken = breaker(call, tools)
    block["name"], block["id"] = broken.call.name, broken.call.id
    _spread(deltas, "partial_json", broken.call.arguments)
    out: Events = []
    for event in events:
        data = event.get("data")
        if isinstance(data, dict):
            blocks = str(data.get("type", "")).startswith("content_block")
            if blocks and not _moved(data, "index", at, broken):
                continue
            if broken.stopped and data.get("type") == "message_delta":
                data.setdefault("delta", {})["stop_reason"] = "max_tokens"
        out.append(event)
        if broken.twin and event is mine[-1]:
            text = broken.call.arguments
            out.extend(_twin(mine, "index", at + 1, "partial_json", text, _delta))
    return out


def _delta(data: dict[str, Any]) -> Any:
    return data.get("delta")


REWRITERS: Mapping[str, Rewriter] = {
    "openai.chat.completions": _chat,
    "openai.responses": _responses,
    "anthropic.messages": _messages,
    "ollama.chat": _ollama_wire.break_events,
    "cohere.chat": _cohere_wire.break_events,
    "gemini.stream_generate_content": rewrite_stream,
    "bedrock.converse_stream": break_converse_stream,
}
"""The rewriter of each call name whose streams carry tool calls."""


def break_events(name: str, events: Events, request: Any, breaker: Breaker) -> Events:
    """A copy of the stream ``events`` of the call ``name`` whose first tool call
    ``breaker`` breaks, reading the tools from ``request`` (the JSON body the call sent);
    ``events`` themselves when they hold no tool call."""
    rewrite = REWRITERS.get(name) or REWRITERS.get(wire_of(name))
    if rewrite is None:
        refuse_tool_call_fault(name, REWRITERS)
        return events
    changed = rewrite(copy.deepcopy(events), breaker, Tools(request))
    return events if changed is None else changed
