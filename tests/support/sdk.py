"""The real SDKs wired through a deck: clients whose HTTP goes through ``fd.http``
transports, a guard that fails a replay that tries to reach the network, and the checks a
clean offline replay passes."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import httpx2
import openai
import pytest

import faultdeck as fd
from faultdeck.http import AsyncTransport, Transport
from tests.support.fake_upstream import OPENAI_TOOLS

OPENAI_MODEL = "gpt-fake"
ANTHROPIC_MODEL = "claude-fake"
OPENAI_KEY = "sk-proj-TestKeyForFaultdeck0123456789"
ANTHROPIC_KEY = "sk-ant-api03-TestKeyForFaultdeck0123456789"
QUESTION = "Weather in Paris?"


class NetworkGuard:
    """An inner transport that fails the test if replay ever tries to reach the network."""

    def __init__(self) -> None:
        self.calls = 0
        self.closed = False

    def handle_request(self, request: Any) -> Any:
        self.calls += 1
        raise AssertionError("replay opened the network")

    async def handle_async_request(self, request: Any) -> Any:
        self.calls += 1
        raise AssertionError("replay opened the network")

    def close(self) -> None:
        self.closed = True

    async def aclose(self) -> None:
        self.closed = True


def assert_dead(url: str) -> None:
    """The upstream really is gone: a direct connection is refused."""
    with httpx2.Client() as client, pytest.raises(httpx2.ConnectError):
        client.get(f"{url}/health")


def assert_clean_replay(report: fd.Report, recorded: int) -> None:
    assert report.mode == "replay"
    assert report.entries == recorded
    assert report.used == recorded
    assert report.live == 0
    assert report.misses == ()
    assert report.unused == ()
    assert report.repeats == ()
    assert report.ok


def sync_client(deck: fd.Deck, inner: Any) -> httpx2.Client:
    return httpx2.Client(transport=Transport(deck, httpx=httpx2, transport=inner))


def async_client(deck: fd.Deck, inner: Any) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(transport=AsyncTransport(deck, httpx=httpx2, transport=inner))


def openai_sync(url: str, deck: fd.Deck, inner: Any) -> openai.OpenAI:
    return openai.OpenAI(
        base_url=f"{url}/v1",
        api_key=OPENAI_KEY,
        max_retries=0,
        _strict_response_validation=True,
        http_client=sync_client(deck, inner),
    )


def openai_async(url: str, deck: fd.Deck, inner: Any) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(
        base_url=f"{url}/v1",
        api_key=OPENAI_KEY,
        max_retries=0,
        _strict_response_validation=True,
        http_client=async_client(deck, inner),
    )


def anthropic_sync(url: str, deck: fd.Deck, inner: Any) -> anthropic.Anthropic:
    return anthropic.Anthropic(
        base_url=url,
        api_key=ANTHROPIC_KEY,
        max_retries=0,
        _strict_response_validation=True,
        http_client=sync_client(deck, inner),
    )


def anthropic_async(url: str, deck: fd.Deck, inner: Any) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(
        base_url=url,
        api_key=ANTHROPIC_KEY,
        max_retries=0,
        _strict_response_validation=True,
        http_client=async_client(deck, inner),
    )


def first_message(client: openai.OpenAI, messages: list[Any], *, model: str, stream: bool) -> Any:
    """The model's first message in a chat that offers ``OPENAI_TOOLS``: a whole answer's,
    or a stream's as the SDK's stream helper gathers it."""
    tools: Any = OPENAI_TOOLS
    if stream:
        with client.chat.completions.stream(model=model, messages=messages, tools=tools) as events:
            return events.get_final_completion().choices[0].message
    return (
        client.chat.completions.create(model=model, messages=messages, tools=tools)
        .choices[0]
        .message
    )


def tool_turn(client: openai.OpenAI, *, model: str, stream: bool) -> str:
    """One tool-calling turn through OpenAI's chat API: the model calls ``get_weather`` with
    ``{"city": "Paris"}``, gets ``sunny`` back and answers; the answer's text."""
    messages: list[Any] = [{"role": "user", "content": "What is the weather?"}]
    first = first_message(client, messages, model=model, stream=stream)
    assert first.tool_calls
    call = first.tool_calls[0]
    assert call.type == "function"
    assert json.loads(call.function.arguments) == {"city": "Paris"}
    messages += [
        first.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": "sunny"},
    ]
    final = client.chat.completions.create(model=model, messages=messages, tools=OPENAI_TOOLS)
    return final.choices[0].message.content or ""


def model_spans(*paths: Any) -> list[tuple[str, dict[str, Any]]]:
    """The OTel span of each call of the cassettes at ``paths`` (each run's root span left
    out), as its name and attributes."""
    from faultdeck.otel import spans

    found: list[tuple[str, dict[str, Any]]] = []
    for path in paths:
        found += [(s.name, dict(s.attributes or {})) for s in spans(fd.load(path), start_ns=0)[1:]]
    return found
