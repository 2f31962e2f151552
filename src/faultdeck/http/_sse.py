"""Server-sent events: parsed incrementally as a stream is read, and written back.

An event is stored as ``{"ms": …, "event": name?, "data": …}``: ``data`` is the parsed
JSON object when the event carries one (so ids and timestamps in it are seen), else the
text. Writing an event gives back the lines an SSE client parses.
"""

from __future__ import annotations

import codecs
from typing import Any

import orjson


class SSEParser:
    """Splits a byte stream into events as bytes arrive; never buffers more than one event."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._buffer = ""

    def feed(self, chunk: bytes) -> list[dict[str, Any]]:
        """The events completed by ``chunk``."""
        self._buffer += self._decoder.decode(chunk).replace("\r\n", "\n").replace("\r", "\n")
        events = []
        while "\n\n" in self._buffer:
            block, self._buffer = self._buffer.split("\n\n", 1)
            event = parse_block(block)
            if event is not None:
                events.append(event)
        return events

    def flush(self) -> list[dict[str, Any]]:
        """The last event, if the stream ended without its blank line."""
        block, self._buffer = self._buffer + self._decoder.decode(b"", final=True), ""
        event = parse_block(block)
        return [event] if event is not None else []


def parse_block(block: str) -> dict[str, Any] | None:
    """One event from its lines; comments, ``id:`` and ``retry:`` are dropped."""
    name = None
    data: list[str] = []
    for line in block.split("\n"):
        if not line or line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if field == "event":
            name = value
        elif field == "data":
            data.append(value)
    if name is None and not data:
        return None
    text = "\n".join(data)
    event: dict[str, Any] = {}
    if name is not None:
        event["event"] = name
    event["data"] = parsed(text)
    return event


def parsed(text: str) -> Any:
    """An event's data: the JSON object or list it holds, else its text."""
    if text[:1] in ("{", "["):
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            pass
    return text


def encode(event: dict[str, Any]) -> bytes:
    """The SSE lines of a stored event, ending in the blank line."""
    data = event.get("data", "")
    text = data if isinstance(data, str) else orjson.dumps(data).decode()
    head = f"event: {event['event']}\n" if event.get("event") is not None else ""
    body = "".join(f"data: {line}\n" for line in text.split("\n"))
    return f"{head}{body}\n".encode()
