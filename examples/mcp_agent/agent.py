"""A tool-calling agent on the openai SDK whose tools come from an MCP server, with the
model's HTTP and the MCP session going through one deck (one cassette).

    async with fd.Deck("cassettes/mcp_weather.jsonl", mode="record") as deck:
        async with faultdeck.mcp.Client(deck, server) as tools:
            print(await run(model_client(deck, base_url=url), tools, "Weather in Paris?"))

The loop: the server's tools (``list_tools``) become the model's tool specs; each tool call
the model asks for is an MCP ``call_tool``; a result with ``isError`` goes back to the model
as text that says so, and the loop goes on.
"""

from __future__ import annotations

import json
import os
from typing import Any, cast

import httpx2
import mcp_types as types
import openai
from openai.types.chat import ChatCompletionMessageParam, ChatCompletionToolParam

import faultdeck as fd
from faultdeck.http import AsyncTransport
from faultdeck.mcp import Client


def model_client(
    deck: fd.Deck,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    network: Any = None,
) -> openai.AsyncOpenAI:
    """An async OpenAI client whose HTTP goes through ``deck`` (and, live, ``network``)."""
    return openai.AsyncOpenAI(
        base_url=base_url or os.environ.get("OPENAI_BASE_URL", "https://api.openai.com/v1"),
        api_key=api_key or os.environ.get("OPENAI_API_KEY", "sk-replay-needs-no-key"),
        http_client=httpx2.AsyncClient(
            transport=AsyncTransport(deck, httpx=httpx2, transport=network)
        ),
    )


def tool_spec(tool: types.Tool) -> ChatCompletionToolParam:
    """An MCP tool as an OpenAI function tool: its name, description and inputSchema."""
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description or "",
            "parameters": dict(tool.input_schema),
        },
    }


def tool_text(result: types.CallToolResult) -> str:
    """What the model reads of a tool's result: its text blocks; an error says it is one."""
    text = " ".join(b.text for b in result.content if isinstance(b, types.TextContent))
    return f"error: {text}" if result.is_error else text


async def run(
    llm: openai.AsyncOpenAI,
    tools: Client,
    question: str,
    *,
    model: str = "gpt-4o-mini",
    turns: int = 4,
) -> str:
    """Ask, run through MCP the tools the model calls, and return its answer."""
    specs = [tool_spec(tool) for tool in (await tools.list_tools()).tools]
    messages: list[ChatCompletionMessageParam] = [{"role": "user", "content": question}]
    for _ in range(turns):
        reply = await llm.chat.completions.create(model=model, messages=messages, tools=specs)
        message = reply.choices[0].message
        if not message.tool_calls:
            return message.content or ""
        messages.append(cast(ChatCompletionMessageParam, message.model_dump(exclude_none=True)))
        for call in message.tool_calls:
            if call.type != "function":
                continue
            arguments = json.loads(call.function.arguments)
            result = await tools.call_tool(call.function.name, arguments)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": tool_text(result)})
    return "no answer"
