"""A weather agent on the openai SDK whose tool asks a weather service with requests.

The client takes its key and base URL from OPENAI_API_KEY and OPENAI_BASE_URL and keeps the
SDK's own retries; the weather service is at WEATHER_URL, which answers a city's weather
as text.
"""

from __future__ import annotations

import json
import os
from typing import Any

import openai
import requests

TOOLS: list[Any] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "The weather in a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]


def get_weather(city: str) -> str:
    answer = requests.get(os.environ["WEATHER_URL"], params={"city": city}, timeout=10)
    answer.raise_for_status()
    return answer.text


def main() -> None:
    client = openai.OpenAI()
    messages: list[Any] = [{"role": "user", "content": "What is the weather in Paris?"}]
    for _ in range(4):
        reply = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=TOOLS)
        message = reply.choices[0].message
        if not message.tool_calls:
            print(message.content)
            return
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls:
            assert call.type == "function", call
            arguments = json.loads(call.function.arguments)
            messages.append(
                {"role": "tool", "tool_call_id": call.id, "content": get_weather(**arguments)}
            )
    raise SystemExit("no answer after 4 turns")


if __name__ == "__main__":
    main()
