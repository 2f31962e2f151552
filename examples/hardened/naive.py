"""The same loop as ``agent.py`` with none of its checks: what most first drafts look like.

It parses the arguments as they come, trusts the finish reason and the tool's result, and
sends the report after every run. It reads the same recording the same way on the happy
path, so a fault is all it takes to tell the two apart.
"""

from __future__ import annotations

import json
from functools import partial
from typing import cast

import openai
from openai.types.chat import ChatCompletionMessageParam

import faultdeck as fd

from .agent import TOOLS, get_weather, send_report


def run(
    client: openai.OpenAI, deck: fd.Deck, question: str, *, model: str = "gpt-4o-mini"
) -> list[fd.Outcome]:
    """Ask, run the tools, report the answer: no check anywhere."""
    messages: list[ChatCompletionMessageParam] = [{"role": "user", "content": question}]
    text = ""
    with fd.step("answer"):
        for _ in range(3):
            reply = client.chat.completions.create(model=model, messages=messages, tools=TOOLS)
            message = reply.choices[0].message
            if not message.tool_calls:
                text = message.content or ""
                break
            messages.append(cast(ChatCompletionMessageParam, message.model_dump(exclude_none=True)))
            for call in message.tool_calls:
                if call.type != "function":
                    continue
                city = json.loads(call.function.arguments)["city"]
                result = deck.call(
                    "tool", "get_weather", {"city": city}, partial(get_weather, city)
                )
                messages.append({"role": "tool", "tool_call_id": call.id, "content": result["sky"]})
    with fd.step("report"):
        deck.call(
            "tool", "send_report", {"text": text}, lambda: send_report(text), side_effect=True
        )
    return [fd.Outcome("answer", "ok", value=text), fd.Outcome("report", "ok")]
