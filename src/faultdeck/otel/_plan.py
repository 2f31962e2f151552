"""A recording as span plans, following the OpenTelemetry GenAI semantic conventions.

Pure (no OpenTelemetry import): ``_sdk`` turns the plans into SDK spans. One plan for the
run, then one per call in the order the run made them (an ``append`` run's calls put back
where it made them, as ``faultdeck diff`` places them). A cassette keeps durations, not
wall-clock times, so the times are synthetic: the run starts at ``start_ns`` and each call
starts when the one before it ended, lasting its ``ms``.

- a model call (``kind`` model, or an HTTP call to a provider): ``{operation} {model}``,
  with ``gen_ai.operation.name``, ``gen_ai.provider.name`` and ``gen_ai.system`` (from the
  call's name: ``PROVIDERS``), ``gen_ai.request.model`` (Gemini's and Bedrock's from the
  path), ``gen_ai.response.*`` and ``gen_ai.usage.input_tokens`` / ``output_tokens`` when
  the answer has usage;
- a tool call: ``execute_tool {name}`` with ``gen_ai.tool.name``;
- an error (a recorded error, an HTTP answer of 400 or more): status ERROR, ``error.type``;
- a fault injected while recording: a span event ``faultdeck.fault``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson

from .._cassette.format import Entry, Recording
from .._cassette.summary import requested_model, usage_counts
from .._diff.order import run_order

Scalar = str | bool | int | float
Attributes = dict[str, Scalar | tuple[str, ...]]

PROVIDERS = {
    "openai": "openai",
    "anthropic": "anthropic",
    "azure": "azure.ai.openai",
    "bedrock": "aws.bedrock",
    "gemini": "gcp.gemini",
    "mistral": "mistral_ai",
    "cohere": "cohere",
    "groq": "groq",
    "deepseek": "deepseek",
    "ollama": "ollama",
    "openrouter": "openrouter",
    "together": "together",
    "fireworks": "fireworks",
}
"""A call name's provider (``bedrock.converse``) -> its ``gen_ai.provider.name``, as the
GenAI conventions name it where they do (a Gemini call at a Vertex AI path is
``gcp.vertex_ai``)."""

OPERATIONS = {
    "completions": "text_completion",
    "generate": "text_completion",
    "fim.completions": "text_completion",
    "embeddings": "embeddings",
    "embed": "embeddings",
    "generate_content": "generate_content",
    "stream_generate_content": "generate_content",
}
"""``gen_ai.operation.name`` by the API a call name names after its provider
(``openai.embeddings`` -> ``embeddings``); any other model call is ``chat``."""


@dataclass(frozen=True, slots=True)
class EventPlan:
    """A span event: its name, its time and its attributes."""

    name: str
    time_ns: int
    attributes: Attributes = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class SpanPlan:
    """One span to make: the run's (``seq`` 0) or one call's.

    Attributes:
        name: the span's name.
        kind: ``client`` for a call that leaves the process, else ``internal``.
        start_ns, end_ns: synthetic times (see the module's docstring).
        attributes: the span's attributes.
        error: the status description when the span's status is ERROR, else ``None``.
        events: its events (faults, exceptions).
        seq: the call's seq, 0 for the run.
    """

    name: str
    kind: Literal["client", "internal"]
    start_ns: int
    end_ns: int
    attributes: Attributes
    error: str | None = None
    events: tuple[EventPlan, ...] = ()
    seq: int = 0


def plans(recording: Recording, *, start_ns: int) -> list[SpanPlan]:
    """The run's span plan, then one per call in run order."""
    calls: list[SpanPlan] = []
    now = start_ns
    for entry, place in run_order(recording.entries):
        end = now + max(round(entry.ms * 1_000_000), 0)
        calls.append(call_plan(entry, place, now, end))
        now = end
    return [run_plan(recording, start_ns, now), *calls]


def run_plan(recording: Recording, start_ns: int, end_ns: int) -> SpanPlan:
    """The root span: the recorded run."""
    status = "interrupted" if recording.interrupted else "error" if recording.failed else "ok"
    stem = os.path.splitext(os.path.basename(recording.path))[0]
    attributes: Attributes = {
        "faultdeck.cassette": recording.path,
        "faultdeck.calls": len(recording.entries),
        "faultdeck.status": status,
        "faultdeck.synthetic_time": True,
    }
    sha = recording.header.harness.get("git_sha")
    if isinstance(sha, str):
        attributes["faultdeck.git_sha"] = sha
    error = None if status == "ok" else f"the recorded run {status}"
    return SpanPlan(f"faultdeck run {stem}", "internal", start_ns, end_ns, attributes, error)


def call_plan(entry: Entry, place: str, start_ns: int, end_ns: int) -> SpanPlan:
    """One call's span."""
    attributes: Attributes = {
        "faultdeck.seq": entry.seq,
        "faultdeck.place": place,
        "faultdeck.kind": entry.kind,
        "faultdeck.key": entry.key,
    }
    if isinstance(entry.step, str):
        attributes["faultdeck.step"] = entry.step
    provider = entry.name.partition(".")[0]
    model_call = entry.kind == "model" or (provider in PROVIDERS and entry.kind == "http")
    kind: Literal["client", "internal"] = "client"
    if model_call:
        name = _model(entry, provider, attributes)
    elif entry.kind == "tool":
        attributes["gen_ai.operation.name"] = "execute_tool"
        attributes["gen_ai.tool.name"] = entry.name
        name, kind = f"execute_tool {entry.name}", "internal"
    elif entry.kind == "http":
        name = entry.name
        _http_request(entry.args, attributes)
    else:
        name, kind = f"{entry.kind} {entry.name}", "internal"
    error, events = _outcome(entry, start_ns, attributes)
    return SpanPlan(name, kind, start_ns, end_ns, attributes, error, events, entry.seq)


def _model(entry: Entry, provider: str, attributes: Attributes) -> str:
    operation = OPERATIONS.get(entry.name.partition(".")[2], "chat")
    attributes["gen_ai.operation.name"] = operation
    args = entry.args if isinstance(entry.args, dict) else {}
    path = args.get("path")
    path = path if isinstance(path, str) else ""
    if provider in PROVIDERS:
        named = "gcp.vertex_ai" if "/publishers/google/" in path else PROVIDERS[provider]
        attributes["gen_ai.provider.name"] = named
        attributes["gen_ai.system"] = named
    body = args.get("body")
    request: dict[str, Any] = body if isinstance(body, dict) else args
    if entry.kind == "http" or "method" in args:
        _http_request(args, attributes)
    model = requested_model(args) or request.get("model")
    for key in ("max_tokens", "temperature", "top_p"):
        value = request.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            attributes[f"gen_ai.request.{key}"] = value
    if isinstance(model, str):
        attributes["gen_ai.request.model"] = model
        return f"{operation} {model}"
    return operation


def _http_request(args: Any, attributes: Attributes) -> None:
    if not isinstance(args, dict):
        return
    if isinstance(args.get("method"), str):
        attributes["http.request.method"] = args["method"]
    if isinstance(args.get("path"), str):
        attributes["url.path"] = args["path"]


def _outcome(
    entry: Entry, start_ns: int, attributes: Attributes
) -> tuple[str | None, tuple[EventPlan, ...]]:
    """The call's status and events; its answer's response and usage attributes."""
    events: list[EventPlan] = []
    if entry.fault is not None:
        fault: Attributes = {f"faultdeck.fault.{k}": v for k, v in _scalars(entry.fault)}
        events.append(EventPlan("faultdeck.fault", start_ns, fault))
    value = entry.value
    error: str | None = None
    if entry.result == "error":
        kind = str(value.get("type"))
        message = str(value.get("message", ""))
        attributes["error.type"] = kind
        error = f"{kind}: {message}" if message else kind
        exception: Attributes = {"exception.type": kind, "exception.message": message}
        events.append(EventPlan("exception", start_ns, exception))
    elif entry.result == "stream":
        attributes["faultdeck.stream.events"] = len(value["events"])
        for event in value["events"]:
            _response(event.get("data"), attributes)
    else:
        _response(value.get("body") if _is_http(value) else value, attributes)
    if entry.result != "error" and isinstance(value, dict) and isinstance(value.get("status"), int):
        status = value["status"]
        attributes["http.response.status_code"] = status
        if status >= 400 and error is None:
            attributes["error.type"] = str(status)
            error = f"HTTP {status}"
    return error, tuple(events)


def _is_http(value: Any) -> bool:
    return isinstance(value, dict) and "status" in value and "body" in value


def _response(body: Any, attributes: Attributes) -> None:
    """Response model, id, finish reasons and token usage, wherever the answer has them
    (OpenAI chat and responses, Anthropic messages, their stream events)."""
    if not isinstance(body, dict):
        return
    inner = body.get("response") or body.get("message")
    if isinstance(inner, dict):
        _response(inner, attributes)  # a responses or messages stream's envelope
    model = body.get("model") or body.get("modelVersion")  # Gemini's
    if isinstance(model, str):
        attributes["gen_ai.response.model"] = model
    own_id = body.get("id") or body.get("responseId")
    if isinstance(own_id, str) and body.get("object") != "list":
        attributes["gen_ai.response.id"] = own_id
    reasons = [c.get("finish_reason") for c in _dicts(body.get("choices"))]
    reasons += [c.get("finishReason") for c in _dicts(body.get("candidates"))]
    delta = body.get("delta")
    for said in (body, delta if isinstance(delta, dict) else {}):
        # Anthropic, Cohere, Bedrock, Ollama: the reason is the answer's (or its delta's)
        reasons += [said.get(key) for key in ("stop_reason", "finish_reason", "stopReason")]
    reasons.append(body.get("done_reason"))
    found = tuple(r for r in reasons if isinstance(r, str))
    if found:
        attributes["gen_ai.response.finish_reasons"] = found
    counts = usage_counts(body)
    for key, count in zip(("input_tokens", "output_tokens"), counts, strict=True):
        if count is not None:
            attributes[f"gen_ai.usage.{key}"] = count


def _dicts(value: Any) -> Iterator[dict[str, Any]]:
    if isinstance(value, list):
        yield from (v for v in value if isinstance(v, dict))


def _scalars(obj: dict[str, Any]) -> Iterator[tuple[str, Scalar]]:
    for key, value in obj.items():
        if isinstance(value, (str, bool, int, float)):
            yield str(key), value
        elif value is not None:
            yield str(key), orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
