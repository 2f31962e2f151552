"""HTTP bodies that are not text, as a cassette holds them: base64, with their length and
digest, so that what a replay hands back is byte for byte what was recorded.

A stored answer with a binary body reads ``{"status", "headers", "body": "<base64>",
"binary": {"encoding": "base64", "size": N, "sha256": "<hex>"}}``. ``body`` stays a string,
so every reader of an answer's body keeps working; ``binary`` says how to read it.
"""

from __future__ import annotations

import binascii
import hashlib
from collections.abc import Iterator, Mapping
from typing import Any

import orjson

from .format import kept_bytes

BINARY = "binary"
"""The answer field that says its body is base64 (``binary_form``)."""


class BodyError(ValueError):
    """A stored binary body that does not decode to what its line says it holds."""


def binary_form(data: bytes) -> tuple[str, dict[str, Any]]:
    """``data`` as a stored body: its base64 text and the ``binary`` field beside it."""
    text = binascii.b2a_base64(data, newline=False).decode("ascii")
    digest = hashlib.sha256(data).hexdigest()
    return text, {"encoding": "base64", "size": len(data), "sha256": digest}


def binary_problem(value: dict[str, Any]) -> str | None:
    """What keeps an answer's ``binary`` field from describing its body, short of decoding
    it (``answer_bytes`` decodes and checks the length and digest)."""
    info = value.get(BINARY)
    if info is None:
        return None
    if (
        type(info) is not dict
        or info.get("encoding") != "base64"
        or type(info.get("size")) is not int
        or info["size"] < 0
        or type(info.get("sha256")) is not str
    ):
        return "'binary' needs encoding 'base64', an integer 'size' and a 'sha256'"
    if type(value.get("body")) is not str:
        return "a binary body is base64 text"
    return None


def answer_bytes(value: dict[str, Any]) -> bytes:
    """The body of a stored HTTP answer as the bytes a client reads: a binary body decoded
    and checked against its length and digest, text as UTF-8, anything else as JSON.

    Raises:
        BodyError: a binary body that is not base64, or not as long as its line says, or
            whose digest differs (the message says which).
    """
    body = value["body"]
    info = value.get(BINARY)
    if info is None:
        return body.encode() if isinstance(body, str) else orjson.dumps(body)
    problem = binary_problem(value)
    if problem is not None:
        raise BodyError(problem)
    try:
        data = binascii.a2b_base64(body)
    except (binascii.Error, ValueError) as exc:
        raise BodyError(f"the binary body is not valid base64 ({exc})") from None
    if len(data) != info["size"]:
        raise BodyError(f"the binary body holds {len(data)} bytes, its line says {info['size']}")
    if hashlib.sha256(data).hexdigest() != info["sha256"]:
        raise BodyError("the binary body's sha256 differs from the one its line gives")
    return data


class KeptBodies(Mapping[int, bytes]):
    """The bodies of a recording's long, well-formed HTTP answers as the bytes a client
    reads (``answer_bytes``), by their entry's line number: ``Recording.bodies``.

    A binary body is decoded and checked as its line is read (``keep``), and kept: a bad one
    is refused there, naming its line. Any other is made from the parsed answer the first
    time it is asked for, and kept for the replays after: opening a cassette serializes no
    body, and a body no replay asks for (a ``diff``, a ``show``) is never made. Each is a
    bytes object of its own length (``kept_bytes``). Two threads asking at once for a body
    not yet made may each make it: equal bytes, either one kept.
    """

    __slots__ = ("_kept",)

    def __init__(self) -> None:
        # The bytes, or the stored answer whose body is still to be made.
        self._kept: dict[int, bytes | dict[str, Any]] = {}

    def keep(self, line: int, answer: dict[str, Any]) -> None:
        """Keep the body of the well-formed answer on ``line``.

        Raises:
            BodyError: a binary body that does not decode to what its line says.
        """
        self._kept[line] = answer_bytes(answer) if BINARY in answer else answer

    def __getitem__(self, line: int) -> bytes:
        kept = self._kept[line]
        if isinstance(kept, dict):
            data = answer_bytes(kept)
            # JSON, as orjson writes it: in a buffer up to eight times its length.
            kept = self._kept[line] = data if type(kept["body"]) is str else kept_bytes(data)
        return kept

    def get(self, line: int, default: Any = None) -> Any:
        """The body on ``line``, or ``default`` when none is kept (with no KeyError raised
        and caught: a replay asks so for every answer)."""
        kept = self._kept.get(line)
        if kept is None:
            return default
        return self[line] if type(kept) is dict else kept

    def __contains__(self, line: object) -> bool:
        return line in self._kept

    def __iter__(self) -> Iterator[int]:
        return iter(self._kept)

    def __len__(self) -> int:
        return len(self._kept)
