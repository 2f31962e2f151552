"""Broken tool calls and answers cut inside one, as the real SDKs hand them to a program.

Each surface (OpenAI Chat Completions, OpenAI Responses, Anthropic Messages; whole, streamed
through the SDK's helper, streamed event by event) is recorded once against the fake
upstream, its weather tool's schema a required ``city`` and an ``enum`` ``unit``; the
upstream is then stopped and each fault replayed through the real SDK, judged by what the
program reads: the arguments, the name, the ids, the stop reason, and the error the SDK
raises where the real API's answer would make it raise.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import openai
import pytest
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

import faultdeck as fd
from faultdeck import faults
from faultdeck.http import AsyncTransport, Transport
from tests.support import fake_upstream as fake

UNITS = ["celsius", "fahrenheit"]
SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": UNITS}},
    "required": ["city"],
}
DESCRIBED = {"name": "get_weather", "description": "Weather in a city."}
CHAT_TOOLS: Any = [{"type": "function", "function": {**DESCRIBED, "parameters": SCHEMA}}]
RESPONSES_TOOLS: Any = [{"type": "function", **DESCRIBED, "parameters": SCHEMA, "strict": False}]
CLAUDE_TOOLS: Any = [{**DESCRIBED, "input_schema": SCHEMA}]
ASK: Any = [{"role": "user", "content": "What is the weather?"}]
ARGUMENTS = json.dumps(fake.TOOL_ARGUMENTS)  # what the upstream's call sends
DEAD = "http://127.0.0.1:9"  # nothing listens: a replay that went live would fail loudly


async def responses_api(request: Request) -> Response:
    """The fake's Responses API, but a request offering tools gets a call of the first, as
    the API sends one (streamed: the item added, its argument deltas, done, completed)."""
    body = json.loads(await request.body())
    if not body.get("tools"):
        return await fake.responses(request)
    item_id, call_id, name = (
        f"fc_{uuid.uuid4().hex}",
        f"call_{uuid.uuid4().hex[:24]}",
        "get_weather",
    )

    def item(status: str, arguments: str) -> dict[str, Any]:
        fields = {"arguments": arguments, "call_id": call_id, "name": name}
        return {"id": item_id, "type": "function_call", "status": status, **fields}

    response_id, created = f"resp_{uuid.uuid4().hex}", int(time.time())
    usage = fake._responses_usage(body, ARGUMENTS)
    output = [item("completed", ARGUMENTS)]
    done = fake._response_object(
        body, response_id, created, status="completed", output=output, usage=usage
    )
    if not body.get("stream"):
        return JSONResponse(done)
    events: list[str] = []

    def emit(kind: str, **fields: Any) -> None:
        data = {"type": kind, "sequence_number": len(events), **fields}
        events.append(f"event: {kind}\ndata: {json.dumps(data)}\n\n")

    pending = fake._response_object(
        body, response_id, created, status="in_progress", output=[], usage=None
    )
    emit("response.created", response=pending)
    emit("response.in_progress", response=pending)
    emit("response.output_item.added", output_index=0, item=item("in_progress", ""))
    where = {"item_id": item_id, "output_index": 0}
    for piece in fake._json_pieces(ARGUMENTS):
        emit("response.function_call_arguments.delta", **where, delta=piece)
    emit("response.function_call_arguments.done", **where, name=name, arguments=ARGUMENTS)
    emit("response.output_item.done", output_index=0, item=item("completed", ARGUMENTS))
    emit("response.completed", response=done)
    return fake._sse_stream(events, 0.0, {})


@dataclass
class Seen:
    """What a program reads of an answer: its tool calls (name, arguments as text or as
    Anthropic's ``input``, id) and why it stopped."""

    calls: list[tuple[str, Any, str]]
    stop: str | None


def _stop(response: Any) -> str:
    details = response.incomplete_details
    return response.status if details is None else f"{response.status}:{details.reason}"


def _chat_seen(choice: Any) -> Seen:
    calls = choice.message.tool_calls or []
    return Seen(
        [(c.function.name, c.function.arguments, c.id) for c in calls], choice.finish_reason
    )


def _responses_seen(response: Any) -> Seen:
    calls = [(i.name, i.arguments, i.call_id) for i in response.output if i.type == "function_call"]
    return Seen(calls, _stop(response))


def _claude_seen(message: Any) -> Seen:
    calls = [(b.name, b.input, b.id) for b in message.content if b.type == "tool_use"]
    return Seen(calls, message.stop_reason)


def chat(client: Any) -> Seen:
    reply = client.chat.completions.create(model="gpt-x", messages=ASK, tools=CHAT_TOOLS)
    return _chat_seen(reply.choices[0])


def chat_stream(client: Any) -> Seen:
    with client.chat.completions.stream(model="gpt-x", messages=ASK, tools=CHAT_TOOLS) as stream:
        return _chat_seen(stream.get_final_completion().choices[0])


def chat_events(client: Any) -> Seen:
    calls: dict[int, list[str]] = {}
    stop = None
    stream = client.chat.completions.create(
        model="gpt-x", messages=ASK, tools=CHAT_TOOLS, stream=True
    )
    for chunk in stream:
        for choice in chunk.choices:
            stop = choice.finish_reason or stop
            for delta in choice.delta.tool_calls or []:
                name, arguments, id_ = calls.setdefault(delta.index, ["", "", ""])
                function = delta.function
                name += (function.name or "") if function else ""
                arguments += (function.arguments or "") if function else ""
                calls[delta.index] = [name, arguments, delta.id or id_]
    return Seen([(n, a, i) for n, a, i in calls.values()], stop)


def responses(client: Any) -> Seen:
    return _responses_seen(
        client.responses.create(model="gpt-x", input="Weather?", tools=RESPONSES_TOOLS)
    )


def responses_stream(client: Any) -> Seen:
    with client.responses.stream(model="gpt-x", input="Weather?", tools=RESPONSES_TOOLS) as stream:
        return _responses_seen(stream.get_final_response())


def responses_events(client: Any) -> Seen:
    """The call as each event shows it, every event agreeing; then the final response."""
    events = list(
        client.responses.create(model="gpt-x", input="Weather?", tools=RESPONSES_TOOLS, stream=True)
    )
    added = {e.output_index: e.item for e in events if e.type == "response.output_item.added"}
    done = {e.output_index: e.item for e in events if e.type == "response.output_item.done"}
    for index, item in added.items():
        pieces = "".join(
            e.delta
            for e in events
            if e.type == "response.function_call_arguments.delta" and e.output_index == index
        )
        (told,) = [
            e
            for e in events
            if e.type == "response.function_call_arguments.done" and e.output_index == index
        ]
        assert pieces == told.arguments == done[index].arguments
        assert told.name == item.name  # (the API's field; the SDK keeps it as an extra)
        assert (item.name, item.call_id) == (done[index].name, done[index].call_id)
    final = events[-1].response
    assert _responses_seen(final).calls == [(i.name, i.arguments, i.call_id) for i in done.values()]
    return _responses_seen(final)


def claude(client: Any) -> Seen:
    message = client.messages.create(
        model="claude-x", max_tokens=64, messages=ASK, tools=CLAUDE_TOOLS
    )
    return _claude_seen(message)


def claude_stream(client: Any) -> Seen:
    with client.messages.stream(
        model="claude-x", max_tokens=64, messages=ASK, tools=CLAUDE_TOOLS
    ) as stream:
        return _claude_seen(stream.get_final_message())


def claude_events(client: Any) -> Seen:
    blocks: dict[int, list[str]] = {}
    stop = None
    stream = client.messages.create(
        model="claude-x", max_tokens=64, messages=ASK, tools=CLAUDE_TOOLS, stream=True
    )
    for event in stream:
        if event.type == "content_block_start" and event.content_block.type == "tool_use":
            blocks[event.index] = [event.content_block.name, "", event.content_block.id]
        elif event.type == "content_block_delta" and event.delta.type == "input_json_delta":
            blocks[event.index][1] += event.delta.partial_json
        elif event.type == "message_delta":
            stop = event.delta.stop_reason
    return Seen([(n, a, i) for n, a, i in blocks.values()], stop)


SURFACES: dict[str, Callable[[Any], Seen]] = {
    f.__name__: f
    for f in (
        chat,
        chat_stream,
        chat_events,
        responses,
        responses_stream,
        responses_events,
        claude,
        claude_stream,
        claude_events,
    )
}


def openai_client(deck: fd.Deck, url: str = DEAD) -> openai.OpenAI:
    http = httpx2.Client(transport=Transport(deck, httpx=httpx2))
    return openai.OpenAI(
        base_url=f"{url}/v1", api_key="sk-test", max_retries=0, http_client=http,
        _strict_response_validation=True,
    )  # fmt: skip


def claude_client(deck: fd.Deck, url: str = DEAD, *, strict: bool = True) -> anthropic.Anthropic:
    http = httpx2.Client(transport=Transport(deck, httpx=httpx2))
    return anthropic.Anthropic(
        base_url=url, api_key="sk-ant-test", max_retries=0, http_client=http,
        _strict_response_validation=strict,
    )  # fmt: skip


def client_for(surface: str, deck: fd.Deck, url: str = DEAD, *, strict: bool = True) -> Any:
    if surface.startswith("claude"):
        return claude_client(deck, url, strict=strict)
    return openai_client(deck, url)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each surface recorded once, the upstream then stopped; the clean answers checked."""
    folder = tmp_path_factory.mktemp("tool_calls")
    app = fake.create_app(stream_delay=0)
    app.router.routes.insert(0, Route("/v1/responses", responses_api, methods=["POST"]))
    paths = {name: folder / f"{name}.jsonl" for name in SURFACES}
    with fake.Upstream(app=app) as upstream:
        for name, surface in SURFACES.items():
            with fd.Deck(paths[name], mode="record", clock=fd.SystemClock()) as deck:
                with client_for(name, deck, upstream.url) as client:
                    seen = surface(client)
            arguments = seen.calls[0][1]
            assert seen.calls == [("get_weather", arguments, seen.calls[0][2])]
            assert arguments in (ARGUMENTS, fake.TOOL_ARGUMENTS)
        paths["no_enum"] = folder / "no_enum.jsonl"
        with fd.Deck(paths["no_enum"], mode="record", clock=fd.SystemClock()) as deck:
            with openai_client(deck, upstream.url) as client:
                without_enum(client)
        # Recorded under the first names: the answers broken as they came in.
        paths["old_names"] = folder / "old_names.jsonl"
        old = [faults.bad_tool_call(how).at(seq=n + 1) for n, how in enumerate(OLD_NAMES)]
        with fd.Deck(paths["old_names"], mode="record", faults=old) as deck:
            with openai_client(deck, upstream.url) as client:
                chat(client), chat(client)
    return paths


OLD_NAMES = ("missing_field", "unparseable")


def without_enum(client: Any) -> Seen:
    """A chat call offering the fake's own weather tool, whose schema has no ``enum``."""
    reply = client.chat.completions.create(model="gpt-x", messages=ASK, tools=fake.OPENAI_TOOLS)
    return _chat_seen(reply.choices[0])


def replay(path: Path, fault: fd.Fault) -> fd.Deck:
    return fd.Deck(path, mode="replay", faults=[fault.at(seq=1)], clock=fd.VirtualClock())


def read(path: Path, surface: str, fault: fd.Fault, *, strict: bool = True) -> Seen:
    """The surface replayed under ``fault``, as the program reads it."""
    deck = replay(path, fault)
    with deck, client_for(surface, deck, strict=strict) as client:
        seen = SURFACES[surface](client)
    assert [c.fault for c in deck.report().calls] == [fault.kind]
    return seen


def one(seen: Seen) -> Any:
    """The arguments of the one call the answer holds, its name the tool's."""
    [(name, arguments, _)] = seen.calls
    assert name == "get_weather"
    return arguments


def parsed(arguments: Any) -> Any:
    return json.loads(arguments) if isinstance(arguments, str) else arguments


def is_not_json(seen: Seen, surface: str) -> None:
    arguments = one(seen)
    if surface == "claude_stream":  # the SDK's partial parser reads a cut call as far as it goes
        assert arguments == {}
        return
    with pytest.raises(json.JSONDecodeError):
        json.loads(arguments)


def is_twin(seen: Seen, surface: str) -> None:
    first, second = seen.calls
    assert first == second
    assert parsed(first[1]) == fake.TOOL_ARGUMENTS


STOPS = {"chat": "length", "responses": "incomplete:max_output_tokens", "claude": "max_tokens"}


def is_cut(seen: Seen, surface: str) -> None:
    assert seen.stop == STOPS[surface.split("_")[0]]
    arguments = one(seen)
    # Anthropic's input holds what fits whole; elsewhere the text is cut to half.
    assert arguments == ({} if isinstance(arguments, dict) else ARGUMENTS[: len(ARGUMENTS) // 2])


CHECKS: dict[str, Callable[[Seen, str], None]] = {
    "missing_required": lambda seen, _: _check(parsed(one(seen)) == {}),  # city was all
    "wrong_type": lambda seen, _: _check(parsed(one(seen)) == {"city": 12345}),
    "extra_property": lambda seen, _: _check(set(parsed(one(seen))) - set(SCHEMA["properties"])),
    "enum_mismatch": lambda seen, _: _check(parsed(one(seen))["unit"] not in UNITS),
    "not_object": lambda seen, _: _check(parsed(one(seen)) == ["Paris"]),
    "invalid_json": is_not_json,
    "invalid_json:trailing_comma": is_not_json,
    "invalid_json:single_quotes": is_not_json,
    "unknown_tool": lambda seen, _: _check(
        [(n, parsed(a)) for n, a, _ in seen.calls] == [("no_such_tool", fake.TOOL_ARGUMENTS)]
    ),
    "duplicate_id": is_twin,
    "missing_field": lambda seen, _: _check(parsed(one(seen)) == {}),  # the old names
    "unparseable": is_not_json,
    "length_stop": is_cut,
}
"""What the program reads under each fault (``length_stop`` is its own kind)."""

RAISES: dict[tuple[str, str], tuple[type[Exception], str]] = {
    # The SDKs' own verdicts on what the real APIs would send.
    ("chat_stream", "length_stop"): (openai.LengthFinishReasonError, "length limit"),
    ("responses_stream", "length_stop"): (RuntimeError, "`response.completed`"),
    ("responses_stream", "duplicate_id"): (RuntimeError, "conflicting output identities"),
    ("claude_stream", "invalid_json:trailing_comma"): (ValueError, "trailing comma"),
    ("claude_stream", "invalid_json:single_quotes"): (ValueError, "tool parameter JSON"),
}


def _check(ok: Any) -> None:
    assert ok


def fault_of(how: str) -> fd.Fault:
    return faults.length_stop() if how == "length_stop" else faults.bad_tool_call(how)


def strict_for(surface: str, how: str) -> bool:
    """Anthropic's whole answer cannot hold arguments that are not an object: its
    ``input`` holds them as they are, which the SDK's strict validation refuses."""
    shown_as_is = how.startswith("invalid_json") or how in ("not_object", "unparseable")
    return not (surface == "claude" and shown_as_is)


@pytest.mark.parametrize("surface", SURFACES)
@pytest.mark.parametrize("how", CHECKS)
def test_each_surface_reads_the_fault(recorded: dict[str, Path], how: str, surface: str) -> None:
    fault, path = fault_of(how), recorded[surface]
    raises = RAISES.get((surface, how))
    if raises is not None:
        with pytest.raises(raises[0], match=raises[1]):
            read(path, surface, fault)
        return
    CHECKS[how](read(path, surface, fault, strict=strict_for(surface, how)), surface)


def test_the_chat_helper_raises_on_a_length_stop_with_the_cut_call(
    recorded: dict[str, Path],
) -> None:
    with pytest.raises(openai.LengthFinishReasonError) as info:
        read(recorded["chat_stream"], "chat_stream", faults.length_stop())
    is_cut(_chat_seen(info.value.completion.choices[0]), "chat_stream")


def test_a_responses_stream_ends_incomplete_and_streams_its_cut_arguments(
    recorded: dict[str, Path],
) -> None:
    deck = replay(recorded["responses_stream"], faults.length_stop())
    with deck, openai_client(deck) as client:
        with client.responses.stream(
            model="gpt-x", input="Weather?", tools=RESPONSES_TOOLS
        ) as stream:
            events = list(stream)
    assert events[-1].type == "response.incomplete"
    assert _stop(events[-1].response) == "incomplete:max_output_tokens"
    deltas = [e for e in events if e.type == "response.function_call_arguments.delta"]
    assert deltas[-1].snapshot == ARGUMENTS[: len(ARGUMENTS) // 2]
    assert [e.sequence_number for e in events] == list(range(len(events)))


async def achat(client: Any) -> Seen:
    reply = await client.chat.completions.create(model="gpt-x", messages=ASK, tools=CHAT_TOOLS)
    return _chat_seen(reply.choices[0])


async def achat_stream(client: Any) -> Seen:
    async with client.chat.completions.stream(
        model="gpt-x", messages=ASK, tools=CHAT_TOOLS
    ) as stream:
        return _chat_seen((await stream.get_final_completion()).choices[0])


async def aclaude(client: Any) -> Seen:
    return _claude_seen(
        await client.messages.create(
            model="claude-x", max_tokens=64, messages=ASK, tools=CLAUDE_TOOLS
        )
    )


async def aclaude_stream(client: Any) -> Seen:
    async with client.messages.stream(
        model="claude-x", max_tokens=64, messages=ASK, tools=CLAUDE_TOOLS
    ) as stream:
        return _claude_seen(await stream.get_final_message())


ASYNC = {"chat": achat, "chat_stream": achat_stream, "claude": aclaude}
ASYNC["claude_stream"] = aclaude_stream


def aread(path: Path, surface: str, fault: fd.Fault, *, strict: bool) -> Seen:
    deck = replay(path, fault)
    http = httpx2.AsyncClient(transport=AsyncTransport(deck, httpx=httpx2))
    options: Any = {"max_retries": 0, "http_client": http, "_strict_response_validation": strict}
    client: Any = (
        anthropic.AsyncAnthropic(base_url=DEAD, api_key="sk-ant-test", **options)
        if surface.startswith("claude")
        else openai.AsyncOpenAI(base_url=f"{DEAD}/v1", api_key="sk-test", **options)
    )

    async def run() -> Seen:
        async with client:
            return await ASYNC[surface](client)

    with deck:
        return asyncio.run(run())


@pytest.mark.parametrize("surface", ASYNC)
@pytest.mark.parametrize("how", CHECKS)
def test_an_async_client_reads_what_a_sync_one_reads(
    recorded: dict[str, Path], how: str, surface: str
) -> None:
    fault, path, strict = fault_of(how), recorded[surface], strict_for(surface, how)
    raises = RAISES.get((surface, how))
    if raises is not None:
        with pytest.raises(raises[0], match=raises[1]):
            aread(path, surface, fault, strict=strict)
        return
    assert aread(path, surface, fault, strict=strict) == read(path, surface, fault, strict=strict)


def test_without_an_enum_in_the_schema_enum_mismatch_gives_a_wrong_type(
    recorded: dict[str, Path],
) -> None:
    deck = replay(recorded["no_enum"], faults.bad_tool_call("enum_mismatch"))
    with deck, openai_client(deck) as client:
        assert parsed(one(without_enum(client))) == {"city": 12345}


def test_a_cassette_recorded_under_the_old_names_replays(recorded: dict[str, Path]) -> None:
    entries = fd.load(recorded["old_names"]).entries
    assert tuple(e.fault["how"] for e in entries if e.fault) == OLD_NAMES
    with fd.Deck(recorded["old_names"], mode="replay") as deck, openai_client(deck) as client:
        first, second = chat(client), chat(client)
    assert parsed(one(first)) == {}
    is_not_json(second, "chat")
    assert deck.report().faults == 2


def test_in_process_each_raises_bad_tool_call_naming_it() -> None:
    for fault, code in (
        (faults.bad_tool_call("invalid_json:single_quotes"), "invalid_json:single_quotes"),
        (faults.bad_tool_call("missing_field"), "missing_field"),
        (faults.length_stop(), "length"),
    ):
        error = fault.error()
        assert type(error) is fd.BadToolCall
        assert error.code == code
    assert faults.bad_tool_call().describe() == "bad_tool_call(missing_required)"
    assert "a required argument is missing" in str(faults.bad_tool_call("missing_field").error())
    assert faults.length_stop().describe() == "length_stop"


@pytest.mark.parametrize(
    "make",
    [
        lambda: faults.bad_tool_call("invalid_jsn"),
        lambda: faults.from_json({"fault": "bad_tool_call", "how": "invalid_jsn"}),
    ],
)
def test_an_unknown_how_is_one_line_naming_the_known_ones(make: Callable[[], Any]) -> None:
    with pytest.raises(fd.ConfigError) as info:
        make()
    message = str(info.value)
    assert "\n" not in message
    assert "how: expected one of: missing_required, wrong_type, extra_property," in message
    assert "duplicate_id (also accepted: missing_field, unparseable" in message
    assert message.endswith("got 'invalid_jsn'")
