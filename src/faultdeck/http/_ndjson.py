"""Newline-delimited JSON streams (``application/x-ndjson``, Ollama's native API): each line
one event, parsed incrementally as a stream is read, and written back.

A line is stored as an SSE event is (``{"ms": …, "data": …}``, no ``event`` name): ``data``
is the parsed JSON object, so ids and timestamps in it are seen and normalized, else the
line's text. Writing an event gives back its line, so a client iterating lines yields the
objects it did. A provider's mid-stream error is one more line (``{"error": "…"}``).
"""

from __future__ import annotations

import codecs
from typing import Any

import orjson

MEDIA_TYPES = ("application/x-ndjson", "application/ndjson", "application/jsonl")
"""Content types whose body is one JSON value a line."""

MALFORMED = b"{this is not json\n"
"""A line that does not parse, for a fault that breaks the stream so."""


def is_ndjson(content_type: str) -> bool:
    """Whether a response's ``content-type`` is newline-delimited JSON."""
    media = content_type.split(";", 1)[0].strip().lower()
    return media in MEDIA_TYPES


class NDJSONParser:
    """Splits a byte stream into lines as bytes arrive; never buffers more than one line."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._buffer = ""

    def feed(self, chunk: bytes) -> list[dict[str, Any]]:
        """The events (lines) completed by ``chunk``; blank lines are none."""
        self._buffer += self._decoder.decode(chunk)
        *lines, self._buffer = self._buffer.split("\n")
        return [event for line in lines if (event := _event(line)) is not None]

    def flush(self) -> list[dict[str, Any]]:
        """The last line, if the stream ended without its newline."""
        line, self._buffer = self._buffer + self._decoder.decode(b"", final=True), ""
        event = _event(line)
        return [event] if event is not None else []


def _event(line: str) -> dict[str, Any] | None:
    text = line.rstrip("\r")
    if not text.strip():
        return None
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return {"data": text}
    # A bare string or number is kept as the text it was, so it is written back the same.
    return {"data": value if isinstance(value, (dict, list)) else text}


def encode(event: dict[str, Any]) -> bytes:
    """The line of a stored event, ending in its newline."""
    data = event.get("data", "")
    if isinstance(data, str):
        return data.encode() + b"\n"
    return orjson.dumps(data) + b"\n"
