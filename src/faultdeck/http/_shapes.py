"""What HTTP looks like to the deck: a request as a boundary call, a response as stored,
and the failures providers really send.

Requests: kind ``model`` for the known LLM endpoints (named like
``openai.chat.completions``), else ``http`` (named ``GET /v1/models``); args are the
method, path, query, parsed JSON body and the allowlisted headers. Credentials and
transport noise (user-agent, ``x-stainless-*``, idempotency keys, content-length) are
never part of a key and never stored, because only allowlisted headers are kept at all.

Responses keep the headers a client reads to go on: the retry and rate-limit headers,
request ids, and ``mcp-session-id``, which MCP's streamable HTTP client reads from the
``initialize`` answer and sends back on every later request (without it a replayed client
opens no GET stream and sends no DELETE). The session id sent back is a request header,
so it is never in a key: a random id per recording changes no key.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from typing import Any

import orjson

from .._base.errors import ConfigError

# Request headers that change what a provider answers.
KEEP_REQUEST_HEADERS = frozenset({"anthropic-version", "anthropic-beta", "openai-beta"})
# Response headers a client or a loop reads; everything else (date, server, cookies,
# content-length of a body we store decoded) is left out.
KEEP_RESPONSE_HEADERS = frozenset(
    {
        "content-type",
        "retry-after",
        "retry-after-ms",
        "x-should-retry",
        "request-id",
        "x-request-id",
        "openai-processing-ms",
        "mcp-session-id",
    }
)
KEEP_RESPONSE_PREFIXES = ("x-ratelimit-", "anthropic-ratelimit-")
ENDPOINTS = (
    ("/chat/completions", "openai.chat.completions"),
    ("/responses", "openai.responses"),
    ("/embeddings", "openai.embeddings"),
    ("/completions", "openai.completions"),
    ("/messages", "anthropic.messages"),
)


def name_of(method: str, path: str) -> tuple[str, str]:
    """The boundary kind and name of a request."""
    if method == "POST":
        for suffix, name in ENDPOINTS:
            if path.endswith(suffix):
                return "model", name
    return "http", f"{method} {path}"


def request_args(
    method: str,
    path: str,
    query: Sequence[Sequence[str]],
    headers: Any,
    body: Any,
    keep: frozenset[str],
) -> dict[str, Any]:
    """A request as the args of a boundary call: ``body`` is what they hold under
    ``body`` (``parse_body`` of the request's bytes, or the bytes as an ``orjson.Fragment``
    for ``Deck.take_recorded``), ``None`` when the request has none."""
    args: dict[str, Any] = {"method": method, "path": path}
    if query:
        args["query"] = [list(pair) for pair in query]
    kept: dict[str, str] = {}
    # One pass over the request's raw headers (a lookup by name scans them all each time),
    # decoding only what is kept: ``multi_items`` decodes every name and value, after
    # working out the encoding from all of them. A repeated header keeps every value,
    # joined as ``headers[name]`` joins them. httpx's and httpx2's headers hold (raw name,
    # lower-cased name, value) in ``_list``, read as they are (``raw`` copies them into
    # pairs, and each name would be lower-cased again); other headers through ``raw``.
    wanted = _raw_names(keep)
    triples = getattr(headers, "_list", None)
    if triples is None:
        triples = [(raw_name, raw_name.lower(), value) for raw_name, value in headers.raw]
    for _, low, raw_value in triples:
        if low in wanted:
            name, value = low.decode("ascii"), raw_value.decode(headers.encoding)
            kept[name] = f"{kept[name]}, {value}" if name in kept else value
    if kept:
        args["headers"] = dict(sorted(kept.items()))
    if body is not None:
        args["body"] = body
    return args


@functools.lru_cache(maxsize=64)
def _raw_names(names: frozenset[str]) -> frozenset[bytes]:
    """Header names as a request's raw headers spell them, lower-cased (HTTP names are
    ASCII; one that is not cannot be in a request)."""
    return frozenset(n.encode("ascii") for n in names if n.isascii())


def parse_body(body: bytes) -> Any:
    """JSON bodies as parsed JSON (hashed by meaning, not bytes), else text."""
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError:
        return body.decode("utf-8", errors="replace")


def kept_headers(headers: Any, extra: frozenset[str] = frozenset()) -> dict[str, str]:
    """The response headers worth storing: the allowlist, plus ``extra`` (lower-case names
    a transport was asked to keep). Called only when recording; the values are redacted
    with the rest of the answer before they are written."""
    kept = {}
    for name, value in headers.items():
        low = name.lower()
        if low in KEEP_RESPONSE_HEADERS or low in extra or low.startswith(KEEP_RESPONSE_PREFIXES):
            kept[low] = value
    return kept


def header_names(names: Iterable[str], option: str) -> frozenset[str]:
    """Header names given to an option, lower-cased; a single string is refused (it would
    be read as its letters)."""
    if isinstance(names, str):
        raise ConfigError(
            f"{option}={names!r} is one string; pass a tuple of header names: {option}=({names!r},)"
        )
    return frozenset(name.lower() for name in names)


def classify(
    status: int, headers: dict[str, str], body: Any
) -> tuple[str | None, float | None, str | None]:
    """How a loop sees a response: (error name, Retry-After seconds, provider code)."""
    if status < 400:
        return None, None, None
    retry_after = None
    if "retry-after-ms" in headers:
        retry_after = _float(headers["retry-after-ms"], 1000)
    elif "retry-after" in headers:
        retry_after = _float(headers["retry-after"], 1)
    code = None
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        value = error.get("code") or error.get("type")
        code = value if isinstance(value, str) else None
    name = "RateLimitError" if status == 429 else "APIStatusError"
    return name, retry_after, code


def _float(text: str, per_second: float) -> float | None:
    try:
        return float(text) / per_second
    except ValueError:
        return None
