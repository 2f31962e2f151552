"""A weather agent on the openai SDK that reads its tool's errors back to the model.

The tool asks a weather service with requests; when the service fails (a timeout, a 5xx,
a dropped connection, a 429), the agent does not die: it tells the model what went wrong
in the tool's message, and the model answers from that. So a fault at the tool's request
leads to a request the clean run never sent.
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
    try:
        answer = requests.get(os.environ["WEATHER_URL"], params={"city": city}, timeout=10)
        answer.raise_for_status()
    except requests.RequestException as exc:
        return f"error: the weather service failed ({type(exc).__name__})"
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
