"""Provider-shaped faults at the HTTP boundary, through the real SDKs, judged by the invariants."""

from __future__ import annotations

import gc
import json
import weakref
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
from faultdeck.http import Transport
from tests.support.fake_upstream import OPENAI_TOOLS, Upstream

KEY_A = "sk-proj-" + "Aa1Bb2Cc3Dd4Ee5Ff6Gg7Hh8"
KEY_B = "sk-proj-" + "Zz9Yy8Xx7Ww6Vv5Uu4Tt3Ss2"
TOOLS = OPENAI_TOOLS
ASK: list[ChatCompletionMessageParam] = [{"role": "user", "content": "What is the weather?"}]
CLAUDE_ASK: list[MessageParam] = [{"role": "user", "content": "What is the weather?"}]
POLICY = fd.Policy(max_attempts=3, max_retry_after=5.0, max_total_wait=30.0)


@pytest.fixture(scope="module")
def cassettes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Recordings made once against the fake upstream, which is then stopped."""
    folder = tmp_path_factory.mktemp("http")
    paths = {name: folder / f"{name}.jsonl" for name in ("chat", "stream", "claude")}
    with Upstream() as upstream:
        with fd.Deck(paths["chat"], mode="record", clock=fd.SystemClock()) as deck:
            with openai_client(deck, upstream.url, KEY_A) as client:
                client.chat.completions.create(model="gpt-x", messages=ASK, tools=TOOLS)
        with fd.Deck(paths["stream"], mode="record", clock=fd.SystemClock()) as deck:
            with openai_client(deck, upstream.url, KEY_A) as client:
                read_stream(client)
        with fd.Deck(paths["claude"], mode="record", clock=fd.SystemClock()) as deck:
            with claude_client(deck, upstream.url) as claude:
                with claude.messages.stream(
                    model="claude-x", max_tokens=64, messages=CLAUDE_ASK
                ) as stream:
                    assert stream.get_final_message().content
    return paths


def openai_client(deck: fd.Deck, url: str, key: str = KEY_B, **kwargs: Any) -> openai.OpenAI:
    http = httpx2.Client(transport=Transport(deck, httpx=httpx2))
    return openai.OpenAI(base_url=f"{url}/v1", api_key=key, http_client=http, **kwargs)


def claude_client(deck: fd.Deck, url: str, **kwargs: Any) -> anthropic.Anthropic:
    http = httpx2.Client(transport=Transport(deck, httpx=httpx2))
    return anthropic.Anthropic(base_url=url, api_key="sk-ant-test", http_client=http, **kwargs)


def read_stream(client: openai.OpenAI) -> str:
    stream = client.chat.completions.create(model="gpt-x", messages=ASK, stream=True)
    return "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)


DEAD = "http://127.0.0.1:9"  # nothing listens: a replay that went live would fail loudly


def replay(path: Path, plan: list[fd.Fault]) -> tuple[fd.Deck, fd.VirtualClock]:
    clock = fd.VirtualClock()
    # A rehearsal: a call the loop retries after a fault gets its recorded answer again.
    return fd.Deck(path, mode="replay", faults=plan, clock=clock, repeats="last"), clock


def test_a_429_with_retry_after_ms_is_retried_by_the_sdk(cassettes: dict[str, Path]) -> None:
    deck, clock = replay(cassettes["chat"], [faults.quota(retry_after=0.02).at(seq=1)])
    with deck, openai_client(deck, DEAD) as client:
        reply = client.chat.completions.create(model="gpt-x", messages=ASK, tools=TOOLS)
    assert reply.choices[0].message.tool_calls
    calls = deck.report().calls
    assert [(c.source, c.error, c.retry_after) for c in calls] == [
        ("fault", "RateLimitError", 0.02),
        ("replay", None, None),
    ]
    assert clock.waited >= 0.02, "the SDK's wait shows on the virtual clock"
    assert calls[1].started - calls[0].started >= 0.02
    assert fd.check([], policy=POLICY, deck=deck, clock=clock) == []


def test_an_insufficient_quota_the_sdk_retries_breaks_no_early_retry(
    cassettes: dict[str, Path],
) -> None:
    deck, clock = replay(cassettes["chat"], [faults.quota(code="insufficient_quota").at(seq=1)])
    with deck, openai_client(deck, DEAD, max_retries=1) as client:
        client.chat.completions.create(model="gpt-x", messages=ASK, tools=TOOLS)
    calls = deck.report().calls
    assert [c.code for c in calls] == ["insufficient_quota", None]
    found = {v.invariant: v for v in fd.check([], policy=POLICY, deck=deck, clock=clock)}
    assert set(found) == {"no_early_retry", "call_budget"}
    assert "insufficient_quota" in str(found["no_early_retry"])


def test_the_sdk_does_not_retry_when_it_sees_it_must_not(cassettes: dict[str, Path]) -> None:
    deck, clock = replay(cassettes["chat"], [faults.quota(code="insufficient_quota").at(seq=1)])
    with deck, openai_client(deck, DEAD, max_retries=0) as client:
        with pytest.raises(openai.RateLimitError, match="exceeded your current quota"):
            client.chat.completions.create(model="gpt-x", messages=ASK, tools=TOOLS)
    assert fd.check([], policy=POLICY, deck=deck, clock=clock) == []


def cut_then_retry(client: openai.OpenAI, causes: list[BaseException | None]) -> str:
    """A loop that retries a stream that broke after its first token (the bug)."""
    for _ in range(2):
        try:
            return read_stream(client)
        except openai.APIConnectionError as exc:  # the SDK wraps the dropped connection
            causes.append(exc.__cause__)
            continue
    raise AssertionError("unreachable")


def keep_partial(client: openai.OpenAI) -> str:
    """A loop that keeps what arrived before the cut."""
    text = ""
    stream = client.chat.completions.create(model="gpt-x", messages=ASK, stream=True)
    try:
        for chunk in stream:
            text += chunk.choices[0].delta.content or "" if chunk.choices else ""
    except openai.APIConnectionError:
        pass
    return text


def test_a_stream_cut_the_loop_retries_breaks_committed_streams(
    cassettes: dict[str, Path],
) -> None:
    deck, clock = replay(cassettes["stream"], [faults.stream_cut(after=2).at(seq=1)])
    causes: list[BaseException | None] = []
    with deck, openai_client(deck, DEAD) as client:
        text = cut_then_retry(client, causes)
    assert text == "Hello from the fake upstream."
    assert [type(c) for c in causes] == [httpx2.RemoteProtocolError]
    calls = deck.report().calls
    assert [(c.partial, c.error) for c in calls] == [(True, "RemoteProtocolError"), (False, None)]
    outcomes = [fd.Outcome(None, "ok", text)]
    found = fd.check(outcomes, policy=POLICY, deck=deck, clock=clock)
    assert [v.invariant for v in found] == ["committed_streams"]
    assert "cut after its first event, retried at seq 2" in str(found[0])


def test_a_loop_that_keeps_partial_output_holds(cassettes: dict[str, Path]) -> None:
    deck, clock = replay(cassettes["stream"], [faults.stream_cut(after=3).at(seq=1)])
    with deck, openai_client(deck, DEAD) as client:
        text = keep_partial(client)
    assert text
    assert text != "Hello from the fake upstream."
    outcomes = [fd.Outcome(None, "degraded", text, "stream_cut")]
    assert fd.check(outcomes, policy=POLICY, deck=deck, clock=clock) == []


def test_an_anthropic_error_event_mid_stream(cassettes: dict[str, Path]) -> None:
    deck, _ = replay(cassettes["claude"], [faults.stream_cut(after=2, how="error_event").at(seq=1)])
    with deck, claude_client(deck, DEAD, max_retries=0) as claude:
        with pytest.raises(anthropic.APIStatusError, match="Overloaded"):
            with claude.messages.stream(model="claude-x", max_tokens=64, messages=CLAUDE_ASK) as s:
                s.get_final_message()
    assert deck.report().calls[0].partial


def test_an_anthropic_529_is_retried_by_the_sdk(cassettes: dict[str, Path]) -> None:
    deck, _ = replay(cassettes["claude"], [faults.transient(status=529).at(seq=1)])
    with deck, claude_client(deck, DEAD, max_retries=1) as claude:
        with claude.messages.stream(model="claude-x", max_tokens=64, messages=CLAUDE_ASK) as stream:
            assert stream.get_final_message().content
    assert [c.code for c in deck.report().calls] == ["overloaded_error", None]


def test_a_malformed_stream_fails_the_sdk_parser(cassettes: dict[str, Path]) -> None:
    deck, _ = replay(cassettes["stream"], [faults.malformed_stream().at(seq=1)])
    with deck, openai_client(deck, DEAD) as client:
        with pytest.raises(json.JSONDecodeError, match="Expecting property name"):
            read_stream(client)


@pytest.mark.parametrize("how", ["missing_field", "wrong_type", "unparseable", "unknown_tool"])
def test_a_tool_call_that_breaks_its_schema_inside_a_200(
    cassettes: dict[str, Path], how: str
) -> None:
    deck, _ = replay(cassettes["chat"], [faults.bad_tool_call(how=how).at(seq=1)])
    with deck, openai_client(deck, DEAD) as client:
        reply = client.chat.completions.create(model="gpt-x", messages=ASK, tools=TOOLS)
    call = reply.choices[0].message.tool_calls[0].function  # type: ignore[index, union-attr]
    if how == "unknown_tool":
        assert call.name == "no_such_tool"
        return
    if how == "unparseable":
        with pytest.raises(json.JSONDecodeError):
            json.loads(call.arguments)
        return
    arguments = json.loads(call.arguments)
    if how == "missing_field":
        assert "city" not in arguments
    else:
        assert not isinstance(arguments["city"], str)
    assert deck.report().calls[0].fault == "bad_tool_call"


def test_timeouts_and_resets_are_transport_errors(cassettes: dict[str, Path]) -> None:
    for fault, error in ((faults.timeout(), "ReadTimeout"), (faults.reset(), "ReadError")):
        deck, _ = replay(cassettes["chat"], [fault.at(seq=1)])
        with deck, openai_client(deck, DEAD, max_retries=0) as client:
            with pytest.raises((openai.APITimeoutError, openai.APIConnectionError)):
                client.chat.completions.create(model="gpt-x", messages=ASK, tools=TOOLS)
        assert deck.report().calls[0].error == error


def test_another_key_and_sdk_version_replay_the_same_calls(cassettes: dict[str, Path]) -> None:
    deck, _ = replay(cassettes["chat"], [])
    headers = {"X-Stainless-Package-Version": "9.9.9", "x-stainless-lang": "rust"}
    with deck, openai_client(deck, DEAD, KEY_B, default_headers=headers) as client:
        client.chat.completions.create(model="gpt-x", messages=ASK, tools=TOOLS)
    assert deck.report().ok
    raw = cassettes["chat"].read_bytes()
    for secret in (KEY_A, KEY_B):
        assert secret.encode() not in raw
    stored = fd.load(cassettes["chat"]).entries[0].args
    assert set(stored) == {"method", "path", "body"}, "only allowlisted headers are kept"
    for word in (b"x-stainless", b"user-agent", b"authorization", b"Bearer"):
        assert word not in raw.lower()


def test_record_mode_writes_the_injected_429(tmp_path: Path) -> None:
    path = tmp_path / "rec.jsonl"
    with Upstream() as upstream:
        deck = fd.Deck(path, mode="record", faults=[faults.quota(retry_after=0.01).at(seq=1)])
        with deck, openai_client(deck, upstream.url) as client:
            client.chat.completions.create(model="gpt-x", messages=ASK, tools=TOOLS)
        assert len(upstream.requests) == 1, "the 429 stood in for the first request"
    first, second = fd.load(path).entries
    assert first.fault == {
        "fault": "quota",
        "retry_after": 0.01,
        "code": "rate_limit_exceeded",
        "at": 1,
    }
    assert first.value["status"] == 429
    assert first.value["headers"]["retry-after-ms"] == "10"
    assert second.value["status"] == 200


def test_a_stream_is_marked_streamed_live_and_replayed(
    tmp_path: Path, cassettes: dict[str, Path]
) -> None:
    with Upstream() as upstream:
        with fd.Deck(tmp_path / "live.jsonl", mode="record", clock=fd.SystemClock()) as deck:
            with openai_client(deck, upstream.url, KEY_A) as client:
                read_stream(client)
                client.chat.completions.create(model="gpt-x", messages=ASK)
    assert [c.streamed for c in deck.calls] == [True, False]
    again, _ = replay(tmp_path / "live.jsonl", [])
    with again, openai_client(again, DEAD) as client:
        read_stream(client)
        client.chat.completions.create(model="gpt-x", messages=ASK)
    assert [c.streamed for c in again.calls] == [True, False]


def test_a_transport_fault_is_freed_when_dropped(tmp_path: Path) -> None:
    """The error a transport fault raises in the request's place leaves no cycle behind (its
    traceback holds the frames that raised it): dropped, it is freed at once, with the
    garbage collector off."""
    path = tmp_path / "plain.jsonl"
    body = {"model": "gpt-x", "messages": ASK}
    with Upstream() as upstream, fd.Deck(path, mode="record") as deck:
        with httpx2.Client(transport=Transport(deck, httpx=httpx2)) as client:
            client.post(f"{upstream.url}/v1/chat/completions", json=body).raise_for_status()
    gc.collect()
    gc.disable()
    try:
        deck, _ = replay(path, [faults.timeout().at(seq=1)])
        with deck, httpx2.Client(transport=Transport(deck, httpx=httpx2)) as client:
            with pytest.raises(httpx2.ReadTimeout) as raised:
                client.post(f"{DEAD}/v1/chat/completions", json=body)
            dropped = weakref.ref(raised.value)
            del raised
            assert dropped() is None
    finally:
        gc.enable()
    assert deck.report().calls[0].error == "ReadTimeout"
