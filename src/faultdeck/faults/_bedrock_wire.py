"""Bedrock's Converse format (``bedrock.converse``, ``bedrock.converse_stream``), and each
misbehaviour as it shows it (``_formats`` says what a ``Wire`` is).

An answer is ``{"output": {"message": {"role", "content": [blocks]}}, "stopReason",
"usage", "metrics"}``, a block one of ``{"text"}``, ``{"toolUse": {"toolUseId", "name",
"input"}}``, ``{"reasoningContent": {"reasoningText": {"text", "signature"}}}``. Its stream
is messageStart, then per block contentBlockStart (a tool use's id and name only),
contentBlockDelta (``text``, ``toolUse.input`` as JSON text, ``reasoningContent``) and
contentBlockStop, then messageStop (the ``stopReason``) and metadata (usage, metrics):
AWS event-stream messages, stored with their ``:event-type`` as the event's name.

An empty answer is no content ending ``end_turn``. Converse has no refusal stop: a refusal
is the model's text, ending ``end_turn``. A content filter stops with
``content_filtered``, keeping the text and dropping the tool uses (a guardrail's
``guardrail_intervened`` with ``stop="guardrail_intervened"``). A reasoning-only answer
holds one ``reasoningContent`` block. A broken tool call (``bad_tool_call``,
``length_stop``) is written into the first ``toolUse`` block: its ``input`` holds JSON, so
arguments that are not JSON go there as their text; a call stopped inside ends
``max_tokens``. A stream is broken by folding it, breaking the answer, unfolding it again.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import orjson

from ._formats import REASONING_TEXT, Body, Event, Wire, timed
from ._tool_calls import Breaker, Tools, break_input_call

Params = Mapping[str, Any]
Block = dict[str, Any]

SIGNATURE = "ZmF1bHRkZWNrOnJlYXNvbmluZ19vbmx5"
"""The opaque ``signature`` of a reasoning block the fault makes."""
_HEADERS = {":content-type": "application/json", ":message-type": "event"}


def _holds(body: Any) -> bool:
    output = body.get("output") if isinstance(body, dict) else None
    message = output.get("message") if isinstance(output, dict) else None
    return isinstance(message, dict) and isinstance(message.get("content"), list)


def _content(body: Body) -> list[Block]:
    content: list[Block] = body["output"]["message"]["content"]
    return content


def _stops(
    stop: Callable[[Params], str], content: Callable[[Params, list[Block]], list[Block]]
) -> Callable[[Params, Body], Body]:
    def show(params: Params, body: Body) -> Body:
        body["output"]["message"]["content"] = content(params, _content(body))
        body["stopReason"] = stop(params)
        return body

    return show


def _fold(events: list[Event]) -> Body | None:
    """The answer a Converse stream carries, as a non-streamed call gets it."""
    role = None
    blocks: dict[int, Block] = {}
    inputs: dict[int, str] = {}
    body: Body = {}
    for event in events:
        name, data = event.get("event"), event.get("data")
        if not isinstance(data, dict):
            continue
        index = data.get("contentBlockIndex", 0)
        if name == "messageStart":
            role = data.get("role", "assistant")
        elif name == "contentBlockStart":
            use = (data.get("start") or {}).get("toolUse")
            if isinstance(use, dict):
                blocks[index] = {"toolUse": {**use, "input": {}}}
                inputs[index] = ""
        elif name == "contentBlockDelta":
            _delta(blocks, inputs, index, data.get("delta") or {})
        elif name == "messageStop":
            body["stopReason"] = data.get("stopReason")
        elif name == "metadata":
            body.update({k: v for k, v in data.items() if k in ("usage", "metrics", "trace")})
    if role is None:
        return None
    for index, text in inputs.items():
        try:
            blocks[index]["toolUse"]["input"] = orjson.loads(text) if text else {}
        except orjson.JSONDecodeError:
            blocks[index]["toolUse"]["input"] = text
    content = [blocks[index] for index in sorted(blocks)]
    return {"output": {"message": {"role": role, "content": content}}, **body}


def _delta(blocks: dict[int, Block], inputs: dict[int, str], index: int, delta: Block) -> None:
    if "text" in delta:
        block = blocks.setdefault(index, {"text": ""})
        block["text"] = str(block.get("text", "")) + str(delta["text"])
    elif "toolUse" in delta and index in inputs:
        inputs[index] += str((delta["toolUse"] or {}).get("input", ""))
    elif "reasoningContent" in delta:
        block = blocks.setdefault(index, {"reasoningContent": {"reasoningText": {"text": ""}}})
        text = block["reasoningContent"]["reasoningText"]
        piece = delta["reasoningContent"] or {}
        text["text"] += str(piece.get("text", ""))
        if "signature" in piece:
            text["signature"] = piece["signature"]


def _unfold(body: Body, recorded: list[Event]) -> list[Event]:
    """The events Converse streams an answer as."""
    out: list[Event] = []

    def emit(kind: str, data: dict[str, Any]) -> None:
        out.append({"event": kind, "headers": dict(_HEADERS), "data": data})

    emit("messageStart", {"role": body["output"]["message"].get("role", "assistant")})
    for index, block in enumerate(_content(body)):
        use = block.get("toolUse")
        if isinstance(use, dict):
            start = {"toolUseId": use.get("toolUseId"), "name": use.get("name")}
            emit("contentBlockStart", {"contentBlockIndex": index, "start": {"toolUse": start}})
            given = use.get("input", {})
            text = given if isinstance(given, str) else orjson.dumps(given).decode()
            delta: Block = {"toolUse": {"input": text}}
        elif "reasoningContent" in block:
            delta = {"reasoningContent": dict(block["reasoningContent"].get("reasoningText", {}))}
        else:
            delta = {"text": block.get("text", "")}
        emit("contentBlockDelta", {"contentBlockIndex": index, "delta": delta})
        emit("contentBlockStop", {"contentBlockIndex": index})
    emit("messageStop", {"stopReason": body.get("stopReason")})
    emit("metadata", {k: body[k] for k in ("usage", "metrics") if k in body})
    return timed(out, recorded)


def _reasoning(params: Params, content: list[Block]) -> list[Block]:
    text = {"text": REASONING_TEXT, "signature": SIGNATURE}
    return [{"reasoningContent": {"reasoningText": text}}]


CONVERSE = Wire(
    "Bedrock Converse",
    _holds,
    _fold,
    _unfold,
    {
        "empty_answer": _stops(lambda p: "end_turn", lambda p, content: []),
        "refusal": _stops(lambda p: "end_turn", lambda p, content: [{"text": p["text"]}]),
        "content_filter": _stops(
            lambda p: "content_filtered",
            lambda p, content: [b for b in content if "toolUse" not in b],
        ),
        "reasoning_only": _stops(lambda p: "end_turn", _reasoning),
    },
)


def break_converse(body: dict[str, Any], breaker: Breaker, tools: Tools) -> bool:
    """Break a Converse answer's first tool use in place; ``False`` when it holds none."""
    if not _holds(body):
        return False
    content = _content(body)
    for index, block in enumerate(content):
        use = block.get("toolUse")
        if not isinstance(use, dict):
            continue
        if break_input_call(content, index, use, "toolUseId", breaker, tools).stopped:
            body["stopReason"] = "max_tokens"
        return True
    return False


def break_converse_stream(events: list[Event], breaker: Breaker, tools: Tools) -> Any:
    """A Converse stream whose first tool use is broken (``None`` when it holds none)."""
    body = _fold(events)
    if body is None or not break_converse(body, breaker, tools):
        return None
    return _unfold(body, events)
