"""Bodies as a recording holds them: readable where they are text, exact always.

A response body is stored as JSON parsed (a JSON content type, or none, and a body that
parses), else as text (valid UTF-8 under a text-like or missing content type), else as its
bytes (``_cassette/bodies.py``: base64 with its length and digest). Whatever form it takes,
a replay hands back the same bytes; JSON by meaning.

A request body becomes its call's args by meaning, never by incidental bytes: JSON parsed,
a form (``application/x-www-form-urlencoded``) as its pairs redacted by name as a query is,
``multipart/form-data`` as its parts (name, filename, content type, and a digest of the
content: never the random boundary), text as text, anything else by its exact length and
digest, so that two uploads that differ in a byte never answer each other.
"""

from __future__ import annotations

import hashlib
import importlib
import re
import zlib
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qsl

import orjson

from .._keys.redact import Redactor

# Content types whose bodies are text when they are valid UTF-8, besides text/*.
_TEXT_TYPES = frozenset(
    {
        "application/javascript",
        "application/ecmascript",
        "application/xml",
        "application/x-www-form-urlencoded",
        "application/x-ndjson",
        "application/ndjson",
        "application/jsonl",
        "application/jsonlines",
        "application/yaml",
        "application/x-yaml",
        "application/graphql",
        "application/sql",
        "application/toml",
        "image/svg+xml",
    }
)
_TEXT_SUFFIXES = ("+json", "+xml", "+yaml")
_UTF8 = frozenset({"utf-8", "utf8", "us-ascii", "ascii"})
_CHARSET = re.compile(r";\s*charset\s*=\s*\"?([^\";\s]+)", re.IGNORECASE)


def media_type(content_type: str | None) -> str:
    """The media type of a Content-Type value, lower-case, without parameters."""
    if not content_type:
        return ""
    return content_type.split(";", 1)[0].strip().lower()


def _is_json_type(media: str) -> bool:
    return media == "application/json" or media.endswith("+json")


def _may_be_text(content_type: str | None) -> bool:
    """Whether a body of this content type may be stored as text: a text-like type (or
    none) whose declared charset, if any, is UTF-8 (text in another charset is kept as its
    bytes)."""
    media = media_type(content_type)
    if media and not (
        media.startswith("text/")
        or media in _TEXT_TYPES
        or _is_json_type(media)
        or media.endswith(_TEXT_SUFFIXES)
    ):
        return False
    charset = _CHARSET.search(content_type or "")
    return charset is None or charset.group(1).lower() in _UTF8


def readable(content: bytes, content_type: str | None, *, parse: bool = True) -> Any:
    """``content`` in its readable form: parsed JSON (only with ``parse``, under a JSON
    content type or none), text, or ``None`` where only its bytes hold it."""
    if not _may_be_text(content_type):
        return None
    if parse and content:
        media = media_type(content_type)
        if not media or _is_json_type(media):
            try:
                return orjson.loads(content)
            except orjson.JSONDecodeError:
                pass
    try:
        return content.decode("utf-8")
    except UnicodeDecodeError:
        return None


def digest(content: bytes) -> dict[str, Any]:
    """How args name bytes they do not hold: their length and SHA-256."""
    return {"size": len(content), "sha256": hashlib.sha256(content).hexdigest()}


def request_body(content: bytes, content_type: str | None, redactor: Redactor) -> dict[str, Any]:
    """A request body as args fields: ``{"body": …}`` (JSON or text), ``{"form": pairs}``,
    ``{"multipart": parts}`` or ``{"bytes": digest}``."""
    media = media_type(content_type)
    if media == "application/x-www-form-urlencoded":
        try:
            text = content.decode("utf-8")
        except UnicodeDecodeError:
            return {"bytes": digest(content)}
        return {"form": redactor.redact_pairs(parse_qsl(text, keep_blank_values=True))}
    if media == "multipart/form-data":
        parts = multipart_parts(content, content_type or "", redactor)
        if parts is not None:
            return {"multipart": parts}
        return {"bytes": digest(content)}
    body = readable(content, content_type)
    if body is None:
        return {"bytes": digest(content)}
    return {"body": body}


_BOUNDARY = re.compile(r";\s*boundary\s*=\s*(\"[^\"]+\"|[^;\s]+)", re.IGNORECASE)
_DISPOSITION_PARAM = re.compile(r";\s*([\w*-]+)\s*=\s*(\"(?:[^\"\\]|\\.)*\"|[^;\s]+)")


def multipart_parts(
    content: bytes, content_type: str, redactor: Redactor
) -> list[dict[str, Any]] | None:
    """The parts of a ``multipart/form-data`` body, or ``None`` when it does not parse:
    each its name, filename and content type when it has them, a text field's value
    (redacted by name, as a form's pairs are), any other content by its digest."""
    found = _BOUNDARY.search(content_type)
    if found is None:
        return None
    delimiter = b"--" + found.group(1).strip('"').encode("latin-1")
    pieces = content.split(delimiter)
    if len(pieces) < 3:
        return None
    parts = []
    for piece in pieces[1:-1]:
        part = _part(piece, redactor)
        if part is None:
            return None
        parts.append(part)
    return parts


def _part(piece: bytes, redactor: Redactor) -> dict[str, Any] | None:
    if not piece.startswith(b"\r\n"):
        return None
    head, sep, data = piece[2:].partition(b"\r\n\r\n")
    if not sep or not data.endswith(b"\r\n"):
        return None
    data = data[:-2]
    fields: dict[str, str] = {}
    for line in head.decode("utf-8", errors="replace").split("\r\n"):
        name, _, value = line.partition(":")
        fields[name.strip().lower()] = value.strip()
    disposition = fields.get("content-disposition", "")
    params = {k.lower(): v.strip('"') for k, v in _DISPOSITION_PARAM.findall(disposition)}
    part: dict[str, Any] = {"name": params.get("name", "")}
    if "filename" in params:
        part["filename"] = params["filename"]
    if "content-type" in fields:
        part["content_type"] = fields["content-type"]
    text = None if "filename" in params else readable(data, fields.get("content-type"), parse=False)
    if isinstance(text, str):
        part["value"] = redactor.redact_pairs([[part["name"], text]])[0][1]
    else:
        part.update(digest(data))
    return part


# -- content codings ------------------------------------------------------------------------


def _gzip(data: bytes) -> bytes:
    compressor = zlib.compressobj(6, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    return compressor.compress(data) + compressor.flush()


def _compressor(*modules: str) -> Callable[[bytes], bytes] | None:
    """The ``compress`` of the first of ``modules`` installed, if any."""
    for module in modules:
        try:
            return importlib.import_module(module).compress  # type: ignore[no-any-return]
        except ImportError:
            continue
    return None


_CODERS: dict[str, Callable[[], Callable[[bytes], bytes] | None]] = {
    "gzip": lambda: _gzip,
    "x-gzip": lambda: _gzip,
    "deflate": lambda: zlib.compress,
    "br": lambda: _compressor("brotli", "brotlicffi"),
    "zstd": lambda: _compressor("compression.zstd", "zstandard"),
    "identity": lambda: lambda data: data,
}


def encode(data: bytes, codings: str) -> bytes | None:
    """``data`` encoded with a Content-Encoding's codings, in order, as an upstream sent
    it (so that the client decodes it to ``data`` again); ``None`` where a coding is not
    known or its compressor is not installed (the body then goes unencoded)."""
    for coding in codings.split(","):
        make = _CODERS.get(coding.strip().lower())
        coder = make() if make is not None else None
        if coder is None:
            return None
        data = coder(data)
    return data
