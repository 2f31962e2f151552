"""AWS's binary event-stream framing (``application/vnd.amazon.eventstream``): messages
decoded incrementally as a stream is read, and encoded again.

A message is a prelude (its total length and its headers' length, big-endian 32-bit, then
the prelude's CRC32), its headers, its payload and the CRC32 of all that came before. A
header is its name's length (one byte), its name, a type byte and a value; Bedrock sends
strings (type 7) only, but every type is read.

A message is stored as an SSE event is (``_sse``), so that ids and text in it are seen and
faults can rewrite it: ``{"ms": …, "event": <:event-type or :exception-type>, "headers":
{the other headers, in order}, "data": <the payload, parsed JSON where it is JSON>}``. A
payload that is not UTF-8 is kept as ``{"base64": …}`` under ``"bytes"`` instead of
``"data"``. Encoding a stored message gives back the bytes its SDK decodes.
"""

from __future__ import annotations

import base64
import binascii
import struct
from typing import Any

import orjson

from ._sse import parsed

CONTENT_TYPE = "application/vnd.amazon.eventstream"
"""The content type of an event-stream response."""

_PRELUDE = 12
_CRC = 4
_MAX_MESSAGE = 24 * 1024 * 1024
# Header value types: their number and, for the fixed-size ones, their struct format.
_BOOL_TRUE, _BOOL_FALSE, _BYTES, _STRING, _TIMESTAMP, _UUID = 0, 1, 6, 7, 8, 9
_FIXED = {2: ">b", 3: ">h", 4: ">i", 5: ">q", _TIMESTAMP: ">q"}
_NAMED_BY = {"event": ":event-type", "exception": ":exception-type", "error": ":error-code"}


class FrameError(ValueError):
    """Bytes that are not an event-stream message (a length or a CRC32 that disagrees)."""


def encode_message(headers: list[tuple[str, Any]], payload: bytes) -> bytes:
    """One message: ``headers`` as (name, value) pairs (a ``str`` value is a string header,
    ``bytes`` a byte array, ``bool`` a boolean, ``int`` a 64-bit integer), then
    ``payload``."""
    head = b"".join(_header(name, value) for name, value in headers)
    total = _PRELUDE + len(head) + len(payload) + _CRC
    prelude = struct.pack(">II", total, len(head))
    prelude += struct.pack(">I", binascii.crc32(prelude))
    message = prelude + head + payload
    return message + struct.pack(">I", binascii.crc32(message))


def _header(name: str, value: Any) -> bytes:
    raw = name.encode("utf-8")
    start = struct.pack(">B", len(raw)) + raw
    if isinstance(value, bool):
        return start + struct.pack(">B", _BOOL_TRUE if value else _BOOL_FALSE)
    if isinstance(value, int):
        return start + struct.pack(">Bq", 5, value)
    if isinstance(value, bytes):
        return start + struct.pack(">BH", _BYTES, len(value)) + value
    text = str(value).encode("utf-8")
    return start + struct.pack(">BH", _STRING, len(text)) + text


def decode_message(data: bytes) -> tuple[list[tuple[str, Any]], bytes]:
    """One whole message's headers and payload; ``FrameError`` where its lengths or CRC32s
    disagree with its bytes."""
    if len(data) < _PRELUDE + _CRC:
        raise FrameError(f"a message of {len(data)} bytes is shorter than its prelude")
    total, head_length, prelude_crc = struct.unpack(">III", data[:_PRELUDE])
    if binascii.crc32(data[:8]) != prelude_crc:
        raise FrameError("the prelude's CRC32 does not match its bytes")
    if total != len(data) or head_length > total - _PRELUDE - _CRC:
        raise FrameError(f"a message says it is {total} bytes long but is {len(data)}")
    (message_crc,) = struct.unpack(">I", data[-_CRC:])
    if binascii.crc32(data[:-_CRC]) != message_crc:
        raise FrameError("the message's CRC32 does not match its bytes")
    head = data[_PRELUDE : _PRELUDE + head_length]
    return _headers(head), data[_PRELUDE + head_length : -_CRC]


def _headers(head: bytes) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    at = 0
    while at < len(head):
        size = head[at]
        name = head[at + 1 : at + 1 + size].decode("utf-8")
        kind = head[at + 1 + size]
        at += 2 + size
        value: Any
        if kind in (_BOOL_TRUE, _BOOL_FALSE):
            value = kind == _BOOL_TRUE
        elif kind in _FIXED:
            fmt = _FIXED[kind]
            (value,) = struct.unpack_from(fmt, head, at)
            at += struct.calcsize(fmt)
        elif kind == _UUID:
            value, at = head[at : at + 16], at + 16
        elif kind in (_BYTES, _STRING):
            (length,) = struct.unpack_from(">H", head, at)
            raw = head[at + 2 : at + 2 + length]
            value = raw.decode("utf-8") if kind == _STRING else raw
            at += 2 + length
        else:
            raise FrameError(f"header {name!r} has an unknown type {kind}")
        out.append((name, value))
    return out


class EventStreamParser:
    """Splits a byte stream into stored messages as bytes arrive (``SSEParser``'s
    interface); a message is held only until its last byte comes.

    Args:
        strict: raise ``FrameError`` at bytes that are no message; otherwise (a live
            stream teed on its way to its client, whose own decoder is the one to fail)
            the messages before them are kept and the rest is not read.
    """

    def __init__(self, *, strict: bool = True) -> None:
        self._buffer = b""
        self.strict = strict
        self.broken: FrameError | None = None

    def feed(self, chunk: bytes) -> list[dict[str, Any]]:
        """The messages completed by ``chunk``."""
        if self.broken is not None:
            return []
        self._buffer += chunk
        events = []
        try:
            while len(self._buffer) >= _PRELUDE:
                (total,) = struct.unpack_from(">I", self._buffer)
                if total > _MAX_MESSAGE or total < _PRELUDE + _CRC:
                    raise FrameError(f"a message says it is {total} bytes long")
                if len(self._buffer) < total:
                    break
                message, self._buffer = self._buffer[:total], self._buffer[total:]
                events.append(stored(*decode_message(message)))
        except FrameError as exc:
            if self.strict:
                raise
            self.broken, self._buffer = exc, b""
        return events

    def flush(self) -> list[dict[str, Any]]:
        """Nothing: bytes left over are the start of a message that never ended."""
        self._buffer = b""
        return []


def stored(headers: list[tuple[str, Any]], payload: bytes) -> dict[str, Any]:
    """A decoded message as the cassette stores it (the module's docstring)."""
    kinds = dict(headers)
    named_by = _NAMED_BY.get(str(kinds.get(":message-type", "event")), ":event-type")
    event: dict[str, Any] = {}
    if isinstance(kinds.get(named_by), str):
        event["event"] = kinds[named_by]
    rest = {name: _header_json(value) for name, value in headers if name != named_by}
    if rest:
        event["headers"] = rest
    try:
        text = payload.decode("utf-8")
    except UnicodeDecodeError:
        event["bytes"] = {"base64": base64.b64encode(payload).decode("ascii")}
        return event
    event["data"] = parsed(text)
    return event


def _header_json(value: Any) -> Any:
    if isinstance(value, bytes):
        return {"base64": base64.b64encode(value).decode("ascii")}
    return value


def encode(event: dict[str, Any]) -> bytes:
    """The bytes of a stored message (``stored``'s inverse, JSON written compactly)."""
    rest = event.get("headers") or {}
    message_type = str(rest.get(":message-type", "event"))
    headers: list[tuple[str, Any]] = []
    if event.get("event") is not None:
        headers.append((_NAMED_BY.get(message_type, ":event-type"), event["event"]))
    for name, value in rest.items():
        if isinstance(value, dict) and "base64" in value:
            value = base64.b64decode(value["base64"])
        headers.append((name, value))
    if "bytes" in event:
        payload = base64.b64decode(event["bytes"]["base64"])
    else:
        data = event.get("data", "")
        payload = data.encode("utf-8") if isinstance(data, str) else orjson.dumps(data)
    return encode_message(headers, payload)


def malformed() -> bytes:
    """A message whose CRC32 is wrong: what a client reads as a corrupt stream."""
    message = bytearray(encode({"event": "chunk", "data": {"bytes": ""}}))
    message[-1] ^= 0xFF
    return bytes(message)


def event(name: str, data: Any, *, message_type: str = "event") -> dict[str, Any]:
    """A stored message as the Bedrock runtime sends it: JSON, of ``message_type``."""
    return {
        "event": name,
        "headers": {":content-type": "application/json", ":message-type": message_type},
        "data": data,
    }
