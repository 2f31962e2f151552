"""Cohere v2 through the real ``cohere`` SDK (``ClientV2``): a tool-calling turn recorded
against a local fake, replayed offline streamed and not, and faulted in Cohere's shapes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

import cohere
import httpx
import pytest

import faultdeck as fd
from faultdeck import faults
from faultdeck.http import Transport
from tests.support.fake_cohere import COHERE_TOOLS, PLAN, create_app
from tests.support.fake_upstream import Upstream
from tests.support.sdk import model_spans

DEAD = "http://127.0.0.1:9"  # nothing listens: a replay that went live would fail loudly
# Cohere keys have no fixed prefix: 40 letters and digits.
KEY = "Xq4" + "Bn8Rt2Mw6Pz1Ks9Lv3Hd7Gf5Jc0Ye4Ua8Ni2Ot6"
ASK: list[Any] = [{"role": "user", "content": "What is the weather?"}]
NO_RETRY: Any = {"max_retries": 0}


def client(deck: fd.Deck, url: str) -> cohere.ClientV2:
    http = httpx.Client(transport=Transport(deck, httpx=httpx))
    return cohere.ClientV2(api_key=KEY, base_url=url, httpx_client=http)


def answered(call_id: str) -> list[Any]:
    call = {
        "id": call_id,
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
    }
    return [
        *ASK,
        {"role": "assistant", "tool_plan": PLAN, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call_id, "content": "sunny"},
    ]


def tool_turn(c: cohere.ClientV2, **options: Any) -> tuple[Any, Any]:
    """A tool-calling turn: the model asks for the weather, then answers with it. The key
    also goes in the body, as a proxy in front of Cohere may ask for it."""
    extra: Any = {"additional_body_parameters": {"api_key": KEY}, **options}
    first: Any = c.chat(model="command-x", messages=ASK, tools=COHERE_TOOLS, request_options=extra)
    call_id = first.message.tool_calls[0].id
    second = c.chat(
        model="command-x", messages=answered(call_id), tools=COHERE_TOOLS, request_options=extra
    )
    return first, second


def streamed(c: cohere.ClientV2, **options: Any) -> list[Any]:
    stream = c.chat_stream(
        model="command-x",
        messages=ASK,
        tools=COHERE_TOOLS,
        request_options=cast(Any, options or None),
    )
    return list(stream)


@pytest.fixture(scope="module")
def cassettes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Recordings made once against the fake Cohere, which is then stopped."""
    folder = tmp_path_factory.mktemp("cohere")
    paths = {name: folder / f"{name}.jsonl" for name in ("turn", "stream")}
    seen: dict[str, Any] = {}
    with Upstream(app=create_app()) as upstream:
        with fd.Deck(paths["turn"], mode="record", clock=fd.SystemClock()) as deck:
            seen["turn"] = tool_turn(client(deck, upstream.url))
        with fd.Deck(paths["stream"], mode="record", clock=fd.SystemClock()) as deck:
            seen["stream"] = streamed(client(deck, upstream.url))
        sent = upstream.requests[0]
        assert sent["headers"]["authorization"] == f"Bearer {KEY}"
        assert sent["json"]["api_key"] == KEY
    return {"paths": paths, "seen": seen}


def replay(path: Path, *plan: fd.Fault) -> fd.Deck:
    return fd.Deck(path, mode="replay", faults=list(plan), clock=fd.VirtualClock())


def test_a_tool_calling_turn_replays_offline(cassettes: dict[str, Any]) -> None:
    with replay(cassettes["paths"]["turn"]) as deck:
        first, second = tool_turn(client(deck, DEAD))
    (call,) = first.message.tool_calls
    assert (call.function.name, json.loads(call.function.arguments)) == (
        "get_weather",
        {"city": "Paris"},
    )
    assert first.finish_reason == "TOOL_CALL"
    assert second.message.content[0].text == "It is sunny in Paris."
    assert [(c.kind, c.name, c.source) for c in deck.report().calls] == [
        ("model", "cohere.chat", "replay"),
        ("model", "cohere.chat", "replay"),
    ]


def test_a_streamed_tool_call_replays_event_by_event(cassettes: dict[str, Any]) -> None:
    with replay(cassettes["paths"]["stream"]) as deck:
        events = streamed(client(deck, DEAD))
    recorded = cassettes["seen"]["stream"]
    assert [e.type for e in events] == [e.type for e in recorded]
    assert events[0].type == "message-start"
    assert events[-1].delta.finish_reason == "TOOL_CALL"
    arguments = "".join(
        e.delta.message.tool_calls.function.arguments for e in events if e.type == "tool-call-delta"
    )
    assert json.loads(arguments) == {"city": "Paris"}


def test_a_429_is_too_many_requests_read_as_quota(cassettes: dict[str, Any]) -> None:
    with replay(cassettes["paths"]["turn"], faults.quota(retry_after=2).at(seq=1)) as deck:
        with pytest.raises(cohere.TooManyRequestsError) as caught:
            tool_turn(client(deck, DEAD), **NO_RETRY)
    assert caught.value.status_code == 429
    assert "rate limit" in caught.value.body["message"]
    failure = fd.classify_error(caught.value)
    assert isinstance(failure, fd.QuotaExhausted)
    assert (failure.status, failure.retry_after, failure.code) == (429, 2, "rate_limited")


def test_the_sdk_retries_a_429_and_gets_the_recorded_answer(cassettes: dict[str, Any]) -> None:
    path = cassettes["paths"]["turn"]
    plan = [faults.quota(retry_after=0).at(seq=1)]
    with fd.Deck(path, mode="replay", faults=plan, clock=fd.VirtualClock(), repeats="last") as deck:
        first, _ = tool_turn(client(deck, DEAD), max_retries=1)
    assert first.message.tool_calls
    assert [(c.source, c.error) for c in deck.report().calls][:2] == [
        ("fault", "RateLimitError"),
        ("replay", None),
    ]


@pytest.mark.parametrize(
    ("status", "error"),
    [
        (500, cohere.InternalServerError),
        (503, cohere.ServiceUnavailableError),
        (504, cohere.GatewayTimeoutError),
    ],
)
def test_a_transient_error_is_the_sdks_class_for_its_status(
    cassettes: dict[str, Any], status: int, error: type[Exception]
) -> None:
    with replay(cassettes["paths"]["turn"], faults.transient(status).at(seq=1)) as deck:
        with pytest.raises(error) as caught:
            tool_turn(client(deck, DEAD), **NO_RETRY)
    assert caught.value.body["message"]  # type: ignore[attr-defined]
    failure = fd.classify_error(caught.value)
    assert isinstance(failure, fd.TransientError)
    assert failure.status == status


def test_a_timeout_is_httpxs(cassettes: dict[str, Any]) -> None:
    with replay(cassettes["paths"]["stream"], faults.timeout().at(seq=1)) as deck:
        with pytest.raises(httpx.ReadTimeout) as caught:
            streamed(client(deck, DEAD), **NO_RETRY)
    assert isinstance(fd.classify_error(caught.value), fd.TransientError)


def test_a_stream_cut_after_two_events(cassettes: dict[str, Any]) -> None:
    seen: list[str] = []

    def read(deck: fd.Deck) -> None:
        for event in client(deck, DEAD).chat_stream(
            model="command-x", messages=ASK, tools=COHERE_TOOLS
        ):
            seen.append(event.type)

    with replay(cassettes["paths"]["stream"], faults.stream_cut(after=2).at(seq=1)) as deck:
        with pytest.raises(httpx.RemoteProtocolError) as caught:
            read(deck)
    assert seen == ["message-start", "tool-plan-delta"]
    assert isinstance(fd.classify_error(caught.value), fd.TransientError)


def test_a_stream_that_gives_up_ends_its_message_with_error(cassettes: dict[str, Any]) -> None:
    plan = faults.stream_cut(after=3, how="error_event").at(seq=1)
    with replay(cassettes["paths"]["stream"], plan) as deck:
        events = streamed(client(deck, DEAD))
    assert [e.type for e in events] == [
        "message-start",
        "tool-plan-delta",
        "tool-call-start",
        "message-end",
    ]
    assert events[-1].delta.finish_reason == "ERROR"


def test_the_key_never_reaches_disk(cassettes: dict[str, Any]) -> None:
    for path in cassettes["paths"].values():
        data = path.read_bytes()
        assert KEY.encode() not in data
        assert b"authorization" not in data.lower()
    body = next(
        json.loads(line)["args"]["body"]
        for line in cassettes["paths"]["turn"].read_text().splitlines()
        if '"seq"' in line
    )
    assert body["api_key"] != KEY
    assert "redacted" in body["api_key"]


def test_the_zero_code_attach_records_and_replays(tmp_path: Path) -> None:
    path = tmp_path / "attached.jsonl"
    with Upstream(app=create_app()) as upstream:
        with fd.Deck(path, mode="record", clock=fd.SystemClock()) as deck, fd.intercept(deck):
            with httpx.Client() as http:
                live = cohere.ClientV2(api_key=KEY, base_url=upstream.url, httpx_client=http)
                recorded = streamed(live)
    with replay(path) as deck, fd.intercept(deck), httpx.Client() as http:
        events = streamed(cohere.ClientV2(api_key=KEY, base_url=DEAD, httpx_client=http))
    assert [e.type for e in events] == [e.type for e in recorded]
    assert KEY.encode() not in path.read_bytes()


def test_embed_is_named_and_replays(tmp_path: Path) -> None:
    path = tmp_path / "embed.jsonl"

    def run(c: cohere.ClientV2) -> Any:
        reply = c.embed(model="embed-x", input_type="search_query", texts=["a", "b"])
        return reply.embeddings.float_

    with Upstream(app=create_app()) as upstream:
        with fd.Deck(path, mode="record", clock=fd.SystemClock()) as deck:
            recorded = run(client(deck, upstream.url))
    assert len(recorded) == 2
    names = [json.loads(line).get("name") for line in path.read_text().splitlines()]
    assert "cohere.embed" in names
    with replay(path) as deck:
        assert run(client(deck, DEAD)) == recorded


def test_a_rehearsal_runs_the_misbehaviours_cohere_answers_show(
    cassettes: dict[str, Any],
) -> None:
    def entry(deck: fd.Deck, clock: fd.VirtualClock) -> list[fd.Outcome]:
        try:
            tool_turn(client(deck, DEAD), **NO_RETRY)
        except cohere.core.ApiError:
            return [fd.Outcome("turn", "stopped", reason="transient")]
        return [fd.Outcome("turn", "ok")]

    matrix = fd.rehearse(entry, str(cassettes["paths"]["turn"]))
    labels = {cell.label for cell in matrix.cells}
    assert {"bad tool call", "quota retry-after", "timeout"} <= labels


def test_its_spans_name_cohere_and_read_its_usage(cassettes: dict[str, Any]) -> None:
    found = model_spans(*cassettes["paths"].values())
    assert found
    for name, attributes in found:
        assert name == "chat command-x"
        assert attributes["gen_ai.provider.name"] == "cohere"
        assert attributes["gen_ai.usage.input_tokens"] == 30  # its tokens, not billed units
        assert attributes["gen_ai.usage.output_tokens"] == 6
        reasons: Any = attributes["gen_ai.response.finish_reasons"]
        assert set(reasons) <= {"TOOL_CALL", "COMPLETE"}
