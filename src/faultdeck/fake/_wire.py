"""A script's turn as each API writes it: OpenAI Chat Completions, OpenAI Responses and
Anthropic Messages, whole or as the server-sent events their SDKs stream.

Each answer is whole as its SDK parses it, strict validation included: ids, the finish,
usage (words counted as tokens). Ids are made from the request, so the same request gets
the same ids; ``created`` is the time of answering, as a provider's is.
"""

from __future__ import annotations

import hashlib
import time
from typing import Any

import orjson

from ._script import Turn

Body = dict[str, Any]
Event = tuple[str | None, Body | str]
"""A server-sent event: its name (or none) and its data."""


def ids(seed: bytes, prefix: str, n: int = 1) -> list[str]:
    """``n`` ids made from ``seed``: the same request gets the same ones."""
    return [f"{prefix}{hashlib.sha256(seed + bytes([i % 256])).hexdigest()[:24]}" for i in range(n)]


def _tokens(value: Any) -> int:
    return len(str(value).split()) if value else 0


def _words(text: str) -> list[str]:
    """The text in pieces as a model streams it: each word with the space before it."""
    words = text.split(" ")
    return [words[0], *(f" {w}" for w in words[1:])] if text else []


def _arguments(arguments: dict[str, Any]) -> str:
    return orjson.dumps(arguments).decode()


# -- OpenAI Chat Completions ------------------------------------------------------------


def chat(body: Body, turn: Turn, seed: bytes) -> Body:
    """A whole chat completion."""
    message: Body = {"role": "assistant", "content": turn.text, "refusal": None, "annotations": []}
    if turn.tool_calls:
        message["tool_calls"] = [
            {"id": call_id, "type": "function", "function": {"name": n, "arguments": _arguments(a)}}
            for call_id, (n, a) in zip(
                ids(seed, "call_", len(turn.tool_calls)), turn.tool_calls, strict=True
            )
        ]
    finish = "tool_calls" if turn.tool_calls else "stop"
    return {
        **_chat_head(body, seed, "chat.completion"),
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}],
        "usage": _chat_usage(body, turn),
    }


def chat_events(body: Body, turn: Turn, seed: bytes) -> list[Event]:
    """A chat completion as its stream of chunks, ending ``[DONE]``."""
    head = _chat_head(body, seed, "chat.completion.chunk")

    def chunk(delta: Body, finish: str | None = None) -> Event:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return None, {**head, "choices": [choice]}

    events = [chunk({"role": "assistant", "content": ""})]
    events += [chunk({"content": word}) for word in _words(turn.text or "")]
    call_ids = ids(seed, "call_", len(turn.tool_calls))
    for i, (call_id, (name, arguments)) in enumerate(zip(call_ids, turn.tool_calls, strict=True)):
        function = {"name": name, "arguments": ""}
        events.append(
            chunk(
                {
                    "tool_calls": [
                        {"index": i, "id": call_id, "type": "function", "function": function}
                    ]
                }
            )
        )
        events.append(
            chunk({"tool_calls": [{"index": i, "function": {"arguments": _arguments(arguments)}}]})
        )
    events.append(chunk({}, "tool_calls" if turn.tool_calls else "stop"))
    options = body.get("stream_options")
    if isinstance(options, dict) and options.get("include_usage"):
        events.append((None, {**head, "choices": [], "usage": _chat_usage(body, turn)}))
    events.append((None, "[DONE]"))
    return events


def _chat_head(body: Body, seed: bytes, kind: str) -> Body:
    return {
        "id": ids(seed, "chatcmpl-")[0],
        "object": kind,
        "created": int(time.time()),
        "model": str(body.get("model") or "fake-model"),
        "system_fingerprint": "fp_faultdeck_fake",
    }


def _chat_usage(body: Body, turn: Turn) -> Body:
    asked = _tokens(body.get("messages"))
    said = _tokens(turn.text) + sum(_tokens(_arguments(a)) + 1 for _, a in turn.tool_calls)
    return {"prompt_tokens": asked, "completion_tokens": said, "total_tokens": asked + said}


# -- OpenAI Responses ---------------------------------------------------------------------


def response(body: Body, turn: Turn, seed: bytes, status: str = "completed") -> Body:
    """A whole Responses API response (``status`` ``in_progress``: the one a stream opens
    with, no output yet)."""
    done = status == "completed"
    asked, said = _tokens(body.get("input")), _tokens(turn.text)
    usage = {
        "input_tokens": asked,
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens": said,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": asked + said,
    }
    return {
        "id": ids(seed, "resp_")[0],
        "object": "response",
        "created_at": int(time.time()),
        "status": status,
        "completed_at": int(time.time()) if done else None,
        "background": False,
        "error": None,
        "incomplete_details": None,
        "instructions": body.get("instructions"),
        "max_output_tokens": body.get("max_output_tokens"),
        "max_tool_calls": None,
        "model": str(body.get("model") or "fake-model"),
        "output": _output(turn, seed) if done else [],
        "parallel_tool_calls": True,
        "previous_response_id": body.get("previous_response_id"),
        "reasoning": {"effort": None, "summary": None},
        "service_tier": "default",
        "store": True,
        "temperature": 1.0,
        "text": {"format": {"type": "text"}, "verbosity": "medium"},
        "tool_choice": "auto",
        "tools": [],
        "top_logprobs": 0,
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": usage if done else None,
        "user": None,
        "metadata": {},
    }


def _output(turn: Turn, seed: bytes) -> list[Body]:
    if turn.text is not None:
        part = {"type": "output_text", "text": turn.text, "annotations": [], "logprobs": []}
        item_id = ids(seed, "msg_")[0]
        return [
            {
                "id": item_id,
                "type": "message",
                "status": "completed",
                "role": "assistant",
                "content": [part],
            }
        ]
    item_ids = ids(seed, "fc_", len(turn.tool_calls))
    call_ids = ids(seed + b"call", "call_", len(turn.tool_calls))
    return [
        {
            "id": i,
            "type": "function_call",
            "status": "completed",
            "call_id": c,
            "name": n,
            "arguments": _arguments(a),
        }
        for i, c, (n, a) in zip(item_ids, call_ids, turn.tool_calls, strict=True)
    ]


def response_events(body: Body, turn: Turn, seed: bytes) -> list[Event]:
    """A Responses API response as its stream of typed events."""
    events: list[Event] = []

    def emit(kind: str, **fields: Any) -> None:
        events.append((kind, {"type": kind, "sequence_number": len(events), **fields}))

    emit("response.created", response=response(body, turn, seed, "in_progress"))
    for index, item in enumerate(_output(turn, seed)):
        if item["type"] == "message":
            text = item["content"][0]["text"]
            where = {"item_id": item["id"], "output_index": index, "content_index": 0}
            emit(
                "response.output_item.added",
                output_index=index,
                item={**item, "status": "in_progress", "content": []},
            )
            emit(
                "response.content_part.added",
                **where,
                part={"type": "output_text", "text": "", "annotations": [], "logprobs": []},
            )
            for word in _words(text):
                emit("response.output_text.delta", **where, delta=word, logprobs=[])
            emit("response.output_text.done", **where, text=text, logprobs=[])
            emit("response.content_part.done", **where, part=item["content"][0])
        else:
            emit(
                "response.output_item.added",
                output_index=index,
                item={**item, "status": "in_progress", "arguments": ""},
            )
            emit(
                "response.function_call_arguments.delta",
                item_id=item["id"],
                output_index=index,
                delta=item["arguments"],
            )
            emit(
                "response.function_call_arguments.done",
                item_id=item["id"],
                output_index=index,
                arguments=item["arguments"],
            )
        emit("response.output_item.done", output_index=index, item=item)
    emit("response.completed", response=response(body, turn, seed))
    return events


# -- Anthropic Messages -------------------------------------------------------------------


def message(body: Body, turn: Turn, seed: bytes) -> Body:
    """A whole Anthropic message."""
    head, stop = _message_head(body, seed), _stop(turn)
    usage = {**head["usage"], **stop["usage"]}
    return {**head, "content": _blocks(turn, seed), **stop, "usage": usage}


def message_events(body: Body, turn: Turn, seed: bytes) -> list[Event]:
    """An Anthropic message as its stream of events."""
    events: list[Event] = []

    def emit(kind: str, **fields: Any) -> None:
        events.append((kind, {"type": kind, **fields}))

    opened = {
        **_message_head(body, seed),
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
    }
    emit("message_start", message=opened)
    for index, block in enumerate(_blocks(turn, seed)):
        if block["type"] == "text":
            emit("content_block_start", index=index, content_block={"type": "text", "text": ""})
            for word in _words(block["text"]):
                emit("content_block_delta", index=index, delta={"type": "text_delta", "text": word})
        else:
            emit("content_block_start", index=index, content_block={**block, "input": {}})
            partial = {"type": "input_json_delta", "partial_json": _arguments(block["input"])}
            emit("content_block_delta", index=index, delta=partial)
        emit("content_block_stop", index=index)
    stop = _stop(turn)
    emit(
        "message_delta",
        delta={"stop_reason": stop["stop_reason"], "stop_sequence": None},
        usage={"output_tokens": stop["usage"]["output_tokens"]},
    )
    emit("message_stop")
    return events


def _message_head(body: Body, seed: bytes) -> Body:
    asked = _tokens(body.get("messages")) + _tokens(body.get("system"))
    return {
        "id": ids(seed, "msg_")[0],
        "type": "message",
        "role": "assistant",
        "model": str(body.get("model") or "fake-model"),
        "usage": {"input_tokens": asked, "output_tokens": 1},
    }


def _blocks(turn: Turn, seed: bytes) -> list[Body]:
    if turn.text is not None:
        return [{"type": "text", "text": turn.text}]
    return [
        {"type": "tool_use", "id": tool_id, "name": name, "input": arguments}
        for tool_id, (name, arguments) in zip(
            ids(seed, "toolu_", len(turn.tool_calls)), turn.tool_calls, strict=True
        )
    ]


def _stop(turn: Turn) -> Body:
    said = _tokens(turn.text) + sum(_tokens(_arguments(a)) + 1 for _, a in turn.tool_calls)
    return {
        "stop_reason": "tool_use" if turn.tool_calls else "end_turn",
        "stop_sequence": None,
        "usage": {"output_tokens": said},
    }
