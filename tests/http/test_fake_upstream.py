"""The fake upstream works with the real openai and anthropic SDKs (strict validation on)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx
import httpx2
import openai
import pytest

from tests.support import fake_upstream
from tests.support.fake_upstream import (
    ANTHROPIC_TOOLS,
    DEFAULT_TEXT,
    OPENAI_TOOLS,
    TOOL_ARGUMENTS,
    Upstream,
    tool_result_text,
)

OPENAI_MODEL = "gpt-fake"
ANTHROPIC_MODEL = "claude-fake"


@pytest.fixture(scope="module")
def server() -> Iterator[Upstream]:
    with Upstream() as upstream:
        yield upstream


@pytest.fixture
def upstream(server: Upstream) -> Upstream:
    server.reset()
    return server


def openai_client(upstream: Upstream) -> openai.OpenAI:
    return openai.OpenAI(
        base_url=f"{upstream.url}/v1",
        api_key="sk-test",
        max_retries=0,
        _strict_response_validation=True,
    )


def anthropic_client(upstream: Upstream) -> anthropic.Anthropic:
    return anthropic.Anthropic(
        base_url=upstream.url,
        api_key="sk-ant-test",
        max_retries=0,
        _strict_response_validation=True,
    )


# ------------------------------------------------------------------------------ openai


def test_openai_two_turn_tool_calling(upstream: Upstream) -> None:
    messages: list[Any] = [{"role": "user", "content": "Weather in Paris?"}]
    with openai_client(upstream) as client:
        first = client.chat.completions.create(
            model=OPENAI_MODEL, messages=messages, tools=OPENAI_TOOLS
        )
        choice = first.choices[0]
        assert choice.finish_reason == "tool_calls"
        assert choice.message.content is None
        assert choice.message.tool_calls is not None
        call = choice.message.tool_calls[0]
        assert call.type == "function"
        assert call.id.startswith("call_")
        assert len(call.id) == len("call_") + 24
        assert call.function.name == "get_weather"
        assert json.loads(call.function.arguments) == TOOL_ARGUMENTS
        assert first.object == "chat.completion"
        assert first.model == OPENAI_MODEL
        assert first.usage is not None
        assert first.usage.total_tokens == first.usage.prompt_tokens + first.usage.completion_tokens

        messages.append(choice.message.model_dump(exclude_none=True))
        messages.append({"role": "tool", "tool_call_id": call.id, "content": "sunny"})
        second = client.chat.completions.create(
            model=OPENAI_MODEL, messages=messages, tools=OPENAI_TOOLS
        )
    assert second.choices[0].finish_reason == "stop"
    assert second.choices[0].message.content == "It is sunny in Paris."
    assert second.choices[0].message.tool_calls is None
    assert [r["path"] for r in upstream.requests] == ["/v1/chat/completions"] * 2


def test_openai_without_tools_says_hello(upstream: Upstream) -> None:
    with openai_client(upstream) as client:
        reply = client.chat.completions.create(
            model=OPENAI_MODEL, messages=[{"role": "user", "content": "hi"}]
        )
    assert reply.choices[0].message.content == DEFAULT_TEXT
    assert reply.choices[0].finish_reason == "stop"


def test_openai_ids_and_timestamps_are_fresh(upstream: Upstream) -> None:
    before = int(time.time())
    with openai_client(upstream) as client:
        replies = [
            client.chat.completions.create(
                model=OPENAI_MODEL,
                messages=[{"role": "user", "content": "Weather?"}],
                tools=OPENAI_TOOLS,
            )
            for _ in range(2)
        ]
    first, second = replies
    assert first.id != second.id
    assert first.id.startswith("chatcmpl-")
    first_calls, second_calls = (
        first.choices[0].message.tool_calls,
        second.choices[0].message.tool_calls,
    )
    assert first_calls is not None
    assert second_calls is not None
    assert first_calls[0].id != second_calls[0].id
    assert before <= first.created <= int(time.time())
    # ... and everything else is the same.
    for reply in replies:
        reply.id = "X"
        reply.created = 0
        calls = reply.choices[0].message.tool_calls
        assert calls is not None
        calls[0].id = "X"
    assert first == second


def test_openai_chat_streaming_text(upstream: Upstream) -> None:
    with openai_client(upstream) as client:
        stream = client.chat.completions.create(
            model=OPENAI_MODEL, messages=[{"role": "user", "content": "hi"}], stream=True
        )
        with stream:
            chunks = list(stream)
    assert chunks[0].choices[0].delta.role == "assistant"
    assert len(chunks) == 1 + len(DEFAULT_TEXT.split()) + 1
    assert len({chunk.id for chunk in chunks}) == 1
    text = "".join(chunk.choices[0].delta.content or "" for chunk in chunks)
    assert text == DEFAULT_TEXT
    assert chunks[-1].choices[0].finish_reason == "stop"


def test_openai_chat_streaming_tool_call(upstream: Upstream) -> None:
    with openai_client(upstream) as client:
        stream = client.chat.completions.create(
            model=OPENAI_MODEL,
            messages=[{"role": "user", "content": "Weather?"}],
            tools=OPENAI_TOOLS,
            stream=True,
            stream_options={"include_usage": True},
        )
        with stream:
            chunks = list(stream)
    deltas = [call for c in chunks if c.choices for call in c.choices[0].delta.tool_calls or []]
    assert deltas[0].id is not None
    assert deltas[0].id.startswith("call_")
    assert deltas[0].function is not None
    assert deltas[0].function.name == "get_weather"
    pieces = [d.function.arguments or "" for d in deltas if d.function is not None]
    assert len([p for p in pieces if p]) >= 2
    assert json.loads("".join(pieces)) == TOOL_ARGUMENTS
    assert chunks[-2].choices[0].finish_reason == "tool_calls"
    assert chunks[-1].choices == []
    assert chunks[-1].usage is not None


def test_openai_chat_stream_raw_sse(upstream: Upstream) -> None:
    started = time.monotonic()
    with httpx2.Client() as client:
        response = client.post(
            f"{upstream.url}/v1/chat/completions",
            json={
                "model": OPENAI_MODEL,
                "messages": [{"role": "user", "content": "hi"}],
                "stream": True,
            },
        )
    assert response.headers["content-type"].startswith("text/event-stream")
    blocks = response.text.split("\n\n")
    assert blocks[-1] == ""
    assert blocks[-2] == "data: [DONE]"
    assert all(block.startswith("data: {") for block in blocks[:-2])
    # STREAM_DELAY separates the chunks, so a recorder sees timing.
    assert time.monotonic() - started >= (len(blocks) - 2) * fake_upstream.STREAM_DELAY


def test_openai_responses_streaming(upstream: Upstream) -> None:
    with openai_client(upstream) as client:
        stream = client.responses.create(model=OPENAI_MODEL, input="hi", stream=True)
        with stream:
            events = list(stream)
    types = [event.type for event in events]
    assert types[:4] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
    ]
    assert types[-4:] == [
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]
    assert [event.sequence_number for event in events] == list(range(len(events)))
    deltas = [event.delta for event in events if event.type == "response.output_text.delta"]
    assert len(deltas) > 1
    assert "".join(deltas) == DEFAULT_TEXT
    completed = events[-1]
    assert completed.type == "response.completed"
    assert completed.response.output_text == DEFAULT_TEXT
    assert completed.response.id.startswith("resp_")


def test_openai_responses_non_stream(upstream: Upstream) -> None:
    with openai_client(upstream) as client:
        first = client.responses.create(model=OPENAI_MODEL, input="hi")
        second = client.responses.create(model=OPENAI_MODEL, input="hi")
    assert first.output_text == DEFAULT_TEXT
    assert first.status == "completed"
    assert first.usage is not None
    assert first.id != second.id
    assert first.output[0].id != second.output[0].id


def test_async_openai_tool_call(upstream: Upstream) -> None:
    async def main() -> openai.types.chat.ChatCompletion:
        async with openai.AsyncOpenAI(
            base_url=f"{upstream.url}/v1",
            api_key="sk-test",
            max_retries=0,
            _strict_response_validation=True,
        ) as client:
            return await client.chat.completions.create(
                model=OPENAI_MODEL,
                messages=[{"role": "user", "content": "Weather?"}],
                tools=OPENAI_TOOLS,
            )

    reply = asyncio.run(main())
    calls = reply.choices[0].message.tool_calls
    assert calls is not None
    assert calls[0].type == "function"
    assert calls[0].function.name == "get_weather"
    assert json.loads(calls[0].function.arguments) == TOOL_ARGUMENTS


# --------------------------------------------------------------------------- anthropic


def _tool_result_turn(first: anthropic.types.Message, result: object) -> list[Any]:
    """The conversation after ``first`` (a tool_use turn) once the tool returned ``result``."""
    tool_use = first.content[0]
    assert tool_use.type == "tool_use"
    return [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": [block.to_dict() for block in first.content]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": tool_use.id, "content": result}],
        },
    ]


def test_anthropic_tool_use_then_result(upstream: Upstream) -> None:
    with anthropic_client(upstream) as client:
        first = client.messages.create(
            model=ANTHROPIC_MODEL,
            max_tokens=100,
            messages=[{"role": "user", "content": "Weather in Paris?"}],
            tools=ANTHROPIC_TOOLS,
        )
        assert first.stop_reason == "tool_use"
        assert first.id.startswith("msg_")
        block = first.content[0]
        assert block.type == "tool_use"
        assert block.id.startswith("toolu_")
        assert block.name == "get_weather"
        assert block.input == TOOL_ARGUMENTS

        second = client.messages.create(
            model=ANTHROPIC_MODEL,
            max_tokens=100,
            messages=_tool_result_turn(first, "sunny"),
            tools=ANTHROPIC_TOOLS,
        )
        # A tool_result given as text blocks works too.
        third = client.messages.create(
            model=ANTHROPIC_MODEL,
            max_tokens=100,
            messages=_tool_result_turn(first, [{"type": "text", "text": "rainy"}]),
            tools=ANTHROPIC_TOOLS,
        )
        hello = client.messages.create(
            model=ANTHROPIC_MODEL, max_tokens=100, messages=[{"role": "user", "content": "hi"}]
        )
    assert second.stop_reason == "end_turn"
    assert second.content[0].type == "text"
    assert second.content[0].text == "It is sunny in Paris."
    assert third.content[0].type == "text"
    assert third.content[0].text == tool_result_text("rainy")
    assert hello.content[0].type == "text"
    assert hello.content[0].text == DEFAULT_TEXT
    assert first.id != second.id


def test_async_anthropic_tool_use_then_result(upstream: Upstream) -> None:
    async def main() -> tuple[anthropic.types.Message, anthropic.types.Message]:
        async with anthropic.AsyncAnthropic(
            base_url=upstream.url,
            api_key="sk-ant-test",
            max_retries=0,
            _strict_response_validation=True,
        ) as client:
            first = await client.messages.create(
                model=ANTHROPIC_MODEL,
                max_tokens=100,
                messages=[{"role": "user", "content": "Weather in Paris?"}],
                tools=ANTHROPIC_TOOLS,
            )
            second = await client.messages.create(
                model=ANTHROPIC_MODEL,
                max_tokens=100,
                messages=_tool_result_turn(first, "sunny"),
                tools=ANTHROPIC_TOOLS,
            )
            return first, second

    first, second = asyncio.run(main())
    assert first.content[0].type == "tool_use"
    assert second.content[0].type == "text"
    assert second.content[0].text == "It is sunny in Paris."


def test_anthropic_stream_text(upstream: Upstream) -> None:
    with (
        anthropic_client(upstream) as client,
        client.messages.stream(
            model=ANTHROPIC_MODEL, max_tokens=100, messages=[{"role": "user", "content": "hi"}]
        ) as stream,
    ):
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert text == DEFAULT_TEXT
    assert final.stop_reason == "end_turn"
    assert final.content[0].type == "text"
    assert final.content[0].text == DEFAULT_TEXT
    assert final.usage.output_tokens > 0
    assert upstream.requests[-1]["json"]["stream"] is True


def test_anthropic_stream_tool_use(upstream: Upstream) -> None:
    with (
        anthropic_client(upstream) as client,
        client.messages.stream(
            model=ANTHROPIC_MODEL,
            max_tokens=100,
            messages=[{"role": "user", "content": "Weather?"}],
            tools=ANTHROPIC_TOOLS,
        ) as stream,
    ):
        events = list(stream)
        final = stream.get_final_message()
    kinds = [event.type for event in events]
    assert kinds[0] == "message_start"
    assert "content_block_delta" in kinds
    assert final.stop_reason == "tool_use"
    block = final.content[0]
    assert block.type == "tool_use"
    assert block.id.startswith("toolu_")
    assert block.input == TOOL_ARGUMENTS


def test_anthropic_stream_raw_sse_has_event_names(upstream: Upstream) -> None:
    with httpx2.Client() as client:
        response = client.post(
            f"{upstream.url}/v1/messages",
            headers={"anthropic-version": "2023-06-01"},
            json={
                "model": ANTHROPIC_MODEL,
                "max_tokens": 10,
                "messages": [{"role": "user", "content": "hi"}],
                "stream": True,
            },
        )
    names = [
        line.removeprefix("event: ")
        for line in response.text.splitlines()
        if line.startswith("event: ")
    ]
    words = len(DEFAULT_TEXT.split())
    assert names == [
        "message_start",
        "content_block_start",
        "ping",
        *["content_block_delta"] * words,
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]


# ------------------------------------------------------------------------- plain http


def test_plain_clients(upstream: Upstream) -> None:
    with httpx2.Client() as client2:
        assert client2.get(f"{upstream.url}/health").json() == {"ok": True}
    with httpx.Client() as client:
        assert client.get(f"{upstream.url}/health").json() == {"ok": True}
        models = client.get(f"{upstream.url}/v1/models").json()
        missing = client.get(f"{upstream.url}/v1/nope")
    assert models["object"] == "list"
    assert [m["id"] for m in models["data"]] == ["gpt-fake", "claude-fake"]
    assert missing.status_code == 404
    assert "message" in missing.json()["error"]
    assert [(r["method"], r["path"]) for r in upstream.requests] == [
        ("GET", "/health"),
        ("GET", "/health"),
        ("GET", "/v1/models"),
        ("GET", "/v1/nope"),
    ]


def test_sdk_errors_on_unknown_path(upstream: Upstream) -> None:
    with (
        openai.OpenAI(base_url=f"{upstream.url}/nope", api_key="sk-test", max_retries=0) as client,
        pytest.raises(openai.NotFoundError),
    ):
        client.chat.completions.create(model=OPENAI_MODEL, messages=[])


def test_requests_record_headers(upstream: Upstream) -> None:
    with openai_client(upstream) as oai:
        oai.chat.completions.create(
            model=OPENAI_MODEL, messages=[{"role": "user", "content": "hi"}]
        )
    with anthropic_client(upstream) as ant:
        ant.messages.create(
            model=ANTHROPIC_MODEL, max_tokens=10, messages=[{"role": "user", "content": "hi"}]
        )
    recorded = upstream.requests
    assert len(recorded) == 2
    oai_request, ant_request = recorded
    assert oai_request["method"] == "POST"
    assert oai_request["path"] == "/v1/chat/completions"
    assert oai_request["headers"]["authorization"] == "Bearer sk-test"
    assert oai_request["json"]["model"] == OPENAI_MODEL
    assert ant_request["path"] == "/v1/messages"
    assert "anthropic-version" in ant_request["headers"]
    assert ant_request["headers"]["authorization"] == "Bearer sk-ant-test"
    assert all(key == key.lower() for r in recorded for key in r["headers"])


def test_upstream_start_stop() -> None:
    upstream = Upstream(stream_delay=0)
    with pytest.raises(RuntimeError):
        _ = upstream.url
    with upstream:
        url = upstream.url
        with httpx2.Client() as client:
            assert client.get(f"{url}/health").json() == {"ok": True}
    with httpx2.Client() as client, pytest.raises(httpx2.ConnectError):
        client.get(f"{url}/health")
    upstream.stop()  # idempotent
