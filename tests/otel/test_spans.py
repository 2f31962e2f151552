"""A recording as OpenTelemetry spans: names, GenAI attributes, times, errors, faults, ids."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import orjson
import pytest

import faultdeck as fd
from faultdeck import faults
from faultdeck.otel import ExportRefused, otlp_json, spans, traces_url
from tests.support import GOLDEN
from tests.support.calls import returns
from tests.support.plants import one_per_pattern

START = 1_795_946_400_000_000_000  # 2026-11-29T10:00:00Z


def raises(exc: Exception) -> Any:
    def fn() -> Any:
        raise exc

    return fn


@pytest.fixture
def recorded(tmp_path: Path) -> fd.types.Recording:
    path = tmp_path / "run.jsonl"
    plan = [faults.quota(retry_after=2).on(kind="tool", name="read_file", nth=1)]
    usage = {"input_tokens": 3, "output_tokens": 4}
    with fd.Deck(path, mode="record", faults=plan) as deck:
        deck.call("model", "chat", {"model": "m1", "messages": []}, returns({"usage": usage}))
        with pytest.raises(fd.QuotaExhausted):
            deck.call("tool", "read_file", {"path": "a"}, returns({"ok": 1}))
        with pytest.raises(ValueError, match="no such file"):
            deck.call("tool", "read_file", {"path": "b"}, raises(ValueError("no such file: b")))
        deck.env("HOME", public=True)
    return fd.load(path)


def subset(found: dict[str, Any], wanted: dict[str, Any]) -> bool:
    return {k: found.get(k) for k in wanted} == wanted


def attrs(span: Any) -> dict[str, Any]:
    return dict(span.attributes or {})


def test_one_trace_a_run_span_then_a_span_per_call_in_seq_order(
    recorded: fd.types.Recording,
) -> None:
    found = spans(recorded, start_ns=START)
    root, *calls = found
    assert root.name == "faultdeck run run"
    assert root.parent is None
    assert {s.context.trace_id for s in found} == {root.context.trace_id}
    assert all(s.parent is not None and s.parent.span_id == root.context.span_id for s in calls)
    assert [attrs(s)["faultdeck.seq"] for s in calls] == [1, 2, 3, 4]
    assert [s.name for s in calls] == [
        "chat m1",
        "execute_tool read_file",
        "execute_tool read_file",
        "env HOME",
    ]
    assert attrs(root)["faultdeck.synthetic_time"] is True


def test_times_are_cumulated_from_each_calls_ms(recorded: fd.types.Recording) -> None:
    root, *calls = spans(recorded, start_ns=START)
    assert root.start_time == calls[0].start_time == START
    for before, after in itertools.pairwise(calls):
        assert after.start_time == before.end_time
    for span, entry in zip(calls, recorded.entries, strict=True):
        assert span.end_time - span.start_time == round(entry.ms * 1_000_000)  # type: ignore[operator]
    assert root.end_time == calls[-1].end_time


def test_model_calls_carry_gen_ai_attributes_and_usage(recorded: fd.types.Recording) -> None:
    model = spans(recorded, start_ns=START)[1]
    assert subset(
        attrs(model),
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": "m1",
            "gen_ai.usage.input_tokens": 3,
            "gen_ai.usage.output_tokens": 4,
        },
    )
    assert "gen_ai.provider.name" not in attrs(model)  # "chat" names no provider


def test_an_openai_http_call_names_its_provider() -> None:
    weather = fd.load(GOLDEN.parents[2] / "openai_agent" / "cassettes" / "weather.jsonl")
    first = spans(weather, start_ns=START)[1]
    assert first.name == "chat gpt-4o-mini"
    assert subset(
        attrs(first),
        {
            "gen_ai.provider.name": "openai",
            "gen_ai.system": "openai",
            "gen_ai.usage.input_tokens": 8,
            "gen_ai.usage.output_tokens": 2,
            "gen_ai.response.finish_reasons": ("tool_calls",),
            "http.response.status_code": 200,
        },
    )


def test_errors_set_status_error_and_faults_are_events(recorded: fd.types.Recording) -> None:
    _, _, quota, missing, home = spans(recorded, start_ns=START)
    assert quota.status.status_code.name == "ERROR"
    assert attrs(quota)["error.type"] == "QuotaExhausted"
    assert [e.name for e in quota.events] == ["faultdeck.fault", "exception"]
    fault = dict(quota.events[0].attributes or {})
    assert fault["faultdeck.fault.fault"] == "quota"
    assert fault["faultdeck.fault.retry_after"] == 2.0
    assert missing.status.description == "ValueError: no such file: b"
    assert [e.name for e in missing.events] == ["exception"]
    assert home.status.status_code.name == "UNSET"


def test_the_same_cassette_and_start_give_the_same_trace(recorded: fd.types.Recording) -> None:
    once, again = (
        otlp_json(spans(recorded, start_ns=START)),
        otlp_json(spans(recorded, start_ns=START)),
    )
    assert once == again
    later = otlp_json(spans(recorded, start_ns=START + 1))
    assert (
        orjson.loads(later)["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"]
        != (orjson.loads(once)["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"])
    )


def test_otlp_json_has_hex_ids_and_integer_kinds(recorded: fd.types.Recording) -> None:
    request = orjson.loads(otlp_json(spans(recorded, start_ns=START)))
    found = request["resourceSpans"][0]["scopeSpans"][0]["spans"]
    root = found[0]
    assert len(root["traceId"]) == 32
    assert int(root["traceId"], 16)
    assert len(root["spanId"]) == 16
    assert {s["parentSpanId"] for s in found[1:]} == {root["spanId"]}
    assert found[1]["kind"] == 3  # SPAN_KIND_CLIENT
    assert found[2]["status"]["code"] == 2  # STATUS_CODE_ERROR


def test_a_credential_shaped_attribute_refuses_the_export(tmp_path: Path) -> None:
    plant = next(iter(one_per_pattern().values()))
    path = tmp_path / "leaky.jsonl"
    error = {"type": "RuntimeError", "message": f"bad key {plant.text}"}
    lines = [
        {"faultdeck": 1},
        {"seq": 1, "kind": "tool", "name": "t", "key": "tool:0", "args": {}, "error": error},
        {"end": {"calls": 1, "status": "ok"}},
    ]
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    with pytest.raises(ExportRefused, match=r"seq 1 .* credential-shaped") as caught:
        spans(fd.load(path), start_ns=START)
    assert plant.secret not in str(caught.value)


def test_a_bare_endpoint_gets_the_traces_path() -> None:
    assert traces_url("http://127.0.0.1:4318") == "http://127.0.0.1:4318/v1/traces"
    assert traces_url("http://127.0.0.1:4318/") == "http://127.0.0.1:4318/v1/traces"
    assert traces_url("http://h:1/custom/traces") == "http://h:1/custom/traces"


def test_an_anthropic_stream_and_an_http_429_are_read(tmp_path: Path) -> None:
    events = [
        {"event": "message_start", "data": {"type": "message_start", "message": {
            "id": "msg_1", "model": "claude-x", "usage": {"input_tokens": 11, "output_tokens": 1},
        }}},
        {"event": "message_delta", "data": {
            "type": "message_delta", "delta": {"stop_reason": "end_turn"},
            "usage": {"output_tokens": 7},
        }},
    ]  # fmt: skip
    body = {"model": "claude-x", "max_tokens": 64, "messages": []}
    args = {"method": "POST", "path": "/v1/messages", "body": body}
    stream = {"status": 200, "headers": {}, "events": events}
    quota = {"status": 429, "headers": {"retry-after": "2"}, "body": {"type": "error"}}
    lines = [
        {"faultdeck": 1},
        {"seq": 1, "kind": "model", "name": "anthropic.messages", "key": "model:0",
         "args": args, "stream": stream, "ms": 12.5},
        {"seq": 2, "kind": "model", "name": "anthropic.messages", "key": "model:1",
         "args": args, "out": quota, "ms": 3},
    ]  # fmt: skip
    path = tmp_path / "claude.jsonl"
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    _, streamed, refused = spans(fd.load(path), start_ns=START)
    assert streamed.name == "chat claude-x"
    assert subset(
        attrs(streamed),
        {
            "gen_ai.provider.name": "anthropic",
            "gen_ai.request.max_tokens": 64,
            "gen_ai.usage.input_tokens": 11,
            "gen_ai.usage.output_tokens": 7,
            "gen_ai.response.id": "msg_1",
            "faultdeck.stream.events": 2,
            "gen_ai.response.finish_reasons": ("end_turn",),
        },
    )
    assert streamed.end_time - streamed.start_time == 12_500_000  # type: ignore[operator]
    assert refused.status.status_code.name == "ERROR"
    assert attrs(refused)["error.type"] == "429"
