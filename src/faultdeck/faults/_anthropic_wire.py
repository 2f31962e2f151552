"""Anthropic's Messages format, and each misbehaviour as it shows it (``_formats`` says what
a ``Wire`` is).

An empty answer is ``content: []`` ending ``end_turn``. A refusal ends with the API's own
refusal stop, ``stop_reason: "refusal"``, its text in ``stop_details.explanation`` and no
content. The Messages API has no ``content_filter`` stop: its policy filter stops a reply
the same way, keeping what came before; so a content filter keeps the text blocks, drops
the ``tool_use`` blocks and stops with ``refusal``. A reasoning-only answer holds one
``thinking`` block (with its ``signature``, as the SDK expects) and ends ``end_turn``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import orjson

from ._formats import REASONING_TEXT, Body, Event, Wire, data_of, timed

Params = Mapping[str, Any]
Block = dict[str, Any]

SIGNATURE = "ZmF1bHRkZWNrOnJlYXNvbmluZ19vbmx5"
"""The opaque ``signature`` of a thinking block the fault makes (``faultdeck:reasoning_only``
in base64)."""


def _holds(body: Any) -> bool:
    return (
        isinstance(body, dict)
        and body.get("type") == "message"
        and isinstance(body.get("content"), list)
    )


def _stops(
    stop: str,
    content: Callable[[Params, list[Block]], list[Block]],
    explained: Callable[[Params], str | None] | None = None,
) -> Callable[[Params, Body], Body]:
    """A misbehaviour: the content ``content`` makes of the answer's, ending with ``stop``
    (and, for a refusal, the ``stop_details`` that explain it)."""

    def show(params: Params, body: Body) -> Body:
        body["content"] = content(params, body["content"])
        body.update(stop_reason=stop, stop_sequence=None)
        if explained is not None:
            body["stop_details"] = {
                "type": "refusal",
                "category": None,
                "explanation": explained(params),
            }
        else:
            body.pop("stop_details", None)
        return body

    return show


def _thinking(params: Params, content: list[Block]) -> list[Block]:
    return [{"type": "thinking", "thinking": REASONING_TEXT, "signature": SIGNATURE}]


def _fold(events: list[Event]) -> Body | None:
    """The message a stream carries, as the SDK accumulates it."""
    data = data_of(events)
    start = next((d.get("message") for d in data if d.get("type") == "message_start"), None)
    if not isinstance(start, dict):
        return None
    body: Body = {**start}
    blocks: dict[int, Block] = {}
    partial: dict[int, str] = {}
    for d in data:
        kind, index = d.get("type"), d.get("index", 0)
        if kind == "content_block_start" and isinstance(d.get("content_block"), dict):
            blocks[index] = dict(d["content_block"])
        elif kind == "content_block_delta" and index in blocks:
            delta = d.get("delta") or {}
            _DELTAS.get(str(delta.get("type")), _ignored)(blocks[index], delta, partial, index)
        elif kind == "message_delta":
            body.update(d.get("delta") or {})
            body["usage"] = {**(body.get("usage") or {}), **(d.get("usage") or {})}
    for index, text in partial.items():
        try:
            blocks[index]["input"] = orjson.loads(text)
        except orjson.JSONDecodeError:
            blocks[index]["input"] = {}
    body["content"] = [blocks[index] for index in sorted(blocks)]
    return body


def _added(field: str) -> Callable[[Block, dict[str, Any], dict[int, str], int], None]:
    def add(block: Block, delta: dict[str, Any], partial: dict[int, str], index: int) -> None:
        block[field] = str(block.get(field) or "") + str(delta.get(field) or "")

    return add


def _json(block: Block, delta: dict[str, Any], partial: dict[int, str], index: int) -> None:
    partial[index] = partial.get(index, "") + str(delta.get("partial_json") or "")


def _signed(block: Block, delta: dict[str, Any], partial: dict[int, str], index: int) -> None:
    block["signature"] = delta.get("signature", "")


def _ignored(block: Block, delta: dict[str, Any], partial: dict[int, str], index: int) -> None:
    """A delta whose content a misbehaviour never reads (a citation)."""


_DELTAS = {
    "text_delta": _added("text"),
    "thinking_delta": _added("thinking"),
    "signature_delta": _signed,
    "input_json_delta": _json,
}
"""Delta type -> how it fills in its block."""


def _unfold(body: Body, recorded: list[Event]) -> list[Event]:
    """The events the API streams a message as: its start (no content, no stop yet), each
    block started, filled in and stopped, the stop with its usage, the end."""
    out: list[Event] = []

    def emit(kind: str, **fields: Any) -> None:
        out.append({"event": kind, "data": {"type": kind, **fields}})

    start = {**body, "content": [], "stop_reason": None, "stop_sequence": None}
    start.pop("stop_details", None)
    emit("message_start", message=start)
    for index, block in enumerate(body["content"]):
        begun, deltas = _BLOCKS.get(block.get("type"), _as_is)(block)
        emit("content_block_start", index=index, content_block=begun)
        for delta in deltas:
            emit("content_block_delta", index=index, delta=delta)
        emit("content_block_stop", index=index)
    stop = {"stop_reason": body.get("stop_reason"), "stop_sequence": body.get("stop_sequence")}
    if body.get("stop_details") is not None:
        stop["stop_details"] = body["stop_details"]
    usage = {"output_tokens": (body.get("usage") or {}).get("output_tokens", 0)}
    emit("message_delta", delta=stop, usage=usage)
    emit("message_stop")
    return timed(out, recorded)


Streamed = tuple[Block, list[dict[str, Any]]]


def _text(block: Block) -> Streamed:
    return {**block, "text": ""}, [{"type": "text_delta", "text": block.get("text", "")}]


def _tool_use(block: Block) -> Streamed:
    arguments = orjson.dumps(block.get("input", {})).decode()
    return {**block, "input": {}}, [{"type": "input_json_delta", "partial_json": arguments}]


def _thought(block: Block) -> Streamed:
    deltas = [
        {"type": "thinking_delta", "thinking": block.get("thinking", "")},
        {"type": "signature_delta", "signature": block.get("signature", "")},
    ]
    return {**block, "thinking": "", "signature": ""}, deltas


def _as_is(block: Block) -> Streamed:
    return block, []


_BLOCKS = {"text": _text, "tool_use": _tool_use, "thinking": _thought}
"""Block type -> (the block as it starts, the deltas that fill it in)."""

MESSAGES = Wire(
    "Anthropic Messages",
    _holds,
    _fold,
    _unfold,
    {
        "empty_answer": _stops("end_turn", lambda p, content: []),
        "refusal": _stops("refusal", lambda p, content: [], lambda p: p["text"]),
        "content_filter": _stops(
            "refusal",
            lambda p, content: [b for b in content if b.get("type") != "tool_use"],
            lambda p: None,
        ),
        "reasoning_only": _stops("end_turn", _thinking),
    },
)
