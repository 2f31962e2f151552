"""``faultdeck export --otel``: a recorded run as OpenTelemetry spans, in a file or sent."""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime
from typing import Any

import click

from .._base import config as _config
from .._cassette.extract import write_new
from .._cassette.store import is_url
from .._keys.redact import Redactor
from ._common import check_cassette


def _start_ns(value: str) -> int:
    """``now``, or an ISO 8601 time (``2026-11-29T10:00:00Z``), as Unix nanoseconds."""
    if value == "now":
        return time.time_ns()
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        raise click.BadParameter(
            f"{value!r} is not 'now' or an ISO 8601 time like 2026-11-29T10:00:00Z",
            param_hint="--start",
        ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    delta = when - datetime(1970, 1, 1, tzinfo=UTC)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1_000


def _otel() -> Any:
    try:
        import faultdeck.otel as otel
    except ImportError as exc:
        raise click.ClickException(str(exc).splitlines()[0]) from None
    return otel


def default_path(cassette: str) -> str:
    """``runs/base.jsonl`` → ``runs/base.otlp.json``."""
    name = cassette.rstrip("/").rpartition("/")[2] if is_url(cassette) else cassette
    return f"{os.path.splitext(name)[0]}.otlp.json"


@click.command()
@click.argument("cassette", type=click.Path(dir_okay=False))
@click.option("--otel", is_flag=True, help="As OpenTelemetry spans (the one export so far).")
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, allow_dash=True),
    help="The OTLP/JSON file (- for stdout); default <stem>.otlp.json beside the cassette.",
)
@click.option(
    "--endpoint",
    metavar="URL",
    help="Send to this OTLP/HTTP endpoint instead (http://127.0.0.1:4318 gets /v1/traces).",
)
@click.option(
    "--start",
    default="now",
    show_default=True,
    help="When the run's span starts (ISO 8601); the calls follow, each lasting its ms.",
)
@click.option("--service-name", default="faultdeck", show_default=True, help="service.name.")
@click.option(
    "--timeout", type=click.FloatRange(min=0.1), default=10.0, show_default=True,
    help="Seconds the endpoint has to take the trace.",
)  # fmt: skip
@click.option("--force", is_flag=True, help="Replace the output file if it exists.")
def export(
    cassette: str,
    otel: bool,
    output: str | None,
    endpoint: str | None,
    start: str,
    service_name: str,
    timeout: float,
    force: bool,
) -> None:
    """Export a cassette as OpenTelemetry spans (GenAI semantic conventions).

    One trace: a span for the run, one per call in run order (model calls with gen_ai.*
    attributes and token usage, tools as execute_tool spans, errors as status ERROR,
    faults as span events). A cassette keeps durations, not clock times, so the times are
    synthetic: the run starts at --start and each call starts as the one before it ends.
    Every attribute passes the secret scan first; anything credential-shaped stops the
    export (exit 2) and nothing leaves.

    \b
    faultdeck export runs/base.jsonl --otel
    faultdeck export runs/base.jsonl --otel -o trace.json --start 2026-11-29T10:00:00Z
    faultdeck export runs/base.jsonl --otel --endpoint http://127.0.0.1:4318
    """
    if not otel:
        raise click.UsageError("say which export: --otel (OpenTelemetry spans)")
    if output is not None and endpoint is not None:
        raise click.UsageError("-o writes a file and --endpoint sends: pass one of them")
    begin = _start_ns(start)
    module = _otel()
    recording = check_cassette(cassette)
    redactor = Redactor(extra_patterns=_config.load_settings().redact_patterns)
    found = module.spans(recording, start_ns=begin, service_name=service_name, redactor=redactor)
    if endpoint is not None:
        url = module.send(found, endpoint, timeout=timeout)
        click.echo(f"sent {len(found)} spans of {cassette} to {url}")
        return
    text = module.otlp_json(found) + "\n"
    target = output or default_path(cassette)
    if target == "-":
        click.echo(text, nl=False)
        return
    try:
        write_new(target, text.encode("utf-8"), force=force)
    except FileExistsError:
        raise click.ClickException(
            f"{target} exists already; pass --force to replace it, or -o another path"
        ) from None
    click.echo(f"wrote {target}: {len(found)} spans of {cassette} (OTLP/JSON)")
