"""HTTP bodies that are not text, as a cassette holds them: base64, with their length and
digest, so that what a replay hands back is byte for byte what was recorded.

A stored answer with a binary body reads ``{"status", "headers", "body": "<base64>",
"binary": {"encoding": "base64", "size": N, "sha256": "<hex>"}}``. ``body`` stays a string,
so every reader of an answer's body keeps working; ``binary`` says how to read it.
"""

from __future__ import annotations

import binascii
import hashlib
from typing import Any

import orjson

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
