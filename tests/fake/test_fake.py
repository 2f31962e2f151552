"""``faultdeck fake``: a scripted model the real SDKs talk to as to their providers, whole
and streamed, under strict validation; a first recording made against it replays offline."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

from faultdeck.fake import FakeModel
from tests.support.children import child_env

WEATHER = [
    {"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]},
    {"text": "It is {tool_result} in Paris."},
]
TOOLS: Any = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]
ASK: Any = [{"role": "user", "content": "What's the weather in Paris?"}]


def chat(fake: FakeModel) -> openai.OpenAI:
    return openai.OpenAI(
        base_url=fake.openai_base_url, api_key="fake-key", _strict_response_validation=True
    )


def claude(fake: FakeModel) -> anthropic.Anthropic:
    return anthropic.Anthropic(
        base_url=fake.url, api_key="fake-key", _strict_response_validation=True
    )


def test_the_default_script_answers_each_question_naming_it() -> None:
    with FakeModel() as fake:
        reply = chat(fake).chat.completions.create(model="gpt-4o-mini", messages=ASK)
    assert reply.choices[0].message.content == "A scripted answer to: What's the weather in Paris?"
    assert reply.choices[0].finish_reason == "stop"


@pytest.mark.parametrize("streamed", [False, True], ids=["whole", "streamed"])
def test_a_tool_calling_turn_over_chat_completions(streamed: bool) -> None:
    with FakeModel(WEATHER) as fake:
        client = chat(fake)
        first: Any
        if streamed:
            with client.chat.completions.stream(model="m", messages=ASK, tools=TOOLS) as stream:
                first = stream.get_final_completion()
        else:
            first = client.chat.completions.create(model="m", messages=ASK, tools=TOOLS)
        message = first.choices[0].message
        assert first.choices[0].finish_reason == "tool_calls"
        assert message.tool_calls is not None
        call = message.tool_calls[0]
        assert call.type == "function"
        assert (call.function.name, json.loads(call.function.arguments)) == (
            "get_weather",
            {"city": "Paris"},
        )
        answered = [
            *ASK,
            message.model_dump(exclude_none=True),
            {"role": "tool", "tool_call_id": call.id, "content": "sunny"},
        ]
        second = client.chat.completions.create(model="m", messages=answered, tools=TOOLS)
    assert second.choices[0].message.content == "It is sunny in Paris."


@pytest.mark.parametrize("streamed", [False, True], ids=["whole", "streamed"])
def test_a_tool_calling_turn_over_responses(streamed: bool) -> None:
    with FakeModel(WEATHER) as fake:
        client = chat(fake)
        first: Any
        if streamed:
            with client.responses.stream(model="m", input="Weather?") as stream:
                first = stream.get_final_response()
        else:
            first = client.responses.create(model="m", input="Weather?")
        call = first.output[0]
        assert call.type == "function_call"
        assert (call.name, json.loads(call.arguments)) == ("get_weather", {"city": "Paris"})
        output: Any = [{"type": "function_call_output", "call_id": call.call_id, "output": "rainy"}]
        second = client.responses.create(model="m", input=output, previous_response_id=first.id)
    assert second.output_text == "It is rainy in Paris."


@pytest.mark.parametrize("streamed", [False, True], ids=["whole", "streamed"])
def test_a_tool_calling_turn_over_anthropic_messages(streamed: bool) -> None:
    with FakeModel(WEATHER) as fake:
        client = claude(fake)
        first: Any
        if streamed:
            with client.messages.stream(model="c", max_tokens=64, messages=ASK) as stream:
                first = stream.get_final_message()
        else:
            first = client.messages.create(model="c", max_tokens=64, messages=ASK)
        block = first.content[0]
        assert first.stop_reason == "tool_use"
        assert block.type == "tool_use"
        assert (block.name, block.input) == ("get_weather", {"city": "Paris"})
        result = {"type": "tool_result", "tool_use_id": block.id, "content": "foggy"}
        answered: Any = [
            *ASK,
            {"role": "assistant", "content": [block.model_dump()]},
            {"role": "user", "content": [result]},
        ]
        second = client.messages.create(model="c", max_tokens=64, messages=answered)
    assert second.content[0].type == "text"
    assert second.content[0].text == "It is foggy in Paris."


def test_the_async_clients_stream_from_it() -> None:
    async def ask() -> str:
        with FakeModel() as fake:
            async with openai.AsyncOpenAI(base_url=fake.openai_base_url, api_key="k") as client:
                stream = await client.chat.completions.create(model="m", messages=ASK, stream=True)
                return "".join([c.choices[0].delta.content or "" async for c in stream])

    assert asyncio.run(ask()) == "A scripted answer to: What's the weather in Paris?"


@pytest.mark.parametrize(
    ("script", "said"),
    [
        ([], "a script is a non-empty list of turns"),
        ([{"text": 3}], "turns[0].text: a string, not int"),
        ([{"text": "a", "tool_calls": []}], "turns[0]: a turn is"),
        ([{"tool_calls": [{"arguments": {}}]}], "turns[0].tool_calls[0]: needs a name"),
        ([{"tool_calls": [{"name": "f", "arguments": [1]}]}], "tool_calls[0].arguments: a JSON"),
    ],
)
def test_a_script_that_is_not_one_is_one_line_naming_the_turn(
    tmp_path: Path, script: Any, said: str
) -> None:
    path = tmp_path / "turns.json"
    path.write_text(json.dumps(script))
    done = subprocess.run(
        [sys.executable, "-m", "faultdeck", "fake", "--script", str(path), "--port", "0"],
        capture_output=True, text=True, timeout=60, check=False, env=child_env(),
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1
    assert said in done.stderr
    assert str(path) in done.stderr


def test_a_port_in_use_is_one_line_saying_how_to_pick_another() -> None:
    with FakeModel() as taken:
        port = taken.url.rsplit(":", 1)[1]
        done = subprocess.run(
            [sys.executable, "-m", "faultdeck", "fake", "--port", port],
            capture_output=True, text=True, timeout=60, check=False, env=child_env(),
        )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1
    assert f"cannot listen on 127.0.0.1:{port}" in done.stderr
    assert "--port 0" in done.stderr


AGENT = """\
import openai

client = openai.OpenAI()
for question in ["What's the weather in Paris?", "Should I take an umbrella?"]:
    reply = client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": question}]
    )
    print(reply.choices[0].message.content)
"""


def test_a_first_recording_needs_no_key_and_replays_offline(tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text(AGENT, "utf-8")
    server = subprocess.Popen(
        [sys.executable, "-m", "faultdeck", "fake", "--port", "0"],
        stdout=subprocess.PIPE, text=True, env=child_env(), cwd=tmp_path,
    )  # fmt: skip
    try:
        assert server.stdout is not None
        first = server.stdout.readline()
        url = re.search(r"http://127\.0\.0\.1:\d+", first)
        assert url, first
        exports = server.stdout.readline().split()
        assert exports[1] == f"OPENAI_BASE_URL={url[0]}/v1"
        env = child_env(**dict(word.split("=", 1) for word in exports[1:]))
        record = [sys.executable, "-m", "faultdeck", "record", "runs/base.jsonl", "--"]
        done = subprocess.run(
            [*record, sys.executable, "agent.py"],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert "A scripted answer to: Should I take an umbrella?" in done.stdout
    finally:
        server.terminate()
        server.communicate(timeout=30)  # closes the pipe
    assert server.returncode == 0
    offline = child_env(OPENAI_BASE_URL="http://127.0.0.1:9/v1", OPENAI_API_KEY="fake-key")
    replay = [sys.executable, "-m", "faultdeck", "replay", "runs/base.jsonl", "--"]
    done = subprocess.run(
        [*replay, sys.executable, "agent.py"],
        cwd=tmp_path, env=offline, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "A scripted answer to: What's the weather in Paris?" in done.stdout
    assert (tmp_path / "runs/base.jsonl").read_text().count('"openai.chat.completions"') == 2
