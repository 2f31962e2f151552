"""Content is never rewritten: only volatile fields are stored as placeholders.

A recording stores the values of the provider metadata that holds an answer's wall-clock
time (``created``, ``created_at``, …) and of the project's declared ``volatile`` fields as
placeholders, and names them all in the cassette's header. A date-time anywhere else (a
tool's result, an MCP ``structuredContent``, a message's text, a streamed delta) is stored
and replayed as it came. Recorded through real decks, answered by plain functions and by
httpx's own ``MockTransport`` standing in for a provider.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import orjson

import faultdeck as fd
from faultdeck._keys.canonical import make_key
from faultdeck._keys.outputs import PROVIDER_TIMES
from faultdeck.http import Transport
from tests.support.calls import never, returns

TIME = {"timezone": "Asia/Tokyo", "datetime": "2026-12-06T16:14:01+09:00", "is_dst": False}
MCP_RESULT = {
    "content": [{"type": "text", "text": json.dumps(TIME, indent=2)}],
    "structuredContent": TIME,
    "isError": False,
}
"""What ``mcp-server-time``'s ``get_current_time`` answers, as an MCP ``CallToolResult``."""
EVENTS = {
    "events": [
        {"id": 7, "title": "retro", "date": "2026-12-07", "time": 1796608441, "at": 1796608441123},
        {"id": 8, "title": "demo", "start": "2026-12-08 09:30", "ts": 1796608441.25},
    ],
    "now": "2026-12-06T07:14:01.123456Z",
}
"""A tool's result whose fields have time-like names and values: all content."""
TEXT = "Your meeting moved to 2026-12-08T09:30:00Z (it was 2026-12-07 10:00)."


def lines(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def record(path: Path, calls: list[tuple[str, str, Any]], **deck: Any) -> None:
    with fd.Deck(path, mode="record", **deck) as d:
        for i, (kind, name, out) in enumerate(calls):
            d.call(kind, name, {"i": i}, returns(out))


def replay(path: Path, calls: list[tuple[str, str, Any]], **deck: Any) -> list[Any]:
    with fd.Deck(path, mode="replay", **deck) as d:
        got = [d.call(kind, name, {"i": i}, never) for i, (kind, name, _) in enumerate(calls)]
        assert d.report().misses == ()
    return got


def test_a_time_servers_answer_and_a_dated_text_replay_byte_for_byte(tmp_path: Path) -> None:
    calls = [
        ("tool", "get_current_time", MCP_RESULT),
        ("tool", "list_events", EVENTS),
        ("model", "chat", {"role": "assistant", "content": TEXT}),
    ]
    path = tmp_path / "time.jsonl"
    record(path, calls)
    stored = [line["out"] for line in lines(path)[1:-1]]
    for (_, _, out), line, got in zip(calls, stored, replay(path, calls), strict=True):
        assert orjson.dumps(line) == orjson.dumps(out)  # on disk as it came
        assert orjson.dumps(got) == orjson.dumps(out)  # and replayed as it came
    # The text block and structuredContent still agree, on disk and on replay.
    text = json.loads(stored[0]["content"][0]["text"])
    assert text["datetime"] == stored[0]["structuredContent"]["datetime"] == TIME["datetime"]


def test_created_in_a_chat_completion_is_scrubbed_and_named_in_the_header(
    tmp_path: Path,
) -> None:
    completion = {
        "id": "chatcmpl-9x8Yq2ZkT1",
        "object": "chat.completion",
        "created": 1764411948,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": TEXT}}],
    }
    calls = [("tool", "get_current_time", TIME), ("model", "chat", completion)]
    path = tmp_path / "chat.jsonl"
    record(path, calls)
    header, _, line, _ = lines(path)
    assert set(PROVIDER_TIMES) <= set(header["volatile"])
    assert line["out"]["created"] == 946684800 + 2  # the placeholder of seq 2, an integer
    assert line["out"]["choices"] == completion["choices"]
    assert "1764411948" not in path.read_text("utf-8")
    _, got = replay(path, calls)
    assert got == {**completion, "created": 946684802}


def test_a_declared_volatile_field_is_scrubbed_and_named_in_the_header(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.faultdeck]\nvolatile = ["trace_id", "served_at"]\n', "utf-8"
    )
    settings = fd.config.load_settings(tmp_path)
    answer = {
        "trace_id": "t-8f3k2z",
        "served_at": "2026-12-06T16:14:01+09:00",
        "result": {"datetime": "2026-12-06T16:14:01+09:00", "trace_id": 42},
    }
    calls = [("tool", "lookup", answer)]
    path = tmp_path / "declared.jsonl"
    record(path, calls, settings=settings)
    header, line, _ = lines(path)
    assert header["volatile"] == sorted(PROVIDER_TIMES | {"trace_id", "served_at"})
    want = {
        "trace_id": "«volatile»",
        "served_at": "2000-01-01T00:00:01+09:00",
        "result": {"datetime": "2026-12-06T16:14:01+09:00", "trace_id": 0},
    }
    assert line["out"] == want
    assert replay(path, calls, settings=settings) == [want]


def test_with_output_times_off_only_the_declared_fields_are_named_and_scrubbed(
    tmp_path: Path,
) -> None:
    rules = fd.NormalizeConfig(output_times=False, volatile=frozenset({"nonce"}))
    calls = [("model", "chat", {"created": 1764411948, "nonce": "n-1"})]
    path = tmp_path / "off.jsonl"
    record(path, calls, normalize=rules)
    header, line, _ = lines(path)
    assert header["volatile"] == ["nonce"]
    assert line["out"] == {"created": 1764411948, "nonce": "«volatile»"}


def test_a_chat_completion_over_http_keeps_its_content_and_scrubs_created(
    tmp_path: Path,
) -> None:
    body = {
        "id": "chatcmpl-9x8Yq2ZkT1",
        "object": "chat.completion",
        "created": 1764411948,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": TEXT}}],
        "tool_result": EVENTS,
    }
    chunks = [
        {"id": "chatcmpl-1", "created": 1764411949, "choices": [{"delta": {"content": TEXT}}]},
        {"id": "chatcmpl-1", "created": 1764411949, "choices": [{"delta": {"content": " ok"}}]},
    ]
    sse = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"

    def upstream(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/stream":
            return httpx.Response(200, headers={"content-type": "text/event-stream"}, text=sse)
        return httpx.Response(200, json=body)

    def program(client: httpx.Client) -> tuple[Any, list[Any]]:
        answer = client.post("http://127.0.0.1:9/v1/chat/completions", json={"q": 1}).json()
        with client.stream("POST", "http://127.0.0.1:9/stream", json={"q": 2}) as response:
            events = [
                json.loads(line[6:]) for line in response.iter_lines() if line.startswith("data: {")
            ]
        return answer, events

    path = tmp_path / "http.jsonl"
    with (
        fd.Deck(path, mode="record") as deck,
        httpx.Client(transport=Transport(deck, transport=httpx.MockTransport(upstream))) as c,
    ):
        live = program(c)
    assert live == (body, chunks)  # the live client got the upstream's answer
    with fd.Deck(path, mode="replay") as deck, httpx.Client(transport=Transport(deck)) as c:
        answer, events = program(c)
    assert answer == {**body, "created": 946684801}
    assert [e["created"] for e in events] == [946684802, 946684802]
    assert [e["choices"] for e in events] == [c["choices"] for c in chunks]
    text = path.read_text("utf-8")
    assert "1764411948" not in text
    assert "1764411949" not in text


def test_a_cassette_recorded_with_placeholders_in_content_still_replays(tmp_path: Path) -> None:
    # Written before content was kept: the header names no provider field, and the
    # placeholders stand in the content. A replay hands them back as they are stored.
    old = {"structuredContent": {"datetime": "2000-01-01T00:00:01+09:00"}, "created": 946684801}
    key = make_key("tool", "get_current_time", {"i": 0})
    path = tmp_path / "old.jsonl"
    path.write_text(
        '{"faultdeck":1,"match":"keyed","harness":{},"env":{},"volatile":[]}\n'
        + json.dumps(
            {
                "seq": 1,
                "kind": "tool",
                "name": "get_current_time",
                "key": key,
                "args": {"i": 0},
                "out": old,
                "ms": 0.1,
            }
        )
        + '\n{"end":{"calls":1,"status":"ok"}}\n',
        "utf-8",
    )
    assert fd.load(path).header.volatile == ()
    assert replay(path, [("tool", "get_current_time", None)]) == [old]


def test_a_diff_of_two_recordings_shows_content_times_not_provider_times(
    tmp_path: Path,
) -> None:
    def run(path: Path, when: str, created: int) -> fd.types.Recording:
        time = {**TIME, "datetime": when}
        record(path, [("tool", "get_current_time", time), ("model", "chat", {"created": created})])
        return fd.load(path)

    a = run(tmp_path / "a.jsonl", "2026-12-06T16:14:01+09:00", 1764411948)
    b = run(tmp_path / "b.jsonl", "2026-12-06T16:15:30+09:00", 1764412037)
    diff = fd.diff_recordings(a, b, responses=True)
    changed = [(c.path, c.a, c.b) for row in diff.rows for c in row.changes]
    assert changed == [
        ("out.datetime", "2026-12-06T16:14:01+09:00", "2026-12-06T16:15:30+09:00"),
    ]
