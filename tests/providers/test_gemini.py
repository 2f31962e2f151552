"""Google Gemini through the real google-genai SDK: a tool-calling turn recorded against a
local fake of the Gemini API, replayed offline (streamed and not, sync and async, through
``http_options`` and through ``fd.intercept``), every fault seen as the SDK's own exception,
and the API key never on disk."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from google import genai
from google.genai import errors, types

import faultdeck as fd
from faultdeck import faults
from faultdeck._cassette.summary import brief
from faultdeck.http import Transport
from faultdeck.http._shapes import name_of
from tests.support.fake_gemini import DEFAULT_TEXT, create_app, tool_result_text
from tests.support.fake_upstream import Upstream
from tests.support.gemini_sdk import ASK, CONFIG, DEAD, KEY, MODEL, arun, ask, client, turn
from tests.support.sdk import model_spans


@pytest.fixture
def fake() -> Iterator[Upstream]:
    with Upstream(app=create_app()) as upstream:
        yield upstream


@pytest.fixture(scope="module")
def cassettes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Recordings made once against the fake, which is stopped before any replay."""
    folder = tmp_path_factory.mktemp("gemini")
    paths = {name: folder / f"{name}.jsonl" for name in ("plain", "stream", "async", "astream")}
    with Upstream(app=create_app()) as fake:
        record(fake, paths)
    return paths


def record(fake: Upstream, paths: dict[str, Path]) -> None:
    for name, stream in (("plain", False), ("stream", True)):
        with fd.Deck(paths[name], mode="record", clock=fd.SystemClock()) as deck:
            with client(deck, fake.url) as gemini:
                assert turn(gemini, stream=stream) == tool_result_text("sunny")
    for name, stream in (("async", False), ("astream", True)):
        with fd.Deck(paths[name], mode="record", clock=fd.SystemClock()) as deck:
            text = arun(deck, fake.url, stream=stream)
            assert text == tool_result_text("rainy")


def replay(path: Path, *plan: fd.Fault) -> fd.Deck:
    return fd.Deck(path, mode="replay", faults=list(plan), clock=fd.VirtualClock())


@pytest.mark.parametrize(
    ("name", "method"),
    [("plain", "gemini.generate_content"), ("stream", "gemini.stream_generate_content")],
)
def test_a_tool_calling_turn_replays_offline(
    cassettes: dict[str, Path], name: str, method: str
) -> None:
    with replay(cassettes[name]) as deck, client(deck, DEAD) as gemini:
        assert turn(gemini, stream=name == "stream") == tool_result_text("sunny")
    calls = deck.report().calls
    assert [(c.kind, c.name, c.source) for c in calls] == [("model", method, "replay")] * 2


def test_a_stream_is_recorded_as_its_events(cassettes: dict[str, Path]) -> None:
    lines = [json.loads(line) for line in cassettes["stream"].read_text().splitlines()]
    streams = [line["stream"] for line in lines if "stream" in line]
    assert len(streams) == 2
    words = [e["data"]["candidates"][0]["content"]["parts"][0] for e in streams[1]["events"]]
    assert "".join(part["text"] for part in words) == tool_result_text("sunny")
    assert len(words) > 1, "one event per chunk the fake sent"


@pytest.mark.parametrize("name", ["async", "astream"])
def test_the_async_client_replays_offline(cassettes: dict[str, Path], name: str) -> None:
    with replay(cassettes[name]) as deck:
        text = arun(deck, DEAD, stream=name == "astream")
    assert text == tool_result_text("rainy")
    assert [c.source for c in deck.report().calls] == ["replay", "replay"]


def test_intercept_routes_the_default_client_with_no_code_change(
    fake: Upstream, tmp_path: Path
) -> None:
    path = tmp_path / "attached.jsonl"
    plain = types.HttpOptions(base_url=fake.url)  # the SDK's own httpx2 and aiohttp clients
    with fd.Deck(path, mode="record", clock=fd.SystemClock()) as deck, fd.intercept(deck):
        gemini = genai.Client(api_key=KEY, http_options=plain)
        assert gemini.models.generate_content(model=MODEL, contents="hi").text == DEFAULT_TEXT
        streamed = gemini.models.generate_content_stream(model=MODEL, contents="hi")
        assert "".join(chunk.text or "" for chunk in streamed) == DEFAULT_TEXT
        gemini.close()
    fake.stop()
    with replay(path) as deck, fd.intercept(deck):
        gemini = genai.Client(api_key=KEY, http_options=types.HttpOptions(base_url=DEAD))
        assert gemini.models.generate_content(model=MODEL, contents="hi").text == DEFAULT_TEXT
        streamed = gemini.models.generate_content_stream(model=MODEL, contents="hi")
        assert "".join(chunk.text or "" for chunk in streamed) == DEFAULT_TEXT
        gemini.close()
    calls = deck.report().calls
    assert [(c.name, c.source) for c in calls] == [
        ("gemini.generate_content", "replay"),
        ("gemini.stream_generate_content", "replay"),
    ]
    assert KEY.encode() not in path.read_bytes()


# google-genai subclasses aiohttp's ClientSession, which aiohttp warns about.
@pytest.mark.filterwarnings("ignore:Inheritance class AiohttpClientSession:DeprecationWarning")
def test_intercept_routes_the_async_client_through_its_aiohttp_session(
    fake: Upstream, tmp_path: Path
) -> None:
    path = tmp_path / "aio.jsonl"

    async def both(url: str) -> tuple[str | None, str]:
        gemini = genai.Client(api_key=KEY, http_options=types.HttpOptions(base_url=url))
        whole = await gemini.aio.models.generate_content(model=MODEL, contents="hi")
        streamed = ""
        async for chunk in await gemini.aio.models.generate_content_stream(
            model=MODEL, contents="hi"
        ):
            streamed += chunk.text or ""
        await gemini.aio.aclose()
        return whole.text, streamed

    with fd.Deck(path, mode="record", clock=fd.SystemClock()) as deck, fd.intercept(deck):
        assert asyncio.run(both(fake.url)) == (DEFAULT_TEXT, DEFAULT_TEXT)
    fake.stop()
    with replay(path) as deck, fd.intercept(deck):
        assert asyncio.run(both(DEAD)) == (DEFAULT_TEXT, DEFAULT_TEXT)
    assert [(c.name, c.source) for c in deck.report().calls] == [
        ("gemini.generate_content", "replay"),
        ("gemini.stream_generate_content", "replay"),
    ]


# --------------------------------------------------------------------------- faults


def test_a_quota_with_retry_info_is_the_sdks_client_error(cassettes: dict[str, Path]) -> None:
    with (
        replay(cassettes["plain"], faults.quota(retry_after=2).at(seq=1)) as deck,
        client(deck, DEAD) as gemini,
    ):
        with pytest.raises(errors.ClientError) as caught:
            turn(gemini, stream=False)
    exc = caught.value
    assert (exc.code, exc.status) == (429, "RESOURCE_EXHAUSTED")
    details = exc.details["error"]["details"]
    assert {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "2s"} in details
    assert "retry-after" not in exc.response.headers, "Google sends the wait in the body only"
    failure = fd.classify_error(exc)
    assert isinstance(failure, fd.QuotaExhausted)
    assert (failure.status, failure.retry_after, failure.code) == (429, 2.0, "RESOURCE_EXHAUSTED")
    call = deck.report().calls[0]
    assert (call.source, call.error, call.retry_after, call.code) == (
        "fault",
        "RateLimitError",
        2.0,
        "RESOURCE_EXHAUSTED",
    )


def test_a_quota_without_retry_info_has_no_wait(cassettes: dict[str, Path]) -> None:
    with (
        replay(cassettes["stream"], faults.quota().at(seq=1)) as deck,
        client(deck, DEAD) as gemini,
    ):
        with pytest.raises(errors.ClientError) as caught:
            turn(gemini, stream=True)
    types_sent = [d["@type"] for d in caught.value.details["error"]["details"]]
    assert types_sent == ["type.googleapis.com/google.rpc.QuotaFailure"]
    failure = fd.classify_error(caught.value)
    assert isinstance(failure, fd.QuotaExhausted)
    assert failure.retry_after is None


@pytest.mark.parametrize(("status", "name"), [(503, "UNAVAILABLE"), (500, "INTERNAL")])
def test_a_transient_fault_is_the_sdks_server_error(
    cassettes: dict[str, Path], status: int, name: str
) -> None:
    with (
        replay(cassettes["plain"], faults.transient(status).at(seq=2)) as deck,
        client(deck, DEAD) as gemini,
    ):
        with pytest.raises(errors.ServerError) as caught:
            turn(gemini, stream=False)
    assert (caught.value.code, caught.value.status) == (status, name)
    failure = fd.classify_error(caught.value)
    assert isinstance(failure, fd.TransientError)
    assert failure.status == status
    assert [c.source for c in deck.report().calls] == ["replay", "fault"]


def test_a_timeout_is_the_http_clients_timeout(cassettes: dict[str, Path]) -> None:
    with (
        replay(cassettes["plain"], faults.timeout().at(seq=1)) as deck,
        client(deck, DEAD) as gemini,
    ):
        with pytest.raises(httpx.ReadTimeout) as caught:
            turn(gemini, stream=False)
    failure = fd.classify_error(caught.value)
    assert isinstance(failure, fd.TransientError)
    assert failure.code == "timeout"


def test_a_cut_stream_raises_after_its_first_chunk(cassettes: dict[str, Path]) -> None:
    got: list[str] = []
    plan = faults.stream_cut(after=1).at(seq=2)
    with replay(cassettes["stream"], plan) as deck, client(deck, DEAD) as gemini:
        first: Any = ask(gemini, ASK, stream=True)
        answered = types.Part.from_function_response(
            name="get_weather", response={"result": "sunny"}
        )
        history = [*ASK, first.candidates[0].content, types.Content(role="user", parts=[answered])]
        chunks = gemini.models.generate_content_stream(model=MODEL, contents=history, config=CONFIG)
        with pytest.raises(httpx.RemoteProtocolError) as caught:
            got.extend(chunk.text or "" for chunk in chunks)
    assert got == ["It "], "the chunk before the cut reached the loop"
    assert isinstance(fd.classify_error(caught.value), fd.TransientError)


def test_an_error_event_mid_stream_is_the_sdks_server_error(cassettes: dict[str, Path]) -> None:
    plan = faults.stream_cut(after=1, how="error_event").at(seq=2)
    with replay(cassettes["stream"], plan) as deck, client(deck, DEAD) as gemini:
        with pytest.raises(errors.ServerError) as caught:
            turn(gemini, stream=True)
    assert (caught.value.code, caught.value.status) == (503, "UNAVAILABLE")
    assert isinstance(fd.classify_error(caught.value), fd.TransientError)


def test_the_async_client_sees_the_same_faults(cassettes: dict[str, Path]) -> None:
    with replay(cassettes["async"], faults.quota(retry_after=1.5).at(seq=1)) as deck:
        with pytest.raises(errors.ClientError) as caught:
            arun(deck, DEAD, stream=False)
    failure = fd.classify_error(caught.value)
    assert isinstance(failure, fd.QuotaExhausted)
    assert failure.retry_after == 1.5


# --------------------------------------------------------------------------- names, keys


@pytest.mark.parametrize(
    ("path", "name"),
    [
        ("/v1beta/models/gemini-2.0-flash:generateContent", "gemini.generate_content"),
        ("/v1/models/gemini-2.0-flash:streamGenerateContent", "gemini.stream_generate_content"),
        (
            "/v1/projects/p/locations/us-central1/publishers/google/models/gemini-2.0-flash"
            ":generateContent",
            "gemini.generate_content",
        ),
        (
            "/v1beta/models/gemini-2.0-flash:countTokens",
            "POST /v1beta/models/gemini-2.0-flash:countTokens",
        ),
    ],
)
def test_gemini_paths_are_model_calls(path: str, name: str) -> None:
    assert name_of("POST", path)[1] == name


def test_vertex_paths_record_and_replay(fake: Upstream, tmp_path: Path) -> None:
    path = tmp_path / "vertex.jsonl"
    where = "/v1/projects/p/locations/us-central1/publishers/google/models/gemini-2.0-flash"
    hello = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
    with fd.Deck(path, mode="record", clock=fd.SystemClock()) as deck:
        with httpx.Client(transport=Transport(deck)) as http:
            recorded = http.post(fake.url + where + ":generateContent", json=hello).json()
    fake.stop()
    with replay(path) as deck, httpx.Client(transport=Transport(deck)) as http:
        replayed = http.post(DEAD + where + ":generateContent", json=hello).json()
    assert replayed == recorded
    assert deck.report().calls[0].name == "gemini.generate_content"


def test_the_key_in_a_header_or_the_query_never_reaches_the_cassette(
    fake: Upstream, tmp_path: Path
) -> None:
    path = tmp_path / "keys.jsonl"
    plain = "gm-" + "plain0key1not2shaped3"  # a key of no known shape: masked by its name
    hello = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
    with (
        fd.Deck(path, mode="record", clock=fd.SystemClock()) as deck,
        client(deck, fake.url) as gemini,
    ):
        assert gemini.models.generate_content(model=MODEL, contents="hi").text == DEFAULT_TEXT
        with httpx2.Client(transport=Transport(deck, httpx=httpx2)) as http:
            where = f"{fake.url}/v1beta/models/{MODEL}:generateContent"
            assert http.post(f"{where}?key={KEY}", json=hello).status_code == 200
            assert http.post(f"{where}?key={plain}", json=hello).status_code == 200
    assert fake.requests[-3]["headers"]["x-goog-api-key"] == KEY, "the SDK sent it in a header"
    data = path.read_bytes()
    for secret in (KEY, plain):
        assert secret.encode() not in data
    assert b"x-goog-api-key" not in data
    assert fd.Redactor().scan_text(KEY) == ["google_api_key"], "scan knows its shape"


def test_its_spans_name_gemini_its_model_from_the_path_and_its_usage(
    cassettes: dict[str, Path],
) -> None:
    found = model_spans(cassettes["plain"], cassettes["stream"])
    assert found
    for name, attributes in found:
        assert name == f"generate_content {MODEL}"
        assert attributes["gen_ai.provider.name"] == "gcp.gemini"
        assert attributes["gen_ai.request.model"] == MODEL
        assert attributes["gen_ai.response.model"] == MODEL
        assert isinstance(attributes["gen_ai.usage.input_tokens"], int)
        assert isinstance(attributes["gen_ai.usage.output_tokens"], int)
        assert attributes["gen_ai.response.finish_reasons"] == ("STOP",)


def test_a_fork_sends_its_live_calls_to_its_model_by_path(fake: Upstream, tmp_path: Path) -> None:
    base, new = tmp_path / "base.jsonl", tmp_path / "new.jsonl"

    def models(deck: fd.Deck, url: str) -> list[str | None]:
        with client(deck, url) as gemini:
            return [ask(gemini, ASK, stream=False).model_version for _ in range(2)]

    with fd.Deck(base, mode="record", clock=fd.SystemClock()) as deck:
        assert models(deck, fake.url) == [MODEL, MODEL]
    fake.reset()
    with fd.Deck(new, mode="fork", parent=base, at=1, model="gemini-other") as deck:
        assert models(deck, fake.url) == [MODEL, "gemini-other"]
    (sent,) = fake.requests
    asked = fd.load(base).entries[0].args["path"]
    assert asked.endswith(f"/models/{MODEL}:generateContent")
    assert sent["path"] == asked.replace(MODEL, "gemini-other")
    recording = fd.load(new)
    assert [e.args["path"] for e in recording.entries] == [asked, sent["path"]]
    assert brief(recording).models == (MODEL, "gemini-other")  # as faultdeck compare reads them
    with fd.Deck(new, mode="replay") as deck:  # the program unchanged: it asks for MODEL
        assert models(deck, DEAD) == [MODEL, "gemini-other"]
    assert deck.report().used == 2
