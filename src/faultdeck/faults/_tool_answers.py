"""A broken tool call written into a whole (non-streamed) answer, as each provider shows it.

One writer per provider shape, in ``WRITERS``: it finds the answer's first tool call, asks
the fault how it breaks (a ``Breaker``, with the tools the request offered) and writes the
``Broken`` call back where the SDK reads it: OpenAI Chat Completions' ``tool_calls``,
Responses' ``function_call`` output item, Anthropic's ``tool_use`` block. A twin goes right
after the call; an answer stopped inside the call loses what came after it and says why
(``finish_reason: length``, ``status: incomplete`` with ``max_output_tokens``,
``stop_reason: max_tokens``). Anthropic's ``input`` holds only JSON: arguments that are not
JSON go there as their text (the one way that shape can show them), and a cut call keeps
the properties that fit whole (as the SDK's partial parser reads a cut stream).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

from . import _cohere_wire, _ollama_wire
from ._bedrock_wire import break_converse
from ._gemini_wire import write_call
from ._shapes import refuse_tool_call_fault, wire_of
from ._tool_calls import Breaker, Broken, ToolCall, Tools, break_function_call, break_input_call

Writer = Callable[[dict[str, Any], Breaker, Tools], bool]
"""Breaks the first tool call of an answer in place; ``False`` when it holds none."""


def _chat(body: dict[str, Any], breaker: Breaker, tools: Tools) -> bool:
    for choice in body.get("choices") or ():
        message = choice.get("message") if isinstance(choice, dict) else None
        calls = message.get("tool_calls") if isinstance(message, dict) else None
        broken = break_function_call(calls, breaker, tools)
        if broken is None:
            continue
        if broken.stopped:
            choice["finish_reason"] = "length"
        return True
    return False


def function_item(item: dict[str, Any]) -> ToolCall:
    """The call a Responses ``function_call`` item holds."""
    return ToolCall(
        str(item.get("name", "")), str(item.get("arguments", "")), item.get("call_id", "")
    )


def write_item(item: dict[str, Any], broken: Broken, *, whole: bool = True) -> None:
    """A Responses ``function_call`` item as ``broken`` has it: its name and call id, and,
    when it is ``whole`` (not the item a stream opens with, whose arguments the deltas
    fill), its arguments and status."""
    item["name"], item["call_id"] = broken.call.name, broken.call.id
    if whole:
        item["arguments"] = broken.call.arguments
        if broken.stopped:
            item["status"] = "incomplete"


def _responses(body: dict[str, Any], breaker: Breaker, tools: Tools) -> bool:
    output = body.get("output")
    if not isinstance(output, list):
        return False
    for index, item in enumerate(output):
        if not isinstance(item, dict) or item.get("type") != "function_call":
            continue
        broken = breaker(function_item(item), tools)
        write_item(item, broken)
        if broken.twin:
            output.insert(index + 1, copy.deepcopy(item))
        if broken.stopped:
            del output[index + 1 :]
            body["status"] = "incomplete"
            body["incomplete_details"] = {"reason": "max_output_tokens"}
        return True
    return False


def _messages(body: dict[str, Any], breaker: Breaker, tools: Tools) -> bool:
    content = body.get("content")
    if not isinstance(content, list):
        return False
    for index, block in enumerate(content):
        if not isinstance(block, dict) or block.get("type") != "tool_use":
            continue
        if break_input_call(content, index, block, "id", breaker, tools).stopped:
            body["stop_reason"] = "max_tokens"
        return True
    return False


WRITERS: Mapping[str, Writer] = {
    "openai.chat.completions": _chat,
    "openai.responses": _responses,
    "anthropic.messages": _messages,
    "ollama.chat": _ollama_wire.break_answer,
    "cohere.chat": _cohere_wire.break_answer,
    "gemini.generate_content": write_call,
    "bedrock.converse": break_converse,
}
"""The writer of each call name whose answers carry tool calls."""


def break_answer(name: str, body: Any, request: Any, breaker: Breaker) -> Any:
    """A copy of the answer ``body`` of the call ``name`` whose first tool call ``breaker``
    breaks, reading the tools from ``request`` (the JSON body the call sent); ``body``
    itself when it holds no tool call."""
    write = WRITERS.get(name) or WRITERS.get(wire_of(name))
    if write is None:
        refuse_tool_call_fault(name, WRITERS)
    if write is None or not isinstance(body, dict):
        return body
    changed = copy.deepcopy(body)
    return changed if write(changed, breaker, Tools(request)) else body
