"""The model misbehaving inside a valid Ollama chat answer, streamed and not: what the
``ollama`` SDK hands a program under each fault of the catalogue Ollama's format shows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import ollama
import pytest

import faultdeck as fd
from faultdeck import faults
from faultdeck.http import Transport
from tests.support.answers import DEAD, Asking
from tests.support.fake_ollama import OLLAMA_TOOLS, create_app

ASK: list[dict[str, Any]] = [{"role": "user", "content": "What is the weather?"}]
STREAMED = pytest.mark.parametrize("streamed", [False, True], ids=["whole", "streamed"])


def client(deck: fd.Deck, url: str) -> ollama.Client:
    return ollama.Client(host=url, transport=Transport(deck, httpx=httpx))


def ask(c: ollama.Client, streamed: bool) -> dict[str, Any]:
    """The answer as a program sees it: a whole one, or a stream's lines gathered."""
    if not streamed:
        reply = c.chat(model="llama-x", messages=ASK, tools=OLLAMA_TOOLS, stream=False)
        return {
            "content": reply.message.content or "",
            "thinking": reply.message.thinking,
            "calls": [dict(call.function.arguments) for call in reply.message.tool_calls or ()],
            "names": [call.function.name for call in reply.message.tool_calls or ()],
            "reason": reply.done_reason,
        }
    content, thinking, calls, names, reason = "", "", [], [], None
    for part in c.chat(model="llama-x", messages=ASK, tools=OLLAMA_TOOLS, stream=True):
        content += part.message.content or ""
        thinking += part.message.thinking or ""
        calls += [dict(call.function.arguments) for call in part.message.tool_calls or ()]
        names += [call.function.name for call in part.message.tool_calls or ()]
        reason = part.done_reason if part.done else reason
    return {
        "content": content,
        "thinking": thinking or None,
        "calls": calls,
        "names": names,
        "reason": reason,
    }


ASKING = Asking(client, ask)


@pytest.fixture(scope="module")
def cassettes(tmp_path_factory: pytest.TempPathFactory) -> dict[bool, Path]:
    return ASKING.record(tmp_path_factory.mktemp("ollama-answers"), create_app())


answered = ASKING.answered


@STREAMED
def test_as_recorded(cassettes: dict[bool, Path], streamed: bool) -> None:
    with fd.Deck(cassettes[streamed], mode="replay") as deck:
        got = ask(client(deck, DEAD), streamed)
    assert (got["calls"], got["reason"]) == ([{"city": "Paris"}], "stop")


@STREAMED
@pytest.mark.parametrize(
    ("how", "arguments"),
    [
        ("missing_required", {}),
        ("extra_property", {"city": "Paris", "unexpected_argument": True}),
    ],
)
def test_a_bad_tool_call_breaks_the_arguments_object(
    cassettes: dict[bool, Path], streamed: bool, how: str, arguments: dict[str, Any]
) -> None:
    got = answered(cassettes[streamed], streamed, faults.bad_tool_call(how))
    assert got["calls"] == [arguments]


@STREAMED
def test_a_wrong_type_and_an_unknown_tool(cassettes: dict[bool, Path], streamed: bool) -> None:
    wrong = answered(cassettes[streamed], streamed, faults.bad_tool_call("wrong_type"))
    assert not isinstance(wrong["calls"][0]["city"], str)
    unknown = answered(cassettes[streamed], streamed, faults.bad_tool_call("unknown_tool"))
    assert unknown["names"] == ["no_such_tool"]


@STREAMED
def test_a_duplicate_call(cassettes: dict[bool, Path], streamed: bool) -> None:
    got = answered(cassettes[streamed], streamed, faults.bad_tool_call("duplicate_id"))
    assert got["calls"] == [{"city": "Paris"}, {"city": "Paris"}]


@STREAMED
def test_arguments_that_are_no_json_are_left_as_the_models_text(
    cassettes: dict[bool, Path], streamed: bool
) -> None:
    got = answered(cassettes[streamed], streamed, faults.bad_tool_call("invalid_json"))
    assert got["calls"] == []
    assert got["content"].startswith('{"name": "get_weather", "arguments": {"city"')


@STREAMED
def test_a_length_stop_cuts_the_call_into_text(cassettes: dict[bool, Path], streamed: bool) -> None:
    got = answered(cassettes[streamed], streamed, faults.length_stop())
    assert (got["calls"], got["reason"]) == ([], "length")
    assert got["content"].startswith('{"name": "get_weather"')


@STREAMED
def test_an_empty_answer_a_refusal_and_reasoning_only(
    cassettes: dict[bool, Path], streamed: bool
) -> None:
    empty = answered(cassettes[streamed], streamed, faults.empty_answer())
    assert (empty["content"], empty["calls"], empty["reason"]) == ("", [], "stop")
    refused = answered(cassettes[streamed], streamed, faults.refusal("No."))
    assert (refused["content"], refused["calls"]) == ("No.", [])
    thought = answered(cassettes[streamed], streamed, faults.reasoning_only())
    assert (thought["content"], thought["calls"]) == ("", [])
    assert thought["thinking"]


def test_a_content_filter_is_refused_in_one_line(cassettes: dict[bool, Path]) -> None:
    with pytest.raises(fd.ConfigError) as raised:
        answered(cassettes[False], False, faults.content_filter())
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith("content_filter at ollama.chat: Ollama chat cannot show it")


def ask_generated(c: ollama.Client, streamed: bool) -> dict[str, Any]:
    """A generated answer as a program sees it: a whole one, or a stream's lines gathered."""
    if not streamed:
        reply = c.generate(model="llama-x", prompt="hi there", stream=False)
        return {"text": reply.response, "thinking": reply.thinking, "reason": reply.done_reason}
    text, thinking, reason = "", "", None
    for part in c.generate(model="llama-x", prompt="hi there", stream=True):
        text += part.response or ""
        thinking += part.thinking or ""
        reason = part.done_reason if part.done else reason
    return {"text": text, "thinking": thinking or None, "reason": reason}


GENERATING = Asking(client, ask_generated)


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> dict[bool, Path]:
    return GENERATING.record(tmp_path_factory.mktemp("ollama-generate"), create_app())


@STREAMED
def test_a_generated_answer_empty_refused_or_reasoning_only(
    generated: dict[bool, Path], streamed: bool
) -> None:
    path = generated[streamed]
    with fd.Deck(path, mode="replay") as deck:
        assert ask_generated(client(deck, DEAD), streamed)["text"] == "You said: hi there"
    empty = GENERATING.answered(path, streamed, faults.empty_answer())
    assert (empty["text"], empty["reason"]) == ("", "stop")
    refused = GENERATING.answered(path, streamed, faults.refusal("No."))
    assert (refused["text"], refused["reason"]) == ("No.", "stop")
    thought = GENERATING.answered(path, streamed, faults.reasoning_only())
    assert thought["text"] == ""
    assert thought["thinking"]


@pytest.mark.parametrize("fault", [faults.bad_tool_call(), faults.length_stop()])
def test_a_tool_call_fault_at_generate_is_refused_in_one_line(
    generated: dict[bool, Path], fault: fd.Fault
) -> None:
    for streamed in (False, True):
        with pytest.raises(fd.ConfigError) as raised:
            GENERATING.answered(generated[streamed], streamed, fault)
        message = str(raised.value)
        assert "\n" not in message
        assert message.startswith(
            "a tool-call fault at ollama.generate: Ollama generate (text, no tool calls) "
            "cannot show it"
        )


def test_a_rehearsal_places_no_tool_call_fault_at_generate(generated: dict[bool, Path]) -> None:
    def entry(deck: fd.Deck, clock: fd.VirtualClock) -> list[fd.Outcome]:
        try:
            ask_generated(client(deck, DEAD), False)
        except (ollama.ResponseError, httpx.HTTPError):
            return [fd.Outcome("answer", "stopped", reason="transient")]
        return [fd.Outcome("answer", "ok")]

    matrix = fd.rehearse(entry, str(generated[False]))
    labels = {cell.label for cell in matrix.cells}
    assert "timeout" in labels  # the matrix ran its network rows at the call
    assert "bad tool call" not in labels
