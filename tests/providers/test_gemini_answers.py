"""The misbehaviour catalogue inside a Gemini 200, as google-genai parses it: each fault
rendered in the ``GenerateContentResponse`` a replay hands the SDK, streamed and not, so that
the answer the SDK builds says what the fault says."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from google.genai import errors, types

import faultdeck as fd
from faultdeck import faults
from faultdeck.faults._gemini import WORDS
from faultdeck.faults._shows import SHOWS
from tests.support.fake_gemini import create_app
from tests.support.fake_upstream import Upstream
from tests.support.gemini_sdk import ASK, CONFIG, DEAD, MODEL, ask, client, turn

ANSWERED = [
    *ASK,
    types.Content(
        role="model",
        parts=[
            types.Part(function_call=types.FunctionCall(name="get_weather", args={"city": "Paris"}))
        ],
    ),
    types.Content(
        role="user",
        parts=[types.Part.from_function_response(name="get_weather", response={"result": "sunny"})],
    ),
]


@pytest.fixture(scope="module")
def cassettes(tmp_path_factory: pytest.TempPathFactory) -> dict[bool, Path]:
    """A tool-calling turn recorded, streamed and not; the fake is stopped before any replay."""
    folder = tmp_path_factory.mktemp("gemini-answers")
    paths = {False: folder / "plain.jsonl", True: folder / "stream.jsonl"}
    with Upstream(app=create_app()) as fake:
        for stream, path in paths.items():
            with fd.Deck(path, mode="record", clock=fd.SystemClock()) as deck:
                with client(deck, fake.url) as gemini:
                    turn(gemini, stream=stream)
    return paths


def answer(path: Path, fault: fd.Fault, *, stream: bool, seq: int = 1) -> Any:
    """The SDK's answer to call ``seq`` under ``fault``: a response, or a stream's chunks
    with the response they add up to (its parts joined, the last chunk's finish)."""
    contents = ASK if seq == 1 else ANSWERED
    plan = [fault.at(seq=seq)]
    with fd.Deck(path, mode="replay", faults=plan, clock=fd.VirtualClock()) as deck:
        with client(deck, DEAD) as gemini:
            if seq > 1:  # the turn's first call, as recorded
                ask(gemini, ASK, stream=stream)
            if not stream:
                return gemini.models.generate_content(model=MODEL, contents=contents, config=CONFIG)
            chunks: list[Any] = list(
                gemini.models.generate_content_stream(model=MODEL, contents=contents, config=CONFIG)
            )
    parts = [
        p for c in chunks if c.candidates[0].content for p in c.candidates[0].content.parts or []
    ]
    last = chunks[-1].candidates[0]
    whole = types.Candidate(
        content=types.Content(role="model", parts=parts),
        finish_reason=last.finish_reason,
        safety_ratings=last.safety_ratings,
    )
    return types.GenerateContentResponse(candidates=[whole])


STREAMED = pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])


@STREAMED
def test_an_empty_answer_has_no_parts(cassettes: dict[bool, Path], stream: bool) -> None:
    reply = answer(cassettes[stream], faults.empty_answer(), stream=stream)
    assert reply.text is None
    assert reply.function_calls is None
    assert reply.candidates[0].finish_reason == types.FinishReason.STOP


@STREAMED
def test_a_refusal_is_the_models_text(cassettes: dict[bool, Path], stream: bool) -> None:
    reply = answer(cassettes[stream], faults.refusal("No."), stream=stream)
    assert reply.text == "No."
    assert reply.function_calls is None


@STREAMED
def test_a_content_filter_ends_safety_without_the_call(
    cassettes: dict[bool, Path], stream: bool
) -> None:
    reply = answer(cassettes[stream], faults.content_filter(), stream=stream)
    candidate = reply.candidates[0]
    assert candidate.finish_reason == types.FinishReason.SAFETY
    assert reply.function_calls is None
    assert candidate.safety_ratings[0].blocked is True


@STREAMED
def test_a_reasoning_only_answer_holds_a_thought(cassettes: dict[bool, Path], stream: bool) -> None:
    reply = answer(cassettes[stream], faults.reasoning_only(), stream=stream)
    parts = reply.candidates[0].content.parts
    assert [part.thought for part in parts] == [True]
    assert reply.text is None, "the SDK leaves thoughts out of the text"


@STREAMED
def test_a_length_stop_inside_the_call_ends_max_tokens(
    cassettes: dict[bool, Path], stream: bool
) -> None:
    reply = answer(cassettes[stream], faults.length_stop(), stream=stream)
    assert reply.candidates[0].finish_reason == types.FinishReason.MAX_TOKENS
    assert reply.function_calls[0].args == {}, "no property fits whole in half the arguments"


@STREAMED
@pytest.mark.parametrize(
    ("how", "args", "name"),
    [
        ("missing_required", {}, "get_weather"),
        ("wrong_type", {"city": 12345}, "get_weather"),
        ("unknown_tool", {"city": "Paris"}, "no_such_tool"),
    ],
)
def test_a_bad_tool_call_breaks_the_schema_the_request_sent(
    cassettes: dict[bool, Path], stream: bool, how: str, args: dict[str, Any], name: str
) -> None:
    reply = answer(cassettes[stream], faults.bad_tool_call(how), stream=stream)
    (call,) = reply.function_calls
    assert (call.name, call.args) == (name, args)


@STREAMED
def test_a_duplicate_call_comes_twice(cassettes: dict[bool, Path], stream: bool) -> None:
    reply = answer(cassettes[stream], faults.bad_tool_call("duplicate_id"), stream=stream)
    assert [call.args for call in reply.function_calls] == [{"city": "Paris"}] * 2


@STREAMED
@pytest.mark.parametrize("how", ["invalid_json", "not_object"])
def test_arguments_that_are_no_object_end_malformed(
    cassettes: dict[bool, Path], stream: bool, how: str
) -> None:
    reply = answer(cassettes[stream], faults.bad_tool_call(how), stream=stream)
    assert reply.candidates[0].finish_reason == types.FinishReason.MALFORMED_FUNCTION_CALL
    assert reply.function_calls is None


def test_a_malformed_stream_is_the_sdks_parse_error(cassettes: dict[bool, Path]) -> None:
    with pytest.raises(errors.UnknownApiResponseError, match="this is not json"):
        answer(cassettes[True], faults.malformed_stream(), stream=True, seq=2)


def test_an_html_page_is_the_sdks_server_error(cassettes: dict[bool, Path]) -> None:
    with pytest.raises(errors.ServerError) as caught:
        answer(cassettes[False], faults.html_error(502), stream=False)
    assert caught.value.code == 502
    assert isinstance(fd.classify_error(caught.value), fd.TransientError)


def test_the_catalogue_says_what_gemini_shows_for_every_model_fault() -> None:
    for kind, words in WORDS.items():
        assert SHOWS[kind]["gemini"] == words
    assert "MALFORMED_FUNCTION_CALL" in SHOWS["bad_tool_call"]["gemini"]
