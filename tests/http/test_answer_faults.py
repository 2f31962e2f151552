"""The model misbehaving inside a valid answer, per wire format, through the real SDKs.

Recorded once against the fake upstream (OpenAI Chat Completions, OpenAI Responses and
Anthropic Messages, each streamed and not, each twice: with tools, then without), which is
then stopped; each fault is replayed through the openai and anthropic SDKs, and the test
reads what the SDK hands a program: the field, or the exception.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import openai
import pytest
from anthropic.types import MessageParam
from openai.types.chat import ChatCompletionMessageParam

import faultdeck as fd
from faultdeck import faults
from faultdeck.http import AsyncTransport, Transport
from tests.support.fake_upstream import ANTHROPIC_TOOLS, DEFAULT_TEXT, OPENAI_TOOLS, Upstream

ASK: list[ChatCompletionMessageParam] = [{"role": "user", "content": "What is the weather?"}]
CLAUDE_ASK: list[MessageParam] = [{"role": "user", "content": "What is the weather?"}]
INPUTS = ("What is the weather?", "And tomorrow?")
REFUSED = "I cannot help with the weather."
DEAD = "http://127.0.0.1:9"  # nothing listens: a replay that went live would fail loudly
FORMATS = ("chat", "responses", "claude")
EACH = [(f, streamed) for f in FORMATS for streamed in (False, True)]
IDS = [f"{f}{'-streamed' if streamed else ''}" for f, streamed in EACH]


def openai_client(deck: fd.Deck, url: str = DEAD, **kwargs: Any) -> openai.OpenAI:
    http = httpx2.Client(transport=Transport(deck, httpx=httpx2))
    kwargs.setdefault("max_retries", 0)
    return openai.OpenAI(base_url=f"{url}/v1", api_key="sk-test", http_client=http, **kwargs)


def claude_client(deck: fd.Deck, url: str = DEAD, **kwargs: Any) -> anthropic.Anthropic:
    http = httpx2.Client(transport=Transport(deck, httpx=httpx2))
    kwargs.setdefault("max_retries", 0)
    return anthropic.Anthropic(base_url=url, api_key="sk-ant-test", http_client=http, **kwargs)


def ask(deck: fd.Deck, fmt: str, streamed: bool, nth: int, url: str = DEAD) -> Any:
    """The ``nth`` call of the recording (1: with tools, 2: without), as the SDK parses
    its answer (a stream through the SDK's stream helper, to its final answer)."""
    tools = nth == 1
    if fmt == "claude":
        with claude_client(deck, url) as claude:
            given: Any = {"tools": ANTHROPIC_TOOLS} if tools else {}
            if not streamed:
                return claude.messages.create(
                    model="claude-x", max_tokens=64, messages=CLAUDE_ASK, **given
                )
            with claude.messages.stream(
                model="claude-x", max_tokens=64, messages=CLAUDE_ASK, **given
            ) as stream:
                return stream.get_final_message()
    with openai_client(deck, url) as client:
        if fmt == "responses":
            if not streamed:
                return client.responses.create(model="gpt-x", input=INPUTS[nth - 1])
            with client.responses.stream(model="gpt-x", input=INPUTS[nth - 1]) as streaming:
                return streaming.get_final_response()
        given = {"tools": OPENAI_TOOLS} if tools else {}
        if not streamed:
            return client.chat.completions.create(model="gpt-x", messages=ASK, **given)
        with client.chat.completions.stream(model="gpt-x", messages=ASK, **given) as chunks:
            return chunks.get_final_completion()


def cassette_name(fmt: str, streamed: bool) -> str:
    return f"{fmt}-streamed" if streamed else fmt


@pytest.fixture(scope="module")
def cassettes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Recordings made once against the fake upstream, which is then stopped: each format,
    streamed and not, asked with tools and then without; a chat completion then a chat
    stream (two forms of one call); a chat completion recorded under a refusal."""
    folder = tmp_path_factory.mktemp("answers")
    paths: dict[str, Path] = {}
    with Upstream() as upstream:
        for fmt, streamed in EACH:
            name = cassette_name(fmt, streamed)
            paths[name] = folder / f"{name}.jsonl"
            with fd.Deck(paths[name], mode="record", clock=fd.SystemClock()) as deck:
                for nth in (1, 2):
                    ask(deck, fmt, streamed, nth, upstream.url)
        paths["mixed"] = folder / "mixed.jsonl"
        with fd.Deck(paths["mixed"], mode="record", clock=fd.SystemClock()) as deck:
            ask(deck, "chat", False, 1, upstream.url)
            ask(deck, "chat", True, 2, upstream.url)
        paths["refused"] = folder / "refused.jsonl"
        plan = [faults.refusal(REFUSED).at(seq=1)]
        with fd.Deck(paths["refused"], mode="record", faults=plan) as deck:
            assert ask(deck, "chat", False, 1, upstream.url).choices[0].message.refusal == REFUSED
    return paths


def replay(path: Path, *plan: fd.Fault) -> fd.Deck:
    return fd.Deck(path, mode="replay", faults=list(plan), clock=fd.VirtualClock())


def answered(
    cassettes: dict[str, Path], fmt: str, streamed: bool, fault: fd.Fault, nth: int = 1
) -> Any:
    """What the SDK gives the ``nth`` call under ``fault`` (at that call)."""
    with replay(cassettes[cassette_name(fmt, streamed)], fault.at(seq=nth)) as deck:
        for before in range(1, nth):
            ask(deck, fmt, streamed, before)
        got = ask(deck, fmt, streamed, nth)
    assert deck.report().calls[nth - 1].fault == fault.kind
    return got


@pytest.mark.parametrize(("fmt", "streamed"), EACH, ids=IDS)
def test_an_empty_answer(cassettes: dict[str, Path], fmt: str, streamed: bool) -> None:
    got = answered(cassettes, fmt, streamed, faults.empty_answer())
    if fmt == "chat":
        [choice] = got.choices
        assert (choice.message.content, choice.message.tool_calls) == ("", None)
        assert choice.finish_reason == "stop"
    elif fmt == "responses":
        assert [item.type for item in got.output] == ["message"]
        assert (got.output_text, got.status) == ("", "completed")
    else:
        assert (got.content, got.stop_reason) == ([], "end_turn")


@pytest.mark.parametrize(("fmt", "streamed"), EACH, ids=IDS)
def test_a_refusal_in_the_formats_own_field(
    cassettes: dict[str, Path], fmt: str, streamed: bool
) -> None:
    got = answered(cassettes, fmt, streamed, faults.refusal(REFUSED))
    if fmt == "chat":
        [choice] = got.choices
        message = choice.message
        assert (message.refusal, message.content, message.tool_calls) == (REFUSED, None, None)
        assert choice.finish_reason == "stop"
    elif fmt == "responses":
        [item] = got.output
        [part] = item.content
        assert (part.type, part.refusal) == ("refusal", REFUSED)
        assert got.output_text == ""
    else:
        assert (got.stop_reason, got.content) == ("refusal", [])
        assert got.stop_details.explanation == REFUSED


def test_a_content_filter_strips_the_tool_calls(cassettes: dict[str, Path]) -> None:
    chat = answered(cassettes, "chat", False, faults.content_filter())
    assert chat.choices[0].finish_reason == "content_filter"
    assert chat.choices[0].message.tool_calls is None
    for streamed in (False, True):
        claude = answered(cassettes, "claude", streamed, faults.content_filter())
        assert (claude.stop_reason, claude.content) == ("refusal", [])  # its tool_use gone
    response = answered(cassettes, "responses", False, faults.content_filter())
    assert response.status == "incomplete"
    assert response.incomplete_details.reason == "content_filter"
    assert response.output_text == DEFAULT_TEXT  # what came before the filter stays


def test_a_content_filtered_chat_stream(cassettes: dict[str, Path]) -> None:
    fault = faults.content_filter().at(seq=1)
    with replay(cassettes["chat-streamed"], fault) as deck, openai_client(deck) as client:
        stream = client.chat.completions.create(
            model="gpt-x", messages=ASK, tools=OPENAI_TOOLS, stream=True
        )
        chunks = [chunk for chunk in stream if chunk.choices]
    assert [c.choices[0].finish_reason for c in chunks][-1] == "content_filter"
    assert all(c.choices[0].delta.tool_calls is None for c in chunks)
    with replay(cassettes["chat-streamed"], fault) as deck:
        with pytest.raises(openai.ContentFilterFinishReasonError) as raised:
            ask(deck, "chat", True, 1)  # the SDK's stream helper refuses to parse it
    completion = raised.value.completion
    assert completion is not None
    assert completion.choices[0].message.tool_calls is None


def test_a_content_filtered_responses_stream_ends_incomplete(cassettes: dict[str, Path]) -> None:
    fault = faults.content_filter().at(seq=1)
    with replay(cassettes["responses-streamed"], fault) as deck, openai_client(deck) as client:
        with client.responses.stream(model="gpt-x", input=INPUTS[0]) as stream:
            events = list(stream)
            with pytest.raises(RuntimeError, match=r"Didn't receive a `response\.completed`"):
                stream.get_final_response()
    last = events[-1]
    assert last.type == "response.incomplete"
    assert last.response.status == "incomplete"
    assert last.response.incomplete_details is not None
    assert last.response.incomplete_details.reason == "content_filter"
    numbers = [event.sequence_number for event in events]
    assert numbers == list(range(len(events)))


def test_a_content_filter_drops_the_function_calls_of_a_response() -> None:
    """The fake upstream's Responses API calls no function: a response that does, as the
    kind breaks it."""
    call = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "f"}
    said = {"type": "message", "id": "msg_1", "role": "assistant", "content": []}
    body = {"id": "resp_1", "object": "response", "status": "completed", "output": [said, call]}
    kind = faults.KINDS["content_filter"]
    assert kind.answer is not None
    broken = kind.answer({}, "openai.responses", body, None)
    assert broken["output"] == [said]
    assert broken["status"] == "incomplete"
    assert body["output"] == [said, call], "the recorded answer is left as it was"


@pytest.mark.parametrize("streamed", [False, True])
def test_reasoning_only(cassettes: dict[str, Path], streamed: bool) -> None:
    response = answered(cassettes, "responses", streamed, faults.reasoning_only())
    assert [item.type for item in response.output] == ["reasoning"]
    assert response.output[0].summary[0].text
    assert response.output_text == ""
    claude = answered(cassettes, "claude", streamed, faults.reasoning_only())
    [block] = claude.content
    assert block.type == "thinking"
    assert block.thinking
    assert block.signature
    assert claude.stop_reason == "end_turn"


@pytest.mark.parametrize("streamed", [False, True])
def test_reasoning_only_where_the_format_has_no_reasoning_is_one_line(
    cassettes: dict[str, Path], streamed: bool
) -> None:
    plan = faults.reasoning_only().at(seq=1)
    with replay(cassettes[cassette_name("chat", streamed)], plan) as deck:
        with pytest.raises(fd.ConfigError) as raised:
            ask(deck, "chat", streamed, 1)
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith(
        "reasoning_only at openai.chat.completions: OpenAI Chat Completions cannot show it"
    )
    assert "openai.responses or anthropic.messages" in message


@pytest.mark.parametrize(("fmt", "streamed"), EACH, ids=IDS)
def test_a_stale_answer_is_the_previous_one_again(
    cassettes: dict[str, Path], fmt: str, streamed: bool
) -> None:
    clean = replay(cassettes[cassette_name(fmt, streamed)])
    with clean:
        first, second = ask(clean, fmt, streamed, 1), ask(clean, fmt, streamed, 2)
    assert first.id != second.id
    stale = answered(cassettes, fmt, streamed, faults.stale_answer(), nth=2)
    assert stale.id == first.id
    assert stale.model_dump() == first.model_dump()


def test_a_stale_answer_at_the_first_call_is_its_own(cassettes: dict[str, Path]) -> None:
    got = answered(cassettes, "chat", False, faults.stale_answer(), nth=1)
    assert got.choices[0].message.tool_calls[0].function.name == "get_weather"


def test_a_stale_answer_crosses_from_a_body_to_a_stream(cassettes: dict[str, Path]) -> None:
    with replay(cassettes["mixed"], faults.stale_answer().at(seq=2)) as deck:
        first = ask(deck, "chat", False, 1)
        stale = ask(deck, "chat", True, 2)  # streamed: the completion, chunk by chunk
    assert stale.id == first.id
    [call] = stale.choices[0].message.tool_calls
    assert (call.function.name, json.loads(call.function.arguments)) == (
        "get_weather",
        {"city": "Paris"},
    )
    assert stale.choices[0].finish_reason == "tool_calls"


@pytest.mark.parametrize("fmt", ["chat", "claude"])
def test_an_html_502_is_the_sdks_status_error(cassettes: dict[str, Path], fmt: str) -> None:
    with replay(cassettes[fmt], faults.html_error(502).at(seq=1)) as deck:
        with pytest.raises((openai.InternalServerError, anthropic.InternalServerError)) as raised:
            ask(deck, fmt, False, 1)
    error: Any = raised.value  # one SDK's or the other's
    assert error.status_code == 502
    assert error.response.headers["content-type"].startswith("text/html")
    assert "<title>502 Bad Gateway</title>" in error.response.text
    [call] = deck.report().calls
    assert (call.source, call.error, call.fault) == ("fault", "APIStatusError", "html_error")


def test_an_html_502_is_retried_by_the_sdk(cassettes: dict[str, Path]) -> None:
    with replay(cassettes["claude"], faults.html_error(502).at(seq=1)) as deck:
        with claude_client(deck, max_retries=1) as claude:
            message = claude.messages.create(
                model="claude-x", max_tokens=64, messages=CLAUDE_ASK, tools=ANTHROPIC_TOOLS
            )
    assert message.stop_reason == "tool_use"
    assert [c.source for c in deck.report().calls] == ["fault", "replay"]


def first_choice(reply: Any) -> Any:
    return reply.choices[0]


def test_an_html_200_is_text_where_the_sdk_wanted_an_object(cassettes: dict[str, Path]) -> None:
    plan = faults.html_error(200).at(seq=1)
    with replay(cassettes["chat"], plan) as deck, openai_client(deck) as client:
        page: Any = client.chat.completions.create(model="gpt-x", messages=ASK, tools=OPENAI_TOOLS)
    assert isinstance(page, str)  # the SDK hands back the text it could not parse
    assert page.startswith("<!DOCTYPE html>")
    with pytest.raises(AttributeError, match="'str' object has no attribute 'choices'"):
        first_choice(page)  # what a program reading the answer meets
    with replay(cassettes["claude"], plan) as deck:
        with claude_client(deck, _strict_response_validation=True) as claude:
            with pytest.raises(anthropic.APIResponseValidationError, match="text/html"):
                claude.messages.create(model="claude-x", max_tokens=64, messages=CLAUDE_ASK)
    with replay(cassettes["chat-streamed"], plan) as deck, openai_client(deck) as client:
        stream = client.chat.completions.create(model="gpt-x", messages=ASK, stream=True)
        assert list(stream) == []  # no event in a page


def test_async_clients_get_the_same_misbehaviour(cassettes: dict[str, Path]) -> None:
    async def run() -> tuple[Any, Any]:
        with replay(cassettes["chat"], faults.refusal(REFUSED).at(seq=1)) as deck:
            http = httpx2.AsyncClient(transport=AsyncTransport(deck, httpx=httpx2))
            async with openai.AsyncOpenAI(
                base_url=f"{DEAD}/v1", api_key="sk-test", http_client=http, max_retries=0
            ) as client:
                chat = await client.chat.completions.create(
                    model="gpt-x", messages=ASK, tools=OPENAI_TOOLS
                )
        with replay(cassettes["claude-streamed"], faults.content_filter().at(seq=1)) as deck:
            http = httpx2.AsyncClient(transport=AsyncTransport(deck, httpx=httpx2))
            async with anthropic.AsyncAnthropic(
                base_url=DEAD, api_key="sk-ant-test", http_client=http, max_retries=0
            ) as claude:
                async with claude.messages.stream(
                    model="claude-x", max_tokens=64, messages=CLAUDE_ASK, tools=ANTHROPIC_TOOLS
                ) as stream:
                    message = await stream.get_final_message()
        return chat, message

    chat, message = asyncio.run(run())
    assert chat.choices[0].message.refusal == REFUSED
    assert (message.stop_reason, message.content) == ("refusal", [])


def test_recorded_under_a_refusal_it_replays_refused(cassettes: dict[str, Path]) -> None:
    [entry] = fd.load(cassettes["refused"]).entries
    assert entry.fault == {"fault": "refusal", "text": REFUSED, "at": 1}
    assert entry.value["body"]["choices"][0]["message"]["refusal"] == REFUSED
    with replay(cassettes["refused"]) as deck:  # no plan: the cassette carries it
        got = ask(deck, "chat", False, 1)
    assert got.choices[0].message.refusal == REFUSED


@pytest.mark.parametrize(
    ("fault", "code"),
    [
        (faults.empty_answer(), "empty_answer"),
        (faults.refusal(), "refusal"),
        (faults.content_filter(), "content_filter"),
        (faults.reasoning_only(), "reasoning_only"),
        (faults.stale_answer(), "stale_answer"),
        (faults.html_error(), "html_error"),
    ],
)
def test_in_process_each_raises_a_transient_error(
    tmp_path: Path, fault: fd.Fault, code: str
) -> None:
    with fd.Deck(tmp_path / "c.jsonl", mode="record", faults=[fault]) as deck:
        with pytest.raises(fd.TransientError) as raised:
            deck.call("model", "chat", {"q": "plan"}, lambda: "a plan")
    assert raised.value.code == code
    assert deck.report().calls[0].fault == fault.kind


def test_each_kind_round_trips_through_a_plan_file() -> None:
    plan = fd.FaultPlan(
        [
            faults.empty_answer().at(seq=1),
            faults.refusal("no").at(seq=2),
            faults.content_filter().at(seq=3),
            faults.reasoning_only().at(seq=4),
            faults.stale_answer().at(seq=5),
            faults.html_error(200).at(seq=6),
        ]
    )
    assert fd.FaultPlan.from_dict(json.loads(json.dumps(plan.to_json()))) == plan
    assert [f.describe() for f in plan.faults] == [
        "empty_answer",
        "refusal('no')",
        "content_filter",
        "reasoning_only",
        "stale_answer",
        "html_error(200)",
    ]
    with pytest.raises(fd.ConfigError, match="expected 200 or an HTTP status of 500-599"):
        faults.html_error(404)
