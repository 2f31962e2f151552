"""Ollama through the real ``ollama`` SDK: its native API recorded against a local fake,
replayed offline (NDJSON streams line by line), and faulted in Ollama's own shapes."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any, cast

import httpx
import httpx2
import ollama
import openai
import pytest

import faultdeck as fd
from faultdeck import faults
from faultdeck.http import AsyncTransport, Transport
from tests.support.fake_ollama import OLLAMA_TOOLS, create_app
from tests.support.fake_upstream import Upstream
from tests.support.sdk import model_spans

DEAD = "http://127.0.0.1:9"  # nothing listens: a replay that went live would fail loudly
ASK: list[dict[str, Any]] = [{"role": "user", "content": "What is the weather?"}]
ANSWERED = [*ASK, {"role": "tool", "content": "sunny"}]
# A proxy in front of Ollama may ask for a key: a Cohere-looking one (40 alnum, no prefix).
PROXY_KEY = "Qm7" + "Zp4Xr9Lk2Wd8Hs5Tn1Vb6Yc3Fg0Ja7Ue4Mo2Ri9Q"
BUSY = "server busy, please try again.  maximum pending requests exceeded"


def client(deck: fd.Deck, url: str, **kwargs: Any) -> ollama.Client:
    return ollama.Client(host=url, transport=Transport(deck, httpx=httpx), **kwargs)


def tool_turn(c: ollama.Client) -> tuple[ollama.ChatResponse, ollama.ChatResponse]:
    """A tool-calling turn: the model asks for the weather, then answers with it."""
    first = c.chat(model="llama-x", messages=ASK, tools=OLLAMA_TOOLS, stream=False)
    second = c.chat(model="llama-x", messages=ANSWERED, tools=OLLAMA_TOOLS, stream=False)
    return first, second


def streamed(c: ollama.Client) -> list[ollama.ChatResponse]:
    return list(c.chat(model="llama-x", messages=ANSWERED, stream=True))


@pytest.fixture(scope="module")
def cassettes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Recordings made once against the fake Ollama, which is then stopped; what the SDK
    saw while recording is kept beside them."""
    folder = tmp_path_factory.mktemp("ollama")
    paths = {name: folder / f"{name}.jsonl" for name in ("turn", "stream", "tools", "compat")}
    seen: dict[str, Any] = {}
    with Upstream(app=create_app()) as upstream:
        with fd.Deck(paths["turn"], mode="record", clock=fd.SystemClock()) as deck:
            headers = {"authorization": f"Bearer {PROXY_KEY}"}
            seen["turn"] = tool_turn(client(deck, upstream.url, headers=headers))
        with fd.Deck(paths["stream"], mode="record", clock=fd.SystemClock()) as deck:
            seen["stream"] = streamed(client(deck, upstream.url))
        with fd.Deck(paths["tools"], mode="record", clock=fd.SystemClock()) as deck:
            calls = client(deck, upstream.url).chat(
                model="llama-x", messages=ASK, tools=OLLAMA_TOOLS, stream=True
            )
            seen["tools"] = list(calls)
        with fd.Deck(paths["compat"], mode="record", clock=fd.SystemClock()) as deck:
            with compat_client(deck, upstream.url) as compat:
                seen["compat"] = compat.chat.completions.create(
                    model="llama-x", messages=cast(Any, ASK), tools=OLLAMA_TOOLS
                )
        assert upstream.requests[0]["headers"]["authorization"] == f"Bearer {PROXY_KEY}"
    return {"paths": paths, "seen": seen}


def compat_client(deck: fd.Deck, url: str, **kwargs: Any) -> openai.OpenAI:
    """The openai SDK on Ollama's OpenAI-compatible routes."""
    http = httpx2.Client(transport=Transport(deck, httpx=httpx2))
    return openai.OpenAI(base_url=f"{url}/v1", api_key="ollama", http_client=http, **kwargs)


def replay(path: Path, *plan: fd.Fault) -> fd.Deck:
    return fd.Deck(path, mode="replay", faults=list(plan), clock=fd.VirtualClock())


def lines(path: Path) -> list[dict[str, Any]]:
    """The cassette's call entries."""
    entries = [json.loads(line) for line in path.read_text().splitlines()]
    return [entry for entry in entries if "seq" in entry]


def test_a_tool_calling_turn_replays_offline(cassettes: dict[str, Any]) -> None:
    with replay(cassettes["paths"]["turn"]) as deck:
        first, second = tool_turn(client(deck, DEAD))
    assert first.message.tool_calls is not None
    call = first.message.tool_calls[0].function
    assert (call.name, dict(call.arguments)) == ("get_weather", {"city": "Paris"})
    assert second.message.content == "It is sunny in Paris."
    assert [(c.kind, c.name, c.source) for c in deck.report().calls] == [
        ("model", "ollama.chat", "replay"),
        ("model", "ollama.chat", "replay"),
    ]


def test_a_stream_is_stored_line_by_line_and_replays_the_same_objects(
    cassettes: dict[str, Any],
) -> None:
    path = cassettes["paths"]["stream"]
    (entry,) = lines(path)
    events = entry["stream"]["events"]
    recorded = cassettes["seen"]["stream"]
    assert len(events) == len(recorded) > 2, "one event per NDJSON line"
    assert all(isinstance(e["data"], dict) and "event" not in e for e in events)
    assert events[-1]["data"]["done"] is True
    assert len({e["data"]["created_at"] for e in events}) == 1, "timestamps normalized"
    with replay(path) as deck:
        parts = streamed(client(deck, DEAD))
    assert [p.message.content for p in parts] == [p.message.content for p in recorded]
    assert "".join(p.message.content or "" for p in parts) == "It is sunny in Paris."
    assert [p.done for p in parts] == [p.done for p in recorded]
    assert parts[-1].done_reason == "stop"
    assert parts[0].created_at == events[0]["data"]["created_at"]


def test_a_streamed_tool_call_replays_through_the_async_client(
    cassettes: dict[str, Any],
) -> None:
    async def run() -> list[ollama.ChatResponse]:
        with replay(cassettes["paths"]["tools"]) as deck:
            c = ollama.AsyncClient(host=DEAD, transport=AsyncTransport(deck, httpx=httpx))
            stream = await c.chat(model="llama-x", messages=ASK, tools=OLLAMA_TOOLS, stream=True)
            return [part async for part in stream]

    parts = asyncio.run(run())
    calls = [call for p in parts for call in p.message.tool_calls or ()]
    assert [(c.function.name, dict(c.function.arguments)) for c in calls] == [
        ("get_weather", {"city": "Paris"})
    ]


def test_the_openai_compatible_route_stays_openai(cassettes: dict[str, Any]) -> None:
    path = cassettes["paths"]["compat"]
    assert [e["name"] for e in lines(path)] == ["openai.chat.completions"]
    with replay(path) as deck, compat_client(deck, DEAD) as compat:
        reply = compat.chat.completions.create(
            model="llama-x", messages=cast(Any, ASK), tools=OLLAMA_TOOLS
        )
    assert reply.choices[0].message.tool_calls
    with replay(path, faults.quota(retry_after=1).at(seq=1)) as deck:
        with compat_client(deck, DEAD, max_retries=0) as compat:
            with pytest.raises(openai.RateLimitError) as caught:
                compat.chat.completions.create(
                    model="llama-x", messages=cast(Any, ASK), tools=OLLAMA_TOOLS
                )
    failure = fd.classify_error(caught.value)
    assert isinstance(failure, fd.QuotaExhausted)
    assert failure.retry_after == 1


def test_a_429_is_the_sdks_response_error_read_as_quota(cassettes: dict[str, Any]) -> None:
    with replay(cassettes["paths"]["turn"], faults.quota(retry_after=2).at(seq=1)) as deck:
        with pytest.raises(ollama.ResponseError) as caught:
            tool_turn(client(deck, DEAD))
    assert caught.value.status_code == 429
    assert "try again" in caught.value.error
    failure = fd.classify_error(caught.value)
    assert isinstance(failure, fd.QuotaExhausted)
    assert (failure.status, failure.code) == (429, "rate_limited")


@pytest.mark.parametrize(("status", "text"), [(503, BUSY), (500, "llama runner process")])
def test_a_transient_error_is_ollamas_error_body(
    cassettes: dict[str, Any], status: int, text: str
) -> None:
    with replay(cassettes["paths"]["turn"], faults.transient(status).at(seq=1)) as deck:
        with pytest.raises(ollama.ResponseError) as caught:
            tool_turn(client(deck, DEAD))
    assert caught.value.status_code == status
    assert caught.value.error.startswith(text)
    failure = fd.classify_error(caught.value)
    assert isinstance(failure, fd.TransientError)
    assert (failure.status, failure.code) == (status, "server_error")


def test_a_timeout_is_httpxs_which_the_sdk_lets_out(cassettes: dict[str, Any]) -> None:
    with replay(cassettes["paths"]["stream"], faults.timeout().at(seq=1)) as deck:
        with pytest.raises(httpx.ReadTimeout) as caught:
            streamed(client(deck, DEAD))
    assert isinstance(fd.classify_error(caught.value), fd.TransientError)


def read_until_broken(deck: fd.Deck) -> tuple[list[str], BaseException]:
    parts: list[str] = []
    try:
        for part in client(deck, DEAD).chat(model="llama-x", messages=ANSWERED, stream=True):
            parts.append(part.message.content or "")
    except Exception as exc:
        return parts, exc
    raise AssertionError("the stream was not broken")


def test_a_stream_cut_after_two_lines(cassettes: dict[str, Any]) -> None:
    with replay(cassettes["paths"]["stream"], faults.stream_cut(after=2).at(seq=1)) as deck:
        parts, exc = read_until_broken(deck)
    assert parts == ["It", " is"]
    assert isinstance(exc, httpx.RemoteProtocolError)
    assert isinstance(fd.classify_error(exc), fd.TransientError)


def test_an_error_mid_stream_is_the_line_ollama_sends(cassettes: dict[str, Any]) -> None:
    plan = faults.stream_cut(after=3, how="error_event").at(seq=1)
    with replay(cassettes["paths"]["stream"], plan) as deck:
        parts, exc = read_until_broken(deck)
    assert parts == ["It", " is", " sunny"]
    assert isinstance(exc, ollama.ResponseError)
    assert exc.status_code == -1
    assert exc.error.startswith("llama runner process")
    failure = fd.classify_error(exc)
    assert isinstance(failure, fd.TransientError)
    assert failure.code == "stream_error"
    assert deck.report().calls[0].error == "StreamError"


def test_a_malformed_line_breaks_the_sdks_json_parse(cassettes: dict[str, Any]) -> None:
    with replay(cassettes["paths"]["stream"], faults.malformed_stream().at(seq=1)) as deck:
        parts, exc = read_until_broken(deck)
    assert parts == ["It"]
    assert isinstance(exc, json.JSONDecodeError)


def test_the_sdks_connection_error_is_transient() -> None:
    with pytest.raises(ConnectionError) as caught:
        ollama.Client(host=DEAD).chat(model="llama-x", messages=ASK)
    failure = fd.classify_error(caught.value)
    assert isinstance(failure, fd.TransientError)
    assert failure.code == "connection"
    assert fd.classify_error(ConnectionError("a program's own")) is None


def test_a_proxy_key_in_the_authorization_header_never_reaches_disk(
    cassettes: dict[str, Any],
) -> None:
    data = cassettes["paths"]["turn"].read_bytes()
    assert PROXY_KEY.encode() not in data
    assert b"authorization" not in data.lower()


def test_the_zero_code_attach_records_and_replays_a_stream(tmp_path: Path) -> None:
    path = tmp_path / "attached.jsonl"
    with Upstream(app=create_app()) as upstream:
        with fd.Deck(path, mode="record", clock=fd.SystemClock()) as deck, fd.intercept(deck):
            with ollama.Client(host=upstream.url) as live:
                recorded = streamed(live)
    with replay(path, faults.stream_cut(after=1, how="error_event").at(seq=1)) as deck:
        with fd.intercept(deck), pytest.raises(ollama.ResponseError):
            streamed(ollama.Client(host=DEAD))
    with replay(path) as deck, fd.intercept(deck):
        parts = streamed(ollama.Client(host=DEAD))
    assert [p.message.content for p in parts] == [p.message.content for p in recorded]
    assert [e["name"] for e in lines(path)] == ["ollama.chat"]


def test_a_stale_answer_gives_the_previous_chat_answer_again(cassettes: dict[str, Any]) -> None:
    with replay(cassettes["paths"]["turn"], faults.stale_answer().at(seq=2)) as deck:
        first, second = tool_turn(client(deck, DEAD))
    assert second.message.tool_calls == first.message.tool_calls
    assert second.message.content != "It is sunny in Paris."


def test_a_secret_split_across_lines_is_masked_and_replays(tmp_path: Path) -> None:
    secret = "sk-proj-" + "Aa1Bb2Cc3Dd4Ee5Ff6Gg7Hh8"
    ask = [{"role": "user", "content": f"echo: the key is {secret} ok"}]
    path = tmp_path / "split.jsonl"
    with Upstream(app=create_app()) as upstream:
        with fd.Deck(path, mode="record", clock=fd.SystemClock()) as deck:
            live = "".join(
                p.message.content or ""
                for p in client(deck, upstream.url).chat(model="llama-x", messages=ask, stream=True)
            )
    assert live == f"the key is {secret} ok"
    data = path.read_bytes()
    assert secret[:20].encode() not in data
    (entry,) = lines(path)
    pieces = [e["data"]["message"]["content"] for e in entry["stream"]["events"]]
    assert len(pieces) > 5, "the answer came in pieces"
    with replay(path) as deck:
        parts = list(client(deck, DEAD).chat(model="llama-x", messages=ask, stream=True))
    text = "".join(p.message.content or "" for p in parts)
    assert text.startswith("the key is «redacted")
    assert text.endswith(" ok")
    assert secret not in text


def test_generate_and_embed_are_named_and_replay(tmp_path: Path) -> None:
    path = tmp_path / "generate.jsonl"

    def run(c: ollama.Client) -> tuple[Any, Any, Any]:
        whole = c.generate(model="llama-x", prompt="hi", stream=False).response
        pieces = [p.response for p in c.generate(model="llama-x", prompt="hi there", stream=True)]
        return whole, pieces, c.embed(model="embed-x", input=["a", "b"]).embeddings

    with Upstream(app=create_app()) as upstream:
        with fd.Deck(path, mode="record", clock=fd.SystemClock()) as deck:
            recorded = run(client(deck, upstream.url))
    assert recorded[0] == "You said: hi"
    assert [e["name"] for e in lines(path)] == [
        "ollama.generate",
        "ollama.generate",
        "ollama.embed",
    ]
    with replay(path) as deck:
        assert run(client(deck, DEAD)) == recorded
    with replay(path, faults.empty_answer().at(seq=3)) as deck, pytest.raises(fd.ConfigError):
        run(client(deck, DEAD))


def test_its_spans_name_ollama_and_read_its_counts(cassettes: dict[str, Any]) -> None:
    found = model_spans(cassettes["paths"]["turn"], cassettes["paths"]["stream"])
    assert found
    for name, attributes in found:
        assert name == "chat llama-x"
        assert attributes["gen_ai.provider.name"] == "ollama"
        assert attributes["gen_ai.usage.input_tokens"] == 12
        assert attributes["gen_ai.usage.output_tokens"] == 6
        assert attributes["gen_ai.response.finish_reasons"] == ("stop",)
