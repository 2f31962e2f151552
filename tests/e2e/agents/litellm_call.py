"""A weather agent on litellm: a tool loop of two model turns through one completion
function.

litellm sends ``openai/…`` models to OPENAI_BASE_URL with OPENAI_API_KEY through an openai SDK
client it makes, with that client's default retries (two, honouring Retry-After).
"""

from __future__ import annotations

import json
from typing import Any

import litellm

TOOLS: list[dict[str, Any]] = [
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
    return "sunny" if city == "Paris" else "unknown"


def main() -> None:
    messages: list[Any] = [{"role": "user", "content": "What is the weather in Paris?"}]
    for _ in range(4):
        reply: Any = litellm.completion(model="openai/gpt-4o-mini", messages=messages, tools=TOOLS)
        message = reply.choices[0].message
        if not message.tool_calls:
            print(message.content)
            return
        messages.append(message)
        for call in message.tool_calls:
            arguments = json.loads(call.function.arguments)
            messages.append(
                {"role": "tool", "tool_call_id": call.id, "content": get_weather(**arguments)}
            )
    raise SystemExit("no answer after 4 turns")


if __name__ == "__main__":
    main()
