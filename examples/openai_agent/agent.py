"""A small tool-calling agent on the openai SDK, with every request going through a deck.

deck = fd.Deck.from_env()                 # or fd.Deck("cassettes/weather.jsonl", mode=…)
print(run(client_for(deck), "What's the weather in Paris?"))
"""

from __future__ import annotations

import json
import os
from typing import Any, cast

import httpx2
import openai
from openai.types.chat import ChatCompletionMessageParam, ChatCompletionToolParam

import faultdeck as fd
from faultdeck.http import Transport

TOOLS: list[ChatCompletionToolParam] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Today's weather in a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]
WEATHER = {"Paris": "sunny", "London": "raining"}


def get_weather(city: str) -> str:
    """The tool: a lookup, so the example needs nothing but the model."""
    return WEATHER.get(city, "unknown")


def client_for(
    deck: fd.Deck,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    network: Any = None,
) -> openai.OpenAI:
    """An OpenAI client whose HTTP goes through ``deck`` (and, live, through ``network``)."""
    return openai.OpenAI(
        base_url=base_url or os.environ.get("OPENAI_BASE_URL", "https://api.openai.com/v1"),
        api_key=api_key or os.environ.get("OPENAI_API_KEY", "sk-replay-needs-no-key"),
        http_client=httpx2.Client(transport=Transport(deck, httpx=httpx2, transport=network)),
    )


def run(client: openai.OpenAI, question: str, *, model: str = "gpt-4o-mini", turns: int = 4) -> str:
    """Ask, run the tools the model calls, and return its answer."""
    messages: list[ChatCompletionMessageParam] = [{"role": "user", "content": question}]
    for _ in range(turns):
        reply = client.chat.completions.create(model=model, messages=messages, tools=TOOLS)
        message = reply.choices[0].message
        if not message.tool_calls:
            return message.content or ""
        messages.append(cast(ChatCompletionMessageParam, message.model_dump(exclude_none=True)))
        for call in message.tool_calls:
            if call.type != "function":
                continue
            arguments = json.loads(call.function.arguments)
            messages.append(
                {"role": "tool", "tool_call_id": call.id, "content": get_weather(**arguments)}
            )
    return "no answer"


if __name__ == "__main__":
    deck = fd.Deck.from_env()
    with client_for(deck) as client:
        print(run(client, "What's the weather in Paris?"))
