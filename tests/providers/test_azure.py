"""Azure OpenAI through the openai SDK's ``AzureOpenAI``: its deployment routes are model
calls named ``azure.chat.completions`` (the ``api-version`` in the key), a tool-calling turn
replays offline streamed and not, each fault arrives in Azure's own shape as the SDK's own
exception, and neither the ``api-key`` nor an Entra ID token reaches the cassette."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx2
import openai
import pytest
from openai.types.chat import ChatCompletionMessageParam

import faultdeck as fd
from faultdeck import faults
from faultdeck.http import AsyncTransport, Transport
from tests.support import fake_azure
from tests.support.fake_upstream import OPENAI_TOOLS, Upstream
from tests.support.plants import JWT, rand
from tests.support.sdk import first_message, tool_turn

ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
KEY = rand("azure-key", ALNUM, 84)  # Azure's keys: 84 letters and digits, no prefix
OTHER_KEY = rand("azure-other", ALNUM, 84)
VERSION = "2024-10-21"
DEAD = "http://127.0.0.1:9"  # nothing listens: a replay that went live would fail loudly
ASK: list[ChatCompletionMessageParam] = [{"role": "user", "content": "What is the weather?"}]


def azure(deck: fd.Deck, url: str, version: str = VERSION, **kwargs: Any) -> openai.AzureOpenAI:
    http = httpx2.Client(transport=Transport(deck, httpx=httpx2))
    if "azure_ad_token" not in kwargs:
        kwargs.setdefault("api_key", OTHER_KEY)
    return openai.AzureOpenAI(azure_endpoint=url, api_version=version, http_client=http, **kwargs)


def turn(client: openai.AzureOpenAI, *, stream: bool) -> str:
    return tool_turn(client, model="gpt-4o", stream=stream)


@pytest.fixture(scope="module")
def cassettes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A turn recorded streamed and not against the fake Azure, which is then stopped."""
    folder = tmp_path_factory.mktemp("azure")
    paths = {name: folder / f"{name}.jsonl" for name in ("chat", "stream")}
    with Upstream(app=fake_azure.create_app()) as upstream:
        for name, stream in (("chat", False), ("stream", True)):
            with fd.Deck(paths[name], mode="record", clock=fd.SystemClock()) as deck:
                with azure(deck, upstream.url, api_key=KEY) as client:
                    assert turn(client, stream=stream) == "It is sunny in Paris."
        headers = upstream.requests[0]["headers"]
        assert headers["api-key"] == KEY  # the key did go out
    return paths


def replay(path: Path, *plan: fd.Fault) -> fd.Deck:
    return fd.Deck(path, mode="replay", faults=list(plan), clock=fd.VirtualClock())


def lines(path: Path) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in path.read_text("utf-8").splitlines()]
    return [row for row in rows if "seq" in row and "kind" in row]


def test_deployment_calls_are_model_calls_keyed_with_their_api_version(
    cassettes: dict[str, Path],
) -> None:
    for path in cassettes.values():
        calls = lines(path)
        assert [(c["kind"], c["name"]) for c in calls] == [("model", "azure.chat.completions")] * 2
        args = calls[0]["args"]
        assert args["path"] == "/openai/deployments/gpt-4o/chat/completions"
        assert args["query"] == [["api-version", VERSION]]
    # Another api-version is another request: it is not answered from this recording.
    deck = fd.Deck(cassettes["chat"], mode="replay", clock=fd.VirtualClock())
    with deck, azure(deck, DEAD, "2025-01-01-preview", max_retries=0) as client:
        with pytest.raises(fd.ReplayMiss, match='now "2025-01-01-preview"'):
            client.chat.completions.create(model="gpt-4o", messages=ASK, tools=OPENAI_TOOLS)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_tool_calling_turn_replays_offline(cassettes: dict[str, Path], stream: bool) -> None:
    deck = replay(cassettes["stream" if stream else "chat"])
    with deck, azure(deck, DEAD) as client:
        assert turn(client, stream=stream) == "It is sunny in Paris."
    assert [c.source for c in deck.report().calls] == ["replay", "replay"]


def test_quota_is_azures_429_with_its_retry_hint(cassettes: dict[str, Path]) -> None:
    deck = replay(cassettes["chat"], faults.quota(retry_after=7).at(seq=1))
    with deck, azure(deck, DEAD, max_retries=0) as client:
        with pytest.raises(openai.RateLimitError) as raised:
            turn(client, stream=False)
    error = raised.value
    assert error.code == "429"
    assert "ChatCompletions_Create Operation" in error.message
    assert "Please retry after 7 seconds" in error.message
    assert error.response.headers["retry-after"] == "7"
    assert error.response.headers["retry-after-ms"] == "7000"
    failure = fd.classify_error(error)
    assert isinstance(failure, fd.QuotaExhausted)
    assert failure.retry_after == 7.0


def test_quota_without_a_hint_sends_no_retry_headers(cassettes: dict[str, Path]) -> None:
    deck = replay(cassettes["chat"], faults.quota().at(seq=1))
    with deck, azure(deck, DEAD, max_retries=0) as client:
        with pytest.raises(openai.RateLimitError) as raised:
            turn(client, stream=False)
    assert "retry-after" not in raised.value.response.headers
    assert "quotaincrease" in raised.value.message


def test_the_sdk_retries_azures_429_and_the_turn_completes(cassettes: dict[str, Path]) -> None:
    clock = fd.VirtualClock()
    plan = [faults.quota(retry_after=2).at(seq=1)]
    deck = fd.Deck(cassettes["chat"], mode="replay", faults=plan, clock=clock, repeats="last")
    with deck, azure(deck, DEAD, max_retries=1) as client:
        assert turn(client, stream=False) == "It is sunny in Paris."
    # The SDK waited the 2 s Azure asked for (read off this deployment's failed call).
    assert clock.waited == 2.0


@pytest.mark.parametrize(
    ("status", "error", "code"),
    [
        (500, openai.InternalServerError, "InternalServerError"),
        (503, openai.InternalServerError, "ServiceUnavailable"),
    ],
)
def test_transient_errors_are_azures_5xx(
    cassettes: dict[str, Path], status: int, error: type[Exception], code: str
) -> None:
    deck = replay(cassettes["chat"], faults.transient(status=status).at(seq=1))
    with deck, azure(deck, DEAD, max_retries=0) as client:
        with pytest.raises(error) as raised:
            turn(client, stream=False)
    assert isinstance(raised.value, openai.APIStatusError)
    assert raised.value.status_code == status
    assert raised.value.code == code
    assert isinstance(fd.classify_error(raised.value), fd.TransientError)


def test_a_timeout_is_the_sdks_timeout(cassettes: dict[str, Path]) -> None:
    deck = replay(cassettes["stream"], faults.timeout().at(seq=1))
    with deck, azure(deck, DEAD, max_retries=0) as client:
        with pytest.raises(openai.APITimeoutError) as raised:
            turn(client, stream=True)
    assert isinstance(fd.classify_error(raised.value), fd.TransientError)


def test_a_cut_stream_is_a_connection_error_mid_stream(cassettes: dict[str, Path]) -> None:
    deck = replay(cassettes["stream"], faults.stream_cut(after=2).at(seq=1))
    seen: list[Any] = []
    with deck, azure(deck, DEAD, max_retries=0) as client:
        stream = client.chat.completions.create(
            model="gpt-4o", messages=ASK, tools=OPENAI_TOOLS, stream=True
        )
        with pytest.raises(openai.APIConnectionError):
            seen.extend(stream)
    assert len(seen) == 2


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_the_content_filter_stops_the_answer_with_azures_verdict(
    cassettes: dict[str, Path], stream: bool
) -> None:
    deck = replay(cassettes["stream" if stream else "chat"], faults.content_filter().at(seq=1))
    with deck, azure(deck, DEAD) as client:
        if stream:
            with pytest.raises(openai.ContentFilterFinishReasonError):
                with client.chat.completions.stream(
                    model="gpt-4o", messages=ASK, tools=OPENAI_TOOLS
                ) as events:
                    events.get_final_completion()
            return
        reply = client.chat.completions.create(model="gpt-4o", messages=ASK, tools=OPENAI_TOOLS)
    choice = reply.choices[0]
    assert choice.finish_reason == "content_filter"
    assert not choice.message.tool_calls
    verdict = choice.model_extra["content_filter_results"]  # type: ignore[index]
    assert verdict["violence"] == {"filtered": True, "severity": "medium"}
    assert verdict["hate"] == {"filtered": False, "severity": "safe"}


def test_a_bad_tool_call_breaks_the_azure_answer(cassettes: dict[str, Path]) -> None:
    for path, stream in ((cassettes["chat"], False), (cassettes["stream"], True)):
        deck = replay(path, faults.bad_tool_call(how="wrong_type").at(seq=1))
        with deck, azure(deck, DEAD) as client:
            message = first_message(client, list(ASK), model="gpt-4o", stream=stream)
        assert message.tool_calls
        call = message.tool_calls[0]
        assert call.type == "function"
        assert not isinstance(json.loads(call.function.arguments)["city"], str)


def test_neither_the_api_key_nor_an_entra_token_reaches_the_cassette(tmp_path: Path) -> None:
    token = JWT  # an Entra ID access token is a JWT
    with Upstream(app=fake_azure.create_app()) as upstream:
        for name, auth in (("key", {"api_key": KEY}), ("token", {"azure_ad_token": token})):
            path = tmp_path / f"{name}.jsonl"
            with fd.Deck(path, mode="record", clock=fd.SystemClock()) as deck:
                with azure(deck, upstream.url, **auth) as client:
                    assert turn(client, stream=name == "token")
            sent = upstream.requests[-1]["headers"]
            assert sent.get("api-key") == KEY or sent.get("authorization") == f"Bearer {token}"
            data = path.read_bytes()
            assert KEY.encode() not in data
            assert token.encode() not in data
            assert b"api-key" not in data
            assert b"authorization" not in data.lower()
            # and it replays with another credential, offline
            deck = replay(path)
            with deck, azure(deck, DEAD) as client:
                assert turn(client, stream=name == "token") == "It is sunny in Paris."


def test_the_async_client_replays_and_gets_azures_quota(cassettes: dict[str, Path]) -> None:
    async def ask(deck: fd.Deck) -> openai.types.chat.ChatCompletion:
        http = httpx2.AsyncClient(transport=AsyncTransport(deck, httpx=httpx2))
        async with openai.AsyncAzureOpenAI(
            azure_endpoint=DEAD,
            api_key=OTHER_KEY,
            api_version=VERSION,
            http_client=http,
            max_retries=0,
        ) as client:
            return await client.chat.completions.create(
                model="gpt-4o", messages=ASK, tools=OPENAI_TOOLS
            )

    with replay(cassettes["chat"]) as deck:
        assert asyncio.run(ask(deck)).choices[0].message.tool_calls
    deck = replay(cassettes["chat"], faults.quota(retry_after=1).at(seq=1))
    with deck, pytest.raises(openai.RateLimitError, match="Please retry after 1 second\\."):
        asyncio.run(ask(deck))
