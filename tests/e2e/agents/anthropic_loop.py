"""A weather agent on the anthropic SDK: a tool loop of two model turns.

The client takes its key and base URL from ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL, and
keeps the SDK's own retries (two, honouring Retry-After).
"""

from __future__ import annotations

from typing import Any

import anthropic

TOOLS: list[Any] = [
    {
        "name": "get_weather",
        "description": "The weather in a city.",
        "input_schema": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    }
]


def get_weather(city: str) -> str:
    return "sunny" if city == "Paris" else "unknown"


def main() -> None:
    client = anthropic.Anthropic()
    messages: list[Any] = [{"role": "user", "content": "What is the weather in Paris?"}]
    for _ in range(4):
        reply = client.messages.create(
            model="claude-haiku-4-5", max_tokens=256, messages=messages, tools=TOOLS
        )
        uses = [block for block in reply.content if block.type == "tool_use"]
        if not uses:
            print("".join(block.text for block in reply.content if block.type == "text"))
            return
        messages.append({"role": "assistant", "content": reply.content})
        messages.append(
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": use.id,
                        "content": get_weather(str(use.input["city"])),
                    }
                    for use in uses
                ],
            }
        )
    raise SystemExit("no answer after 4 turns")


if __name__ == "__main__":
    main()
