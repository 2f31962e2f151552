"""Acceptance: the real SDKs record through fd.http transports and replay with no network.

Each record/replay test records against a fresh fake upstream (random ids and timestamps on
every response), stops it, then replays through a deck whose inner transport is a guard
that fails the test if anything tries to go live, with the clients still pointed at the
dead upstream's address.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest

import faultdeck as fd
from faultdeck.http import AsyncTransport, Transport
from tests.support.fake_upstream import (
    ANTHROPIC_TOOLS,
    DEFAULT_TEXT,
    OPENAI_TOOLS,
    Upstream,
    tool_result_text,
)
from tests.support.sdk import (
    ANTHROPIC_KEY,
    ANTHROPIC_MODEL,
    OPENAI_KEY,
    OPENAI_MODEL,
    QUESTION,
    NetworkGuard,
    anthropic_async,
    anthropic_sync,
    assert_clean_replay,
    assert_dead,
    openai_async,
    openai_sync,
)

WEATHER = "sunny"
FINAL_TEXT = tool_result_text(WEATHER)
MAX_MODEL_CALLS = 3


def get_weather(city: str) -> str:
    assert city == "Paris"
    return WEATHER


# ------------------------------------------------------------------ tool-calling loops


@dataclass(frozen=True)
class Outcome:
    """What a tool loop ended with: the final text, the tool-call ids it saw, its calls."""

    text: str
    tool_ids: tuple[str, ...]
    model_calls: int


def _openai_step(messages: list[Any], message: Any, ids: list[str]) -> None:
    messages.append(message.model_dump(exclude_none=True))
    for call in message.tool_calls:
        assert call.function.name == "get_weather"
        ids.append(call.id)
        result = get_weather(**json.loads(call.function.arguments))
        messages.append({"role": "tool", "tool_call_id": call.id, "content": result})


def _anthropic_step(messages: list[Any], reply: Any, ids: list[str]) -> bool:
    """Append the tool turn; False when the reply is final."""
    uses = [block for block in reply.content if block.type == "tool_use"]
    if not uses:
        return False
    messages.append({"role": "assistant", "content": [b.to_dict() for b in reply.content]})
    results = []
    for use in uses:
        assert use.name == "get_weather"
        ids.append(use.id)
        results.append(
            {"type": "tool_result", "tool_use_id": use.id, "content": get_weather(**use.input)}
        )
    messages.append({"role": "user", "content": results})
    return True


def _anthropic_text(reply: Any) -> str:
    return "".join(block.text for block in reply.content if block.type == "text")


def loop_openai_sync(url: str, deck: fd.Deck, inner: Any) -> Outcome:
    messages: list[Any] = [{"role": "user", "content": QUESTION}]
    ids: list[str] = []
    with openai_sync(url, deck, inner) as client:
        for calls in range(1, MAX_MODEL_CALLS + 1):
            reply = client.chat.completions.create(
                model=OPENAI_MODEL, messages=messages, tools=OPENAI_TOOLS
            )
            message = reply.choices[0].message
            if not message.tool_calls:
                return Outcome(message.content or "", tuple(ids), calls)
            _openai_step(messages, message, ids)
    raise AssertionError(f"no final answer in {MAX_MODEL_CALLS} model calls")


def loop_openai_async(url: str, deck: fd.Deck, inner: Any) -> Outcome:
    async def main() -> Outcome:
        messages: list[Any] = [{"role": "user", "content": QUESTION}]
        ids: list[str] = []
        async with openai_async(url, deck, inner) as client:
            for calls in range(1, MAX_MODEL_CALLS + 1):
                reply = await client.chat.completions.create(
                    model=OPENAI_MODEL, messages=messages, tools=OPENAI_TOOLS
                )
                message = reply.choices[0].message
                if not message.tool_calls:
                    return Outcome(message.content or "", tuple(ids), calls)
                _openai_step(messages, message, ids)
        raise AssertionError(f"no final answer in {MAX_MODEL_CALLS} model calls")

    return asyncio.run(main())


def loop_anthropic_sync(url: str, deck: fd.Deck, inner: Any) -> Outcome:
    messages: list[Any] = [{"role": "user", "content": QUESTION}]
    ids: list[str] = []
    with anthropic_sync(url, deck, inner) as client:
        for calls in range(1, MAX_MODEL_CALLS + 1):
            reply = client.messages.create(
                model=ANTHROPIC_MODEL, max_tokens=100, messages=messages, tools=ANTHROPIC_TOOLS
            )
            if not _anthropic_step(messages, reply, ids):
                return Outcome(_anthropic_text(reply), tuple(ids), calls)
    raise AssertionError(f"no final answer in {MAX_MODEL_CALLS} model calls")


def loop_anthropic_async(url: str, deck: fd.Deck, inner: Any) -> Outcome:
    async def main() -> Outcome:
        messages: list[Any] = [{"role": "user", "content": QUESTION}]
        ids: list[str] = []
        async with anthropic_async(url, deck, inner) as client:
            for calls in range(1, MAX_MODEL_CALLS + 1):
                reply = await client.messages.create(
                    model=ANTHROPIC_MODEL,
                    max_tokens=100,
                    messages=messages,
                    tools=ANTHROPIC_TOOLS,
                )
                if not _anthropic_step(messages, reply, ids):
                    return Outcome(_anthropic_text(reply), tuple(ids), calls)
        raise AssertionError(f"no final answer in {MAX_MODEL_CALLS} model calls")

    return asyncio.run(main())


def openai_id_refs(args: Any) -> list[Any]:
    """The tool-call id as the second request carries it: in the assistant turn, and in
    the tool result that answers it."""
    assistant, result = args["body"]["messages"][1], args["body"]["messages"][2]
    assert assistant["role"] == "assistant"
    assert result["role"] == "tool"
    return [assistant["tool_calls"][0]["id"], result["tool_call_id"]]


def anthropic_id_refs(args: Any) -> list[Any]:
    assistant, result = args["body"]["messages"][1], args["body"]["messages"][2]
    assert assistant["role"] == "assistant"
    uses = [block for block in assistant["content"] if block["type"] == "tool_use"]
    return [uses[0]["id"], result["content"][0]["tool_use_id"]]


Loop = Callable[[str, fd.Deck, Any], Outcome]
LOOPS: list[Any] = [
    pytest.param(loop_openai_sync, "openai.chat.completions", openai_id_refs, id="openai-sync"),
    pytest.param(loop_openai_async, "openai.chat.completions", openai_id_refs, id="openai-async"),
    pytest.param(loop_anthropic_sync, "anthropic.messages", anthropic_id_refs, id="anthropic-sync"),
    pytest.param(
        loop_anthropic_async, "anthropic.messages", anthropic_id_refs, id="anthropic-async"
    ),
]


@pytest.mark.parametrize(("loop", "name", "id_refs"), LOOPS)
def test_tool_loop_records_then_replays_offline(
    tmp_path: Path, loop: Loop, name: str, id_refs: Callable[[Any], list[Any]]
) -> None:
    path = tmp_path / "loop.jsonl"
    with Upstream() as upstream:
        url = upstream.url
        with fd.Deck(path, mode="record", clock=fd.SystemClock()) as deck:
            recorded = loop(url, deck, None)
        reached = len(upstream.requests)
    assert deck.report().live == 2
    assert [c.error for c in deck.calls] == [None, None]
    assert recorded == Outcome(FINAL_TEXT, recorded.tool_ids, 2)
    assert len(recorded.tool_ids) == 1
    assert reached == 2
    assert_dead(url)

    guard = NetworkGuard()
    with fd.Deck(path, mode="replay", clock=fd.VirtualClock()) as deck:
        replayed = loop(url, deck, guard)
    assert guard.calls == 0
    assert guard.closed  # closing the SDK client closed the whole transport chain
    assert replayed == recorded  # same text, same ids the caller saw, same number of calls
    assert_clean_replay(deck.report(), recorded=2)

    entries = fd.load(path).entries
    assert [(e.kind, e.name, e.result) for e in entries] == [("model", name, "out")] * 2
    first, second = entries
    live_id = recorded.tool_ids[0]
    # The stored output keeps the id the caller saw...
    assert live_id in json.dumps(first.value["body"])
    # ...while the next request's args carry it renamed, the same placeholder at both places.
    refs = id_refs(second.args)
    assert refs[0] == refs[1]
    assert str(refs[0]).startswith("«id:")
    assert "«id:" in json.dumps(second.args, ensure_ascii=False)
    assert live_id not in json.dumps(second.args)
    # Credentials never reach the cassette.
    text = path.read_text(encoding="utf-8")
    assert OPENAI_KEY not in text
    assert ANTHROPIC_KEY not in text


# --------------------------------------------------------------------- plain clients


def plain_sync(module: Any) -> Callable[[str, fd.Deck, Any], list[Any]]:
    def run(url: str, deck: fd.Deck, inner: Any) -> list[Any]:
        transport = Transport(deck, httpx=module, transport=inner)
        with module.Client(transport=transport) as client:
            health = client.get(f"{url}/health")
            models = client.get(f"{url}/v1/models")
        return [(r.status_code, r.headers["content-type"], r.json()) for r in (health, models)]

    return run


def plain_async(module: Any) -> Callable[[str, fd.Deck, Any], list[Any]]:
    def run(url: str, deck: fd.Deck, inner: Any) -> list[Any]:
        async def main() -> list[Any]:
            transport = AsyncTransport(deck, httpx=module, transport=inner)
            async with module.AsyncClient(transport=transport) as client:
                health = await client.get(f"{url}/health")
                models = await client.get(f"{url}/v1/models")
            return [(r.status_code, r.headers["content-type"], r.json()) for r in (health, models)]

        return asyncio.run(main())

    return run


def without_created(outputs: list[Any]) -> list[Any]:
    health, (status, content_type, models) = outputs
    data = [{k: v for k, v in m.items() if k != "created"} for m in models["data"]]
    return [health, (status, content_type, {**models, "data": data})]


@pytest.mark.parametrize(
    "run",
    [
        pytest.param(plain_sync(httpx), id="httpx-sync"),
        pytest.param(plain_async(httpx), id="httpx-async"),
        pytest.param(plain_sync(httpx2), id="httpx2-sync"),
        pytest.param(plain_async(httpx2), id="httpx2-async"),
    ],
)
def test_plain_client_records_then_replays_offline(
    tmp_path: Path, run: Callable[[str, fd.Deck, Any], list[Any]]
) -> None:
    path = tmp_path / "plain.jsonl"
    with Upstream() as upstream:
        url = upstream.url
        with fd.Deck(path, mode="record", clock=fd.SystemClock()) as deck:
            recorded = run(url, deck, None)
        reached = [(r["method"], r["path"]) for r in upstream.requests]
    assert reached == [("GET", "/health"), ("GET", "/v1/models")]
    assert recorded[0] == (200, "application/json", {"ok": True})
    assert [m["id"] for m in recorded[1][2]["data"]] == ["gpt-fake", "claude-fake"]
    assert_dead(url)

    guard = NetworkGuard()
    with fd.Deck(path, mode="replay", clock=fd.VirtualClock()) as deck:
        replayed = run(url, deck, guard)
    assert guard.calls == 0
    assert guard.closed
    # docs/design.md §3 stores `created` in outputs as a placeholder (deterministic by seq),
    # so the models' creation dates come back changed but still epoch ints; all else is equal.
    assert without_created(replayed) == without_created(recorded)
    assert all(type(m["created"]) is int for m in replayed[1][2]["data"])
    assert_clean_replay(deck.report(), recorded=2)
    entries = fd.load(path).entries
    assert [(e.kind, e.name) for e in entries] == [
        ("http", "GET /health"),
        ("http", "GET /v1/models"),
    ]


# ------------------------------------------------------------------------------ streams


@dataclass(frozen=True)
class Streamed:
    """A stream as the caller saw it, timed on the deck's clock from before the request."""

    text: str
    first_token: float  # seconds to the first text delta
    total: float  # seconds until the stream was consumed and closed


class Timer:
    def __init__(self, deck: fd.Deck) -> None:
        self.clock = deck.clock
        self.start = self.clock.now()
        self.first: float | None = None
        self.parts: list[str] = []

    def text(self, piece: str | None) -> None:
        if not piece:
            return
        if self.first is None:
            self.first = self.clock.now() - self.start
        self.parts.append(piece)

    def done(self) -> Streamed:
        assert self.first is not None, "the stream carried no text"
        return Streamed("".join(self.parts), self.first, self.clock.now() - self.start)


def stream_openai_chat_sync(url: str, deck: fd.Deck, inner: Any) -> Streamed:
    with openai_sync(url, deck, inner) as client:
        timer = Timer(deck)
        stream = client.chat.completions.create(
            model=OPENAI_MODEL, messages=[{"role": "user", "content": "hi"}], stream=True
        )
        with stream:
            for chunk in stream:
                timer.text(chunk.choices[0].delta.content if chunk.choices else None)
        return timer.done()


def stream_openai_chat_async(url: str, deck: fd.Deck, inner: Any) -> Streamed:
    async def main() -> Streamed:
        async with openai_async(url, deck, inner) as client:
            timer = Timer(deck)
            stream = await client.chat.completions.create(
                model=OPENAI_MODEL, messages=[{"role": "user", "content": "hi"}], stream=True
            )
            async with stream:
                async for chunk in stream:
                    timer.text(chunk.choices[0].delta.content if chunk.choices else None)
            return timer.done()

    return asyncio.run(main())


def stream_openai_responses_sync(url: str, deck: fd.Deck, inner: Any) -> Streamed:
    with openai_sync(url, deck, inner) as client:
        timer = Timer(deck)
        stream = client.responses.create(model=OPENAI_MODEL, input="hi", stream=True)
        completed = None
        with stream:
            for event in stream:
                if event.type == "response.output_text.delta":
                    timer.text(event.delta)
                elif event.type == "response.completed":
                    completed = event.response.output_text
        result = timer.done()
    assert completed == result.text
    return result


def stream_openai_responses_async(url: str, deck: fd.Deck, inner: Any) -> Streamed:
    async def main() -> Streamed:
        async with openai_async(url, deck, inner) as client:
            timer = Timer(deck)
            stream = await client.responses.create(model=OPENAI_MODEL, input="hi", stream=True)
            completed = None
            async with stream:
                async for event in stream:
                    if event.type == "response.output_text.delta":
                        timer.text(event.delta)
                    elif event.type == "response.completed":
                        completed = event.response.output_text
            result = timer.done()
        assert completed == result.text
        return result

    return asyncio.run(main())


def stream_anthropic_sync(url: str, deck: fd.Deck, inner: Any) -> Streamed:
    with anthropic_sync(url, deck, inner) as client:
        timer = Timer(deck)
        with client.messages.stream(
            model=ANTHROPIC_MODEL, max_tokens=100, messages=[{"role": "user", "content": "hi"}]
        ) as stream:
            for piece in stream.text_stream:
                timer.text(piece)
            final = stream.get_final_message()
        result = timer.done()
    assert final.stop_reason == "end_turn"
    assert _anthropic_text(final) == result.text
    return result


def stream_anthropic_async(url: str, deck: fd.Deck, inner: Any) -> Streamed:
    async def main() -> Streamed:
        async with anthropic_async(url, deck, inner) as client:
            timer = Timer(deck)
            async with client.messages.stream(
                model=ANTHROPIC_MODEL,
                max_tokens=100,
                messages=[{"role": "user", "content": "hi"}],
            ) as stream:
                async for piece in stream.text_stream:
                    timer.text(piece)
                final = await stream.get_final_message()
            result = timer.done()
        assert final.stop_reason == "end_turn"
        assert _anthropic_text(final) == result.text
        return result

    return asyncio.run(main())


def openai_chat_text(data: Any) -> bool:
    return isinstance(data, dict) and any(
        (choice.get("delta") or {}).get("content") for choice in data.get("choices", [])
    )


def openai_responses_text(data: Any) -> bool:
    return isinstance(data, dict) and data.get("type") == "response.output_text.delta"


def anthropic_text(data: Any) -> bool:
    return (
        isinstance(data, dict)
        and data.get("type") == "content_block_delta"
        and data["delta"].get("type") == "text_delta"
    )


Streamer = Callable[[str, fd.Deck, Any], Streamed]
STREAMS: list[Any] = [
    pytest.param(stream_openai_chat_sync, "openai.chat.completions", openai_chat_text, id="chat"),
    # openai.AsyncStream drains a finished response by iterating it again: the second
    # read must yield nothing, neither an error on record nor the events twice on replay.
    pytest.param(
        stream_openai_chat_async, "openai.chat.completions", openai_chat_text, id="chat-async"
    ),
    pytest.param(
        stream_openai_responses_sync, "openai.responses", openai_responses_text, id="responses"
    ),
    pytest.param(
        stream_openai_responses_async,
        "openai.responses",
        openai_responses_text,
        id="responses-async",
    ),
    pytest.param(stream_anthropic_sync, "anthropic.messages", anthropic_text, id="anthropic"),
    pytest.param(
        stream_anthropic_async, "anthropic.messages", anthropic_text, id="anthropic-async"
    ),
]


@pytest.mark.parametrize(("streamer", "name", "has_text"), STREAMS)
def test_stream_replays_through_sdk_parser_with_recorded_timing(
    tmp_path: Path, streamer: Streamer, name: str, has_text: Callable[[Any], bool]
) -> None:
    path = tmp_path / "stream.jsonl"
    with Upstream() as upstream:
        url = upstream.url
        with fd.Deck(path, mode="record", clock=fd.SystemClock()) as deck:
            recorded = streamer(url, deck, None)
        assert len(upstream.requests) == 1
    # The recording saw a clean stream: no error stored with it.
    assert [(c.source, c.error, c.partial) for c in deck.calls] == [("live", None, False)]
    assert recorded.text == DEFAULT_TEXT
    assert 0 < recorded.first_token < recorded.total
    assert_dead(url)

    (entry,) = fd.load(path).entries
    assert (entry.kind, entry.name, entry.result) == ("model", name, "stream")
    assert "error" not in entry.value
    events = entry.value["events"]
    text_ms = [float(e["ms"]) for e in events if has_text(e["data"])]
    assert len(text_ms) > 1  # the text came in several deltas, each recorded
    first_ms, last_ms = text_ms[0], float(events[-1]["ms"])
    assert 0 < first_ms < last_ms  # STREAM_DELAY spaced the events out

    guard = NetworkGuard()
    clock = fd.VirtualClock()
    with fd.Deck(path, mode="replay", clock=clock) as deck:
        replayed = streamer(url, deck, guard)
    assert guard.calls == 0
    assert guard.closed
    assert replayed.text == recorded.text
    # The virtual clock moved by the recorded timing, event by event, and no further.
    assert replayed.first_token > 0
    assert replayed.first_token == pytest.approx(first_ms / 1000, abs=1e-6)
    assert replayed.total == pytest.approx(last_ms / 1000, abs=1e-6)
    assert clock.waited == 0  # event timing is work on the clock, not waiting
    assert_clean_replay(deck.report(), recorded=1)


# --------------------------------------------------------------------------- determinism


@pytest.fixture(scope="module")
def server() -> Iterator[Upstream]:
    with Upstream() as upstream:
        yield upstream


@pytest.mark.parametrize(("loop", "name", "id_refs"), LOOPS)
def test_two_recordings_have_the_same_keys(
    tmp_path: Path,
    server: Upstream,
    loop: Loop,
    name: str,
    id_refs: Callable[[Any], list[Any]],
) -> None:
    paths = [tmp_path / "one.jsonl", tmp_path / "two.jsonl"]
    outcomes = []
    for path in paths:
        with fd.Deck(path, mode="record", clock=fd.SystemClock()) as deck:
            outcomes.append(loop(server.url, deck, None))
    one, two = (fd.load(path).entries for path in paths)
    # The upstream really answered differently: fresh ids in what the callers saw and stored.
    assert outcomes[0].tool_ids != outcomes[1].tool_ids
    assert outcomes[0].text == outcomes[1].text == FINAL_TEXT
    assert [e.value for e in one] != [e.value for e in two]
    # ...yet the calls are keyed the same, in the same order, with the same stored args.
    assert len(one) == 2
    assert [e.key for e in one] == [e.key for e in two]
    assert len({e.key for e in one}) == 2
    assert [e.args for e in one] == [e.args for e in two]
    assert [e.name for e in one] == [name, name]
