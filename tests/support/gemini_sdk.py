"""The google-genai SDK driven through a deck: a client whose httpx client goes through
``fd.http.Transport``, and a tool-calling turn against ``fake_gemini``'s script."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
from google import genai
from google.genai import types

import faultdeck as fd
from faultdeck.http import AsyncTransport, Transport

KEY = "AIza" + "SyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW"  # a Google API key's shape
MODEL = "gemini-2.0-flash"
DEAD = "http://127.0.0.1:9"  # nothing listens: a replay that went live would fail loudly
WEATHER = types.FunctionDeclaration(
    name="get_weather",
    description="The weather in a city.",
    parameters_json_schema={
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
)
CONFIG = types.GenerateContentConfig(
    tools=[types.Tool(function_declarations=[WEATHER])],
    automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
)
ASK = [types.Content(role="user", parts=[types.Part(text="What is the weather?")])]


@contextmanager
def client(deck: fd.Deck, url: str) -> Iterator[genai.Client]:
    """The SDK's client, its httpx client going through ``deck``."""
    with httpx.Client(transport=Transport(deck)) as http:
        options = types.HttpOptions(base_url=url, httpx_client=http)
        yield genai.Client(api_key=KEY, http_options=options)


def arun(deck: fd.Deck, url: str, *, stream: bool) -> str:
    """``aturn`` on the SDK's async client, its httpx client going through ``deck``."""

    async def main() -> str:
        async with httpx.AsyncClient(transport=AsyncTransport(deck)) as http:
            options = types.HttpOptions(base_url=url, httpx_async_client=http)
            return await aturn(genai.Client(api_key=KEY, http_options=options), stream=stream)

    return asyncio.run(main())


def turn(gemini: genai.Client, *, stream: bool) -> str:
    """One tool-calling turn: the model calls get_weather, is given its result, answers."""
    first: Any = ask(gemini, ASK, stream=stream)
    call = first.function_calls[0] if first.function_calls else None
    assert call is not None
    assert call.name == "get_weather"
    assert call.args == {"city": "Paris"}
    answered = types.Part.from_function_response(name="get_weather", response={"result": "sunny"})
    history = [*ASK, first.candidates[0].content, types.Content(role="user", parts=[answered])]
    return ask(gemini, history, stream=stream).text or ""


def ask(gemini: genai.Client, contents: Any, *, stream: bool) -> types.GenerateContentResponse:
    if not stream:
        return gemini.models.generate_content(model=MODEL, contents=contents, config=CONFIG)
    chunks: list[Any] = list(
        gemini.models.generate_content_stream(model=MODEL, contents=contents, config=CONFIG)
    )
    parts = [part for chunk in chunks for part in chunk.candidates[0].content.parts]
    text = "".join(part.text for part in parts if part.text)
    calls = [part for part in parts if part.function_call]
    whole = types.Content(role="model", parts=calls or [types.Part(text=text)])
    return types.GenerateContentResponse(candidates=[types.Candidate(content=whole)])


async def aturn(gemini: genai.Client, *, stream: bool) -> str:
    """``turn`` on the SDK's async client."""
    if stream:
        pieces: list[Any] = []
        async for chunk in await gemini.aio.models.generate_content_stream(
            model=MODEL, contents=ASK, config=CONFIG
        ):
            pieces.append(chunk)
        first_calls = [p for c in pieces for p in c.candidates[0].content.parts if p.function_call]
        content: Any = types.Content(role="model", parts=first_calls)
    else:
        first: Any = await gemini.aio.models.generate_content(
            model=MODEL, contents=ASK, config=CONFIG
        )
        content = first.candidates[0].content
    answered = types.Part.from_function_response(name="get_weather", response={"result": "rainy"})
    history = [*ASK, content, types.Content(role="user", parts=[answered])]
    if stream:
        text = ""
        async for chunk in await gemini.aio.models.generate_content_stream(
            model=MODEL, contents=history, config=CONFIG
        ):
            text += chunk.text or ""
        return text
    last = await gemini.aio.models.generate_content(model=MODEL, contents=history, config=CONFIG)
    return last.text or ""
