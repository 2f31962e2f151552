"""A cassette as OpenTelemetry spans, to look at a recorded run in the tools people use.

``spans(recording, start_ns=…)`` makes one trace with the SDK: a span for the run and one
per call in run order, named and attributed after the GenAI semantic conventions
(``gen_ai.*`` for model calls, ``execute_tool`` spans for tools, errors as status ERROR
with ``error.type``, faults as ``faultdeck.fault`` events). The format keeps durations, not
wall-clock times, so the times are synthetic: cumulated from each call's ``ms``. Every
attribute passes the secret scan before anything leaves (``ExportRefused``).
``otlp_json(spans)`` is the trace as OTLP/JSON; ``send(spans, endpoint)`` posts it to an
OTLP/HTTP endpoint with the SDK's ``OTLPSpanExporter``. Needs the ``otel`` extra:
``pip install 'faultdeck[otel]'``.
"""

from __future__ import annotations

INSTALL = "the OpenTelemetry export needs its SDK: pip install 'faultdeck[otel]'"

try:
    from ._sdk import ExportFailed, ExportRefused, otlp_json, send, spans, traces_url
except ImportError as exc:
    raise ImportError(f"{INSTALL} ({exc.name} is missing)") from exc

__all__ = ["INSTALL", "ExportFailed", "ExportRefused", "otlp_json", "send", "spans", "traces_url"]
