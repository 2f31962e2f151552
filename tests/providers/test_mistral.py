"""Mistral through the mistralai SDK: its ``/v1/chat/completions`` is told from OpenAI's by
the SDK's user-agent and named ``mistral.chat.completions``, a tool-calling turn replays
offline streamed and not, each fault arrives in Mistral's shape as the SDK's own exception
(which ``fd.classify_error`` reads by its status), and the bearer key never reaches disk."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mistralai.client import Mistral
from mistralai.client.errors import ResponseValidationError, SDKError

import faultdeck as fd
from faultdeck import faults
from faultdeck.http import Transport
from tests.support import fake_mistral
from tests.support.fake_upstream import OPENAI_TOOLS, Upstream
from tests.support.plants import rand

ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
KEY = rand("mistral-key", ALNUM, 32)  # Mistral's keys: 32 letters and digits, no prefix
OTHER_KEY = rand("mistral-other", ALNUM, 32)
MODEL = "mistral-small-latest"
DEAD = "http://127.0.0.1:9"  # nothing listens: a replay that went live would fail loudly
ASK: list[Any] = [{"role": "user", "content": "What is the weather?"}]


def mistral(deck: fd.Deck, url: str, key: str = OTHER_KEY) -> Mistral:
    http = httpx2.Client(transport=Transport(deck, httpx=httpx2))
    return Mistral(api_key=key, server_url=url, client=http)


def first_call(client: Mistral, *, stream: bool) -> Any:
    """The model's first answer: its message, a streamed one gathered from the deltas."""
    if not stream:
        reply = client.chat.complete(model=MODEL, messages=ASK, tools=OPENAI_TOOLS)
        assert reply.choices
        return reply.choices[0]
    calls: list[Any] = []
    finish = None
    with client.chat.stream(model=MODEL, messages=ASK, tools=OPENAI_TOOLS) as events:
        for event in events:
            for choice in event.data.choices:
                calls += choice.delta.tool_calls or []
                finish = choice.finish_reason or finish
    return {"tool_calls": calls, "finish_reason": finish}


def turn(client: Mistral, *, stream: bool) -> str:
    """One tool-calling turn: the model calls ``get_weather``, gets its result, answers."""
    first = first_call(client, stream=stream)
    calls = first["tool_calls"] if stream else first.message.tool_calls
    assert calls
    call = calls[0]
    assert call.function.name == "get_weather"
    assert json.loads(str(call.function.arguments)) == {"city": "Paris"}
    messages = [
        *ASK,
        {"role": "assistant", "content": "", "tool_calls": [call.model_dump()]},
        {"role": "tool", "tool_call_id": call.id, "name": "get_weather", "content": "sunny"},
    ]
    final: Any = client.chat.complete(model=MODEL, messages=messages, tools=OPENAI_TOOLS)
    assert final.choices
    return str(final.choices[0].message.content)


@pytest.fixture(scope="module")
def cassettes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A turn recorded streamed and not against the fake Mistral, which is then stopped."""
    folder = tmp_path_factory.mktemp("mistral")
    paths = {name: folder / f"{name}.jsonl" for name in ("chat", "stream")}
    with Upstream(app=fake_mistral.create_app()) as upstream:
        for name, stream in (("chat", False), ("stream", True)):
            with fd.Deck(paths[name], mode="record", clock=fd.SystemClock()) as deck:
                with mistral(deck, upstream.url, KEY) as client:
                    assert turn(client, stream=stream) == "It is sunny in Paris."
        assert upstream.requests[0]["headers"]["authorization"] == f"Bearer {KEY}"
    return paths


def replay(path: Path, *plan: fd.Fault) -> fd.Deck:
    return fd.Deck(path, mode="replay", faults=list(plan), clock=fd.VirtualClock())


def names_in(path: Path) -> list[str]:
    """The names of the model calls a cassette holds."""
    rows = [json.loads(line) for line in path.read_text("utf-8").splitlines()]
    return [r["name"] for r in rows if r.get("kind") == "model"]


def test_the_sdks_calls_are_mistral_model_calls(cassettes: dict[str, Path]) -> None:
    for path in cassettes.values():
        assert names_in(path) == ["mistral.chat.completions"] * 2


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_tool_calling_turn_replays_offline(cassettes: dict[str, Path], stream: bool) -> None:
    deck = replay(cassettes["stream" if stream else "chat"])
    with deck, mistral(deck, DEAD) as client:
        assert turn(client, stream=stream) == "It is sunny in Paris."
    assert [c.source for c in deck.report().calls] == ["replay", "replay"]


def test_quota_is_mistrals_429_as_the_sdks_error(cassettes: dict[str, Path]) -> None:
    deck = replay(cassettes["chat"], faults.quota(retry_after=3).at(seq=1))
    with deck, mistral(deck, DEAD) as client:
        with pytest.raises(SDKError) as raised:
            turn(client, stream=False)
    error = raised.value
    assert error.status_code == 429
    body = json.loads(error.body)
    assert body["object"] == "error"
    assert body["type"] == "rate_limited"
    assert body["message"] == "Requests rate limit exceeded"
    assert error.headers["retry-after"] == "3"
    failure = fd.classify_error(error)
    assert isinstance(failure, fd.QuotaExhausted)
    assert (failure.status, failure.retry_after, failure.code) == (429, 3.0, "rate_limited")
    logged = deck.report().calls[0]
    assert (logged.error, logged.retry_after, logged.code) == (
        "RateLimitError",
        3.0,
        "rate_limited",
    )


@pytest.mark.parametrize("status", [500, 503])
def test_transient_errors_are_mistrals_5xx(cassettes: dict[str, Path], status: int) -> None:
    deck = replay(cassettes["chat"], faults.transient(status=status).at(seq=1))
    with deck, mistral(deck, DEAD) as client:
        with pytest.raises(SDKError) as raised:
            turn(client, stream=False)
    assert raised.value.status_code == status
    assert json.loads(raised.value.body)["object"] == "error"
    failure = fd.classify_error(raised.value)
    assert isinstance(failure, fd.TransientError)
    assert failure.status == status


def test_a_timeout_is_the_http_clients_timeout(cassettes: dict[str, Path]) -> None:
    deck = replay(cassettes["chat"], faults.timeout().at(seq=1))
    with deck, mistral(deck, DEAD) as client:
        with pytest.raises(httpx2.ReadTimeout) as raised:
            turn(client, stream=False)
    assert isinstance(fd.classify_error(raised.value), fd.TransientError)


def test_a_cut_stream_breaks_off_mid_stream(cassettes: dict[str, Path]) -> None:
    deck = replay(cassettes["stream"], faults.stream_cut(after=1).at(seq=1))
    seen: list[Any] = []
    with deck, mistral(deck, DEAD) as client:
        events = client.chat.stream(model=MODEL, messages=ASK, tools=OPENAI_TOOLS)
        with events, pytest.raises(httpx2.RemoteProtocolError) as raised:
            seen.extend(events)
    assert len(seen) == 1
    assert isinstance(fd.classify_error(raised.value), fd.TransientError)


def test_an_error_mid_stream_is_the_sdks_validation_error_read_as_transient(
    cassettes: dict[str, Path],
) -> None:
    # Mistral's SDK reads no error event: the error object where a chunk was due fails its
    # parse, which is what a program on it meets.
    plan = faults.stream_cut(after=1, how="error_event").at(seq=1)
    seen: list[Any] = []
    with replay(cassettes["stream"], plan) as deck, mistral(deck, DEAD) as client:
        events = client.chat.stream(model=MODEL, messages=ASK, tools=OPENAI_TOOLS)
        with events, pytest.raises(ResponseValidationError) as raised:
            seen.extend(events)
    assert len(seen) == 1
    assert json.loads(str(raised.value.body))["data"]["type"] == "internal_server_error"
    failure = fd.classify_error(raised.value)
    assert isinstance(failure, fd.TransientError)
    assert failure.code == "server_error"


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_bad_tool_call_reaches_the_sdk_parsed(cassettes: dict[str, Path], stream: bool) -> None:
    deck = replay(
        cassettes["stream" if stream else "chat"], faults.bad_tool_call(how="wrong_type").at(seq=1)
    )
    with deck, mistral(deck, DEAD) as client:
        first = first_call(client, stream=stream)
    calls = first["tool_calls"] if stream else first.message.tool_calls
    assert not isinstance(json.loads(str(calls[0].function.arguments))["city"], str)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_misbehaviours_render_as_mistral_answers(cassettes: dict[str, Path], stream: bool) -> None:
    path = cassettes["stream" if stream else "chat"]
    deck = replay(path, faults.content_filter().at(seq=1))
    with deck, mistral(deck, DEAD) as client:
        filtered = first_call(client, stream=stream)
    if stream:
        assert (filtered["tool_calls"], filtered["finish_reason"]) == ([], "content_filter")
    else:
        assert filtered.finish_reason == "content_filter"
        assert not filtered.message.tool_calls
    deck = replay(path, faults.refusal(text="No.").at(seq=1))
    with deck, mistral(deck, DEAD) as client:
        if stream:
            with client.chat.stream(model=MODEL, messages=ASK, tools=OPENAI_TOOLS) as events:
                text = "".join(str(c.delta.content or "") for e in events for c in e.data.choices)
        else:
            text = str(first_call(client, stream=False).message.content)
    assert text == "No."  # Mistral has no refusal field: the refusal is the text


def test_the_bearer_key_never_reaches_the_cassette(tmp_path: Path) -> None:
    path = tmp_path / "keyed.jsonl"
    said = f"my MISTRAL_API_KEY={KEY}"  # the key pasted into a prompt, too
    with Upstream(app=fake_mistral.create_app()) as upstream:
        with fd.Deck(path, mode="record", clock=fd.SystemClock()) as deck:
            with mistral(deck, upstream.url, KEY) as client:
                client.chat.complete(model=MODEL, messages=[{"role": "user", "content": said}])
        assert upstream.requests[0]["json"]["messages"][0]["content"] == said
    data = path.read_bytes()
    assert KEY.encode() not in data
    assert b"authorization" not in data.lower()
    assert fd.Redactor().scan_text(said) == ["mistral_key"]


async def ask_async(url: str, key: str) -> str:
    """One question through the SDK's own async client, closed after."""
    async with Mistral(api_key=key, server_url=url) as client:
        reply = await client.chat.complete_async(model=MODEL, messages=ASK)
    assert reply.choices
    return str(reply.choices[0].message.content)


def test_the_sdk_attaches_with_no_code_change_sync_and_async(tmp_path: Path) -> None:
    path = tmp_path / "intercepted.jsonl"
    with Upstream(app=fake_mistral.create_app()) as upstream:
        with fd.Deck(path, mode="record", clock=fd.SystemClock()) as deck, fd.intercept(deck):
            with Mistral(api_key=KEY, server_url=upstream.url) as client:
                assert turn(client, stream=False) == "It is sunny in Paris."
            assert asyncio.run(ask_async(upstream.url, KEY))
    assert names_in(path) == ["mistral.chat.completions"] * 3
    deck = replay(path)
    with deck, fd.intercept(deck):
        with Mistral(api_key=OTHER_KEY, server_url=DEAD) as client:
            assert turn(client, stream=False) == "It is sunny in Paris."
        assert asyncio.run(ask_async(DEAD, OTHER_KEY))
    assert KEY.encode() not in path.read_bytes()


CODESTRAL = "codestral-latest"
PROMPT, SUFFIX = "def add(a, b):\n", "\n\nprint(add(1, 2))"


def fim(client: Mistral, *, stream: bool) -> tuple[str, Any]:
    """A FIM completion's text and finish reason, a streamed one gathered from the deltas."""
    if not stream:
        reply = client.fim.complete(model=CODESTRAL, prompt=PROMPT, suffix=SUFFIX)
        assert reply.choices
        choice = reply.choices[0]
        assert choice.message is not None
        return str(choice.message.content or ""), choice.finish_reason
    text, finish = "", None
    with client.fim.stream(model=CODESTRAL, prompt=PROMPT, suffix=SUFFIX) as events:
        for event in events:
            for choice in event.data.choices:
                text += str(choice.delta.content or "")
                finish = choice.finish_reason or finish
    return text, finish


@pytest.fixture(scope="module")
def completions(tmp_path_factory: pytest.TempPathFactory) -> dict[bool, Path]:
    """A FIM completion recorded whole and streamed against the fake Mistral."""
    folder = tmp_path_factory.mktemp("mistral-fim")
    paths = {stream: folder / f"fim-{stream}.jsonl" for stream in (False, True)}
    with Upstream(app=fake_mistral.create_app()) as upstream:
        for stream, path in paths.items():
            with fd.Deck(path, mode="record", clock=fd.SystemClock()) as deck:
                with mistral(deck, upstream.url, KEY) as client:
                    assert fim(client, stream=stream)[0] == fake_mistral.FIM_TEXT
    return paths


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_fim_completion_replays_and_shows_an_empty_or_refused_answer(
    completions: dict[bool, Path], stream: bool
) -> None:
    path = completions[stream]
    assert names_in(path) == ["mistral.fim.completions"]
    with replay(path) as deck, mistral(deck, DEAD) as client:
        assert fim(client, stream=stream) == (fake_mistral.FIM_TEXT, "stop")
    with replay(path, faults.empty_answer().at(seq=1)) as deck, mistral(deck, DEAD) as client:
        assert fim(client, stream=stream) == ("", "stop")
    refused = faults.refusal(text="No.").at(seq=1)
    with replay(path, refused) as deck, mistral(deck, DEAD) as client:
        assert fim(client, stream=stream) == ("No.", "stop")


def test_a_tool_call_fault_at_fim_is_refused_in_one_line(completions: dict[bool, Path]) -> None:
    for stream in (False, True):
        deck = replay(completions[stream], faults.bad_tool_call().at(seq=1))
        with deck, mistral(deck, DEAD) as client, pytest.raises(fd.ConfigError) as raised:
            fim(client, stream=stream)
        message = str(raised.value)
        assert "\n" not in message
        assert message.startswith("a tool-call fault at mistral.fim.completions: Mistral FIM")
