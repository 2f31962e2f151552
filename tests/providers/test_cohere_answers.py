"""The model misbehaving inside a valid Cohere v2 chat answer, streamed and not: what the
``cohere`` SDK (``ClientV2``) hands a program under each fault of the catalogue Cohere's
format shows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import cohere
import httpx
import pytest

import faultdeck as fd
from faultdeck import faults
from faultdeck.http import Transport
from tests.support.answers import DEAD, Asking
from tests.support.fake_cohere import COHERE_TOOLS, create_app

KEY = "cohere-test-key"
ASK: list[Any] = [{"role": "user", "content": "What is the weather?"}]
STREAMED = pytest.mark.parametrize("streamed", [False, True], ids=["whole", "streamed"])


def client(deck: fd.Deck, url: str) -> cohere.ClientV2:
    http = httpx.Client(transport=Transport(deck, httpx=httpx))
    return cohere.ClientV2(api_key=KEY, base_url=url, httpx_client=http)


def ask(c: cohere.ClientV2, streamed: bool) -> dict[str, Any]:
    """The answer as a program sees it: a whole one, or a stream's events gathered."""
    if not streamed:
        reply: Any = c.chat(model="command-x", messages=ASK, tools=COHERE_TOOLS)
        message = reply.message
        return {
            "content": [(item.type, getattr(item, item.type)) for item in message.content or ()],
            "plan": message.tool_plan,
            "calls": [
                (call.function.name, call.function.arguments) for call in message.tool_calls or ()
            ],
            "ids": [call.id for call in message.tool_calls or ()],
            "reason": reply.finish_reason,
        }
    content: dict[int, list[Any]] = {}
    calls: dict[int, list[Any]] = {}
    plan, ids, reason = "", [], None
    event: Any
    for event in c.chat_stream(model="command-x", messages=ASK, tools=COHERE_TOOLS):
        delta: Any = getattr(event, "delta", None)
        said: Any = getattr(delta, "message", None)
        if event.type == "content-start":
            item = said.content
            content[event.index] = [item.type, item.thinking or item.text or ""]
        elif event.type == "content-delta":
            piece = said.content
            content[event.index][1] += piece.thinking or piece.text or ""
        elif event.type == "tool-plan-delta":
            plan += said.tool_plan
        elif event.type == "tool-call-start":
            call = said.tool_calls
            calls[event.index] = [call.function.name, call.function.arguments or ""]
            ids.append(call.id)
        elif event.type == "tool-call-delta":
            calls[event.index][1] += said.tool_calls.function.arguments
        elif event.type == "message-end":
            reason = delta.finish_reason
    return {
        "content": [tuple(content[i]) for i in sorted(content)],
        "plan": plan or None,
        "calls": [tuple(calls[i]) for i in sorted(calls)],
        "ids": ids,
        "reason": reason,
    }


ASKING = Asking(client, ask)


@pytest.fixture(scope="module")
def cassettes(tmp_path_factory: pytest.TempPathFactory) -> dict[bool, Path]:
    return ASKING.record(tmp_path_factory.mktemp("cohere-answers"), create_app())


answered = ASKING.answered


def arguments(got: dict[str, Any]) -> list[Any]:
    return [json.loads(text) for _, text in got["calls"]]


@STREAMED
def test_as_recorded(cassettes: dict[bool, Path], streamed: bool) -> None:
    with fd.Deck(cassettes[streamed], mode="replay") as deck:
        got = ask(client(deck, DEAD), streamed)
    assert (arguments(got), got["reason"]) == ([{"city": "Paris"}], "TOOL_CALL")
    assert got["plan"] == "I will look up the weather."


@STREAMED
@pytest.mark.parametrize(
    ("how", "expected"),
    [
        ("missing_required", {}),
        ("extra_property", {"city": "Paris", "unexpected_argument": True}),
    ],
)
def test_a_bad_tool_call_breaks_the_arguments(
    cassettes: dict[bool, Path], streamed: bool, how: str, expected: dict[str, Any]
) -> None:
    got = answered(cassettes[streamed], streamed, faults.bad_tool_call(how))
    assert arguments(got) == [expected]
    assert got["reason"] == "TOOL_CALL"


@STREAMED
def test_a_wrong_type_an_unknown_tool_and_no_json(
    cassettes: dict[bool, Path], streamed: bool
) -> None:
    wrong = answered(cassettes[streamed], streamed, faults.bad_tool_call("wrong_type"))
    assert not isinstance(arguments(wrong)[0]["city"], str)
    unknown = answered(cassettes[streamed], streamed, faults.bad_tool_call("unknown_tool"))
    assert [name for name, _ in unknown["calls"]] == ["no_such_tool"]
    no_json = answered(cassettes[streamed], streamed, faults.bad_tool_call("invalid_json"))
    with pytest.raises(json.JSONDecodeError):
        arguments(no_json)


@STREAMED
def test_a_duplicate_call_has_the_same_id_twice(
    cassettes: dict[bool, Path], streamed: bool
) -> None:
    got = answered(cassettes[streamed], streamed, faults.bad_tool_call("duplicate_id"))
    assert arguments(got) == [{"city": "Paris"}, {"city": "Paris"}]
    assert len(set(got["ids"])) == 1


@STREAMED
def test_a_length_stop_cuts_the_call_and_ends_max_tokens(
    cassettes: dict[bool, Path], streamed: bool
) -> None:
    got = answered(cassettes[streamed], streamed, faults.length_stop())
    assert got["reason"] == "MAX_TOKENS"
    ((name, text),) = got["calls"]
    assert name == "get_weather"
    assert '{"city": "Paris"}'.startswith(text)
    assert text != '{"city": "Paris"}'


@STREAMED
def test_an_empty_answer_a_refusal_and_reasoning_only(
    cassettes: dict[bool, Path], streamed: bool
) -> None:
    empty = answered(cassettes[streamed], streamed, faults.empty_answer())
    assert (empty["content"], empty["calls"], empty["reason"]) == ([], [], "COMPLETE")
    refused = answered(cassettes[streamed], streamed, faults.refusal("No."))
    assert (refused["content"], refused["calls"], refused["plan"]) == ([("text", "No.")], [], None)
    thought = answered(cassettes[streamed], streamed, faults.reasoning_only())
    assert [kind for kind, _ in thought["content"]] == ["thinking"]
    assert thought["content"][0][1]
    assert (thought["calls"], thought["reason"]) == ([], "COMPLETE")


def test_a_content_filter_is_refused_in_one_line(cassettes: dict[bool, Path]) -> None:
    with pytest.raises(fd.ConfigError) as raised:
        answered(cassettes[False], False, faults.content_filter())
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith("content_filter at cohere.chat: Cohere v2 Chat cannot show it")
