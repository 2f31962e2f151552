"""A weather agent on the openai SDK's async client whose tool asks a weather service with
aiohttp.

The client takes its key and base URL from OPENAI_API_KEY and OPENAI_BASE_URL and keeps the
SDK's own retries; the weather service is at WEATHER_URL, which answers a city's weather
as text.
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

import aiohttp
import openai

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


async def get_weather(session: aiohttp.ClientSession, city: str) -> str:
    async with session.get(os.environ["WEATHER_URL"], params={"city": city}) as answer:
        answer.raise_for_status()
        return await answer.text()


async def main() -> None:
    client = openai.AsyncOpenAI()
    messages: list[Any] = [{"role": "user", "content": "What is the weather in Paris?"}]
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as session:
        for _ in range(4):
            reply = await client.chat.completions.create(
                model="gpt-4o-mini", messages=messages, tools=TOOLS
            )
            message = reply.choices[0].message
            if not message.tool_calls:
                print(message.content)
                return
            messages.append(message.model_dump(exclude_none=True))
            for call in message.tool_calls:
                assert call.type == "function", call
                arguments = json.loads(call.function.arguments)
                weather = await get_weather(session, **arguments)
                messages.append({"role": "tool", "tool_call_id": call.id, "content": weather})
    raise SystemExit("no answer after 4 turns")


if __name__ == "__main__":
    asyncio.run(main())
