"""A tool loop on the openai SDK, written defensively against the misbehaviour catalogue.

Every answer is checked before the loop acts on it: the finish reason, a refusal, an empty
answer, a page that is not a completion, a repeated answer, each tool call's arguments
against the tool's schema, and each tool result against the shape the tool promises. When
a check fails the loop stops cleanly and says why (a degraded ``fd.Outcome``); it sends
the report, its one side effect, only after a run whose every input passed.

deck = fd.Deck.from_env()
print(run(client_for(deck), deck, "What's the weather in Paris?"))
"""

from __future__ import annotations

import json
from functools import partial
from typing import Any, cast

import openai
from openai.types.chat import (
    ChatCompletion,
    ChatCompletionMessage,
    ChatCompletionMessageParam,
    ChatCompletionToolParam,
)

import faultdeck as fd
from examples.openai_agent.agent import client_for

__all__ = ["TOOLS", "client_for", "get_weather", "run", "send_report"]

CITIES = ["Paris", "London"]
SKIES = {"sunny", "cloudy", "raining"}
WEATHER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"city": {"type": "string", "enum": CITIES}},
    "required": ["city"],
    "additionalProperties": False,
}
TOOLS: list[ChatCompletionToolParam] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Today's weather in a city.",
            "parameters": WEATHER_SCHEMA,
        },
    }
]


def get_weather(city: str) -> dict[str, Any]:
    """The read tool: a lookup, so the example needs nothing but the model."""
    return {"city": city, "sky": "sunny" if city == "Paris" else "raining", "temp_c": 21}


def send_report(text: str) -> dict[str, Any]:
    """The side-effect tool: the loop's own, never offered to the model."""
    return {"sent": True, "chars": len(text)}


def schema_errors(arguments: str) -> str | None:
    """Why ``arguments`` (the model's JSON text) break ``WEATHER_SCHEMA``, or ``None``."""
    try:
        value = json.loads(arguments)
    except ValueError:
        return "invalid_json"
    if not isinstance(value, dict):
        return "not_object"
    if set(value) - set(WEATHER_SCHEMA["properties"]):
        return "extra_property"
    if "city" not in value:
        return "missing_required"
    if not isinstance(value["city"], str):
        return "wrong_type"
    return None if value["city"] in CITIES else "enum_mismatch"


def call_errors(message: ChatCompletionMessage) -> str | None:
    """Why the message's tool calls cannot run, or ``None``: every one must."""
    calls = message.tool_calls or []
    if len({call.id for call in calls}) != len(calls):
        return "duplicate_id"
    for call in calls:
        if call.type != "function" or call.function.name != "get_weather":
            return "unknown_tool"
        broken = schema_errors(call.function.arguments)
        if broken:
            return broken
    return None


def result_ok(result: Any, city: str) -> bool:
    """The tool's result is data of the promised shape: nothing more, nothing else."""
    return (
        isinstance(result, dict)
        and set(result) == {"city", "sky", "temp_c"}
        and result["city"] == city
        and result["sky"] in SKIES
        and type(result["temp_c"]) is int
        and -60 <= result["temp_c"] <= 60
    )


def give_up(reason: str) -> fd.Outcome:
    """No answer to act on: the op degrades, saying why, and the run sends nothing."""
    return fd.Outcome("answer", "degraded", reason=reason)


def answer(
    client: openai.OpenAI, deck: fd.Deck, question: str, *, model: str, turns: int
) -> fd.Outcome:
    """Ask, run the tool calls that pass, and return the answer or why there is none."""
    messages: list[ChatCompletionMessageParam] = [{"role": "user", "content": question}]
    seen: set[str] = set()
    for _ in range(turns):
        try:
            reply = client.chat.completions.create(model=model, messages=messages, tools=TOOLS)
        except openai.APIError as exc:  # a 5xx page after the SDK's retries, a bad body…
            return give_up(f"upstream: {type(exc).__name__}")
        if not isinstance(cast(object, reply), ChatCompletion) or not reply.choices:
            return give_up("not_a_completion")  # an HTML page served with a 200
        if reply.id in seen:
            return give_up("stale")  # the same answer again: the model saw nothing new
        seen.add(reply.id)
        choice = reply.choices[0]
        if choice.finish_reason in ("length", "content_filter"):
            return give_up(choice.finish_reason)  # cut or filtered: nothing in it is whole
        message = choice.message
        if message.refusal:
            return give_up("refusal")
        if not message.tool_calls:
            text = (message.content or "").strip()
            return fd.Outcome("answer", "ok", value=text) if text else give_up("empty")
        messages.append(cast(ChatCompletionMessageParam, message.model_dump(exclude_none=True)))
        broken = call_errors(message)
        if broken:
            return give_up(f"schema: {broken}")  # asking again would be a new request
        for call in message.tool_calls:
            assert call.type == "function"  # call_errors let only function calls through
            city = json.loads(call.function.arguments)["city"]
            result = deck.call("tool", "get_weather", {"city": city}, partial(get_weather, city))
            if not result_ok(result, city):
                return give_up("tool_result")  # wrong, or carrying text it should not
            # Only the checked value reaches the model: a result is data, not instructions.
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result["sky"]})
    return give_up("turns")


def run(
    client: openai.OpenAI, deck: fd.Deck, question: str, *, model: str = "gpt-4o-mini"
) -> list[fd.Outcome]:
    """Answer ``question``, then report the answer: the report only after a clean answer."""
    with fd.step("answer"):
        outcome = answer(client, deck, question, model=model, turns=3)
    if outcome.status != "ok":
        return [outcome, fd.Outcome("report", "degraded", reason="no_answer")]
    text = str(outcome.value)
    with fd.step("report"):
        deck.call(
            "tool", "send_report", {"text": text}, lambda: send_report(text), side_effect=True
        )
    return [outcome, fd.Outcome("report", "ok")]
