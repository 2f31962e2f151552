"""What the adapters' tests of requests, urllib3 and urllib share: the recordings one module
makes against httpbin and the fake upstream, and how they compare what the program saw."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

import orjson

import faultdeck as fd

VOLATILE = frozenset({"date", "connection", "keep-alive", "transfer-encoding", "content-length"})
"""Headers set per hop or per moment: never compared."""

Seen = TypeVar("Seen")


@dataclass
class Recording(Generic[Seen]):
    """Every recording a test module made, with what the program saw without a deck
    (``plain``) and while recording (``live``)."""

    base: str
    llm: str
    plain: dict[str, Seen]
    live: dict[str, Seen]
    cassette: Path
    calls: list[tuple[str, str]]
    by_transport: list[tuple[str, str]]
    one: Path
    secret: Path


def named(report: fd.Report) -> list[tuple[str, str]]:
    """Each call of ``report`` as its name and key."""
    return [(call.name, call.key) for call in report.calls]


def meaning(headers: dict[str, list[str]], body: bytes) -> Any:
    """A body by what it means: a stream's events (``events``), JSON's value, else its
    bytes (``/stream``'s lines come as ``application/json`` but are no one JSON value)."""
    content_type = headers.get("content-type", [""])[0]
    if content_type.startswith("text/event-stream"):
        return events(body)
    if content_type == "application/json" and body:
        try:
            return orjson.loads(body)
        except orjson.JSONDecodeError:
            pass
    return body


def events(body: bytes) -> list[Any]:
    """A stream's events by meaning, but for ``created``: the deck stores a timestamp as a
    placeholder (a recording's volatile fields are normalized), so it replays as another."""
    out: list[Any] = []
    for line in body.splitlines():
        if line.startswith(b"data: {"):
            event = orjson.loads(line[6:])
            event.pop("created", None)
            out.append(event)
        elif line:
            out.append(line)
    return out
