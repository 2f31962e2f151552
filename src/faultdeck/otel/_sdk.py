"""Span plans made into OpenTelemetry SDK spans; checked for secrets; OTLP JSON or OTLP/HTTP.

The spans are made with the SDK's own tracer (a private ``TracerProvider``, never the
global one) into memory, so that every attribute is checked before anything leaves: the
file is written, or the exporter called, only once the whole trace has passed. Trace and
span ids are derived from the cassette's bytes and the start time, so one cassette exported
twice with the same ``start_ns`` gives the same trace.
"""

from __future__ import annotations

import base64
import hashlib
import logging
from collections.abc import Iterator, Sequence
from typing import Any
from urllib.parse import urlsplit

import orjson
from google.protobuf import json_format  # type: ignore[import-untyped]  # no stubs shipped
from opentelemetry import trace as trace_api
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.id_generator import IdGenerator
from opentelemetry.sdk.trace.sampling import ALWAYS_ON
from opentelemetry.trace import SpanKind, Status, StatusCode

from .._base.errors import FaultdeckError
from .._cassette.format import Recording
from .._keys.redact import Redactor
from ._plan import SpanPlan, plans

__all__ = ["ExportFailed", "ExportRefused", "otlp_json", "send", "spans"]

_KINDS = {"client": SpanKind.CLIENT, "internal": SpanKind.INTERNAL}


class ExportRefused(FaultdeckError):
    """A span's attribute holds a credential-shaped string: nothing was exported."""


class ExportFailed(FaultdeckError):
    """The OTLP endpoint did not take the trace (unreachable, or it answered an error)."""


class _SeededIds(IdGenerator):
    """Ids drawn from a hash of the seed and a counter: the same seed, the same ids."""

    def __init__(self, seed: bytes) -> None:
        self._seed = seed
        self._n = 0

    def _next(self, size: int) -> int:
        while True:
            self._n += 1
            digest = hashlib.sha256(self._seed + self._n.to_bytes(8, "big")).digest()
            value = int.from_bytes(digest[:size], "big")
            if value:
                return value

    def generate_span_id(self) -> int:
        """A non-zero 64-bit span id."""
        return self._next(8)

    def generate_trace_id(self) -> int:
        """A non-zero 128-bit trace id."""
        return self._next(16)


def spans(
    recording: Recording,
    *,
    start_ns: int,
    service_name: str = "faultdeck",
    redactor: Redactor | None = None,
) -> list[ReadableSpan]:
    """The recording as one trace of SDK spans: the run's span first, then one per call.

    Args:
        recording: the cassette, read.
        start_ns: when the run's span starts (Unix ns); the calls follow from their ``ms``.
        service_name: the resource's ``service.name``.
        redactor: the secret scan every attribute passes (the project's patterns included);
            faultdeck's table of shapes by default.

    Raises:
        ExportRefused: an attribute, a span name or an event holds a credential-shaped
            string (the error names the span, the attribute and the shape, never the value).
    """
    memory = InMemorySpanExporter()
    ids = _SeededIds(_seed(recording) + start_ns.to_bytes(16, "big", signed=True))
    provider = TracerProvider(
        sampler=ALWAYS_ON,
        resource=Resource({"service.name": service_name}),  # no host or process facts
        id_generator=ids,
    )
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("faultdeck")
    run, *calls = plans(recording, start_ns=start_ns)
    root = tracer.start_span(
        run.name, kind=_KINDS[run.kind], attributes=run.attributes, start_time=run.start_ns
    )
    context = trace_api.set_span_in_context(root)
    for plan in calls:
        span = tracer.start_span(
            plan.name,
            context=context,
            kind=_KINDS[plan.kind],
            attributes=plan.attributes,
            start_time=plan.start_ns,
        )
        _finish(span, plan)
    _finish(root, run)
    provider.shutdown()
    finished = list(memory.get_finished_spans())
    ordered = [finished[-1], *finished[:-1]]  # the run's span ended last
    check(ordered, recording.path, redactor or Redactor())
    return ordered


def _seed(recording: Recording) -> bytes:
    """What the ids are derived from: the calls as recorded (seq, key, line, duration)."""
    calls = [(e.seq, e.key, e.line, e.ms) for e in recording.entries]
    return hashlib.sha256(orjson.dumps([recording.header.to_json(), calls])).digest()


def _finish(span: trace_api.Span, plan: SpanPlan) -> None:
    for event in plan.events:
        span.add_event(event.name, event.attributes, timestamp=event.time_ns)
    if plan.error is not None:
        span.set_status(Status(StatusCode.ERROR, plan.error))
    span.end(end_time=plan.end_ns)


def _values(span: ReadableSpan) -> Iterator[tuple[str, Any]]:
    """Every text of ``span`` that would leave: ``(where, value)``."""
    yield "the span's name", span.name
    for key, value in (span.attributes or {}).items():
        yield f"attribute {key}", value
    for event in span.events:
        yield f"event {event.name}", event.name
        for key, value in (event.attributes or {}).items():
            yield f"event {event.name} attribute {key}", value
    if span.status.description:
        yield "the status description", span.status.description
    for key, value in span.resource.attributes.items():
        yield f"resource attribute {key}", value


def check(found: Sequence[ReadableSpan], path: str, redactor: Redactor) -> None:
    """Raise ``ExportRefused`` if any text of the spans is credential-shaped."""
    for span in found:
        for where, value in _values(span):
            findings = redactor.findings(list(value) if isinstance(value, tuple) else value)
            if findings:
                seq = (span.attributes or {}).get("faultdeck.seq")
                which = f"seq {seq}" if seq is not None else "the run"
                raise ExportRefused(
                    f"{path}: {which} ({span.name!r}): {where} holds a credential-shaped "
                    f"string ({findings[0].pattern}); nothing was exported; rotate it and "
                    "re-record (faultdeck scan shows where)"
                )


def otlp_json(found: Sequence[ReadableSpan]) -> str:
    """The spans as one OTLP/JSON ``ExportTraceServiceRequest``, on one line.

    Encoded by the OTLP exporter's encoder and ``json_format.MessageToJson``; OTLP/JSON
    differs from protobuf's JSON mapping in two ways, fixed here: trace and span ids are
    hex, not base64, and enums are integers. One request per line is what the collector's
    ``otlpjsonfile`` receiver reads.
    """
    text = json_format.MessageToJson(
        encode_spans(list(found)), use_integers_for_enums=True, indent=None
    )
    request = orjson.loads(text)
    for resource in request.get("resourceSpans", []):
        for scope in resource.get("scopeSpans", []):
            for span in scope.get("spans", []):
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = base64.b64decode(span[key]).hex()
    return orjson.dumps(request).decode()


def traces_url(endpoint: str) -> str:
    """``http://host:4318`` → ``http://host:4318/v1/traces``; a URL with a path is kept."""
    parts = urlsplit(endpoint)
    if parts.path in ("", "/"):
        return endpoint.rstrip("/") + "/v1/traces"
    return endpoint


class _Capture(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage().splitlines()[0] if record.msg else "")


def send(found: Sequence[ReadableSpan], endpoint: str, *, timeout: float = 10.0) -> str:
    """POST the spans to an OTLP/HTTP endpoint (protobuf) with the SDK's exporter.

    Returns:
        The URL they went to.

    Raises:
        ExportFailed: the endpoint did not take them (the exporter's own reason given).
    """
    url = traces_url(endpoint)
    logger = logging.getLogger("opentelemetry.exporter")
    capture = _Capture()
    logger.addHandler(capture)
    propagate, logger.propagate = logger.propagate, False  # one line of ours, not its log
    try:
        exporter = OTLPSpanExporter(endpoint=url, timeout=timeout)
        try:
            result = exporter.export(list(found))
        finally:
            exporter.shutdown()  # type: ignore[no-untyped-call]  # untyped in the SDK
    finally:
        logger.removeHandler(capture)
        logger.propagate = propagate
    if result is not SpanExportResult.SUCCESS:
        reason = capture.messages[-1] if capture.messages else "the export failed"
        raise ExportFailed(
            f"{url}: the trace was not delivered ({reason}); is a collector listening there?"
        )
    return url
