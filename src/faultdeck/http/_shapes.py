"""What HTTP looks like to the deck: a request as a boundary call, a response as stored,
and the failures providers really send.

Requests: kind ``model`` for the known LLM endpoints (named like
``openai.chat.completions``), else ``http`` (named ``GET /v1/models``); args are the
method, path, query, the body by meaning (``_bodies``) and the allowlisted headers.
Credentials and transport noise (user-agent, ``x-stainless-*``, idempotency keys,
content-length) are never part of a key and never stored, because only allowlisted request
headers are kept at all.

Responses keep every header but the hop-by-hop ones and ``date``, so that what a client
acts on comes back: ``location`` (redirects), ``link`` (pagination), ``etag``,
``set-cookie`` (a cookie jar fills as it did), ``retry-after``, rate limits, request ids,
``mcp-session-id`` (MCP's streamable HTTP client reads it from the ``initialize`` answer and
sends it back on every later request). Values that carry credentials are masked. Response
headers are never in a key.
"""

from __future__ import annotations

import base64
import functools
import re
from collections.abc import Iterable, Sequence
from typing import Any

from .._base.errors import ConfigError
from .._keys.redact import DROP, PLAIN, SECRET, Redactor
from .._keys.secrets import MASK_RE, mask
from ..faults._gemini import retry_delay, status_name
from ._providers import route_of

# Query parameters that carry a credential whatever the redactor thinks of the word:
# Google's APIs take the API key as ``?key=``.
QUERY_CREDENTIALS = frozenset({"key"})
# Request headers that change what a provider answers.
KEEP_REQUEST_HEADERS = frozenset(
    {
        "anthropic-version",
        "anthropic-beta",
        "openai-beta",
        # Bedrock's invoke_model takes these options as headers
        "x-amzn-bedrock-accept",
        "x-amzn-bedrock-trace",
        "x-amzn-bedrock-guardrailidentifier",
        "x-amzn-bedrock-guardrailversion",
        "x-amzn-bedrock-performanceconfig-latency",
        "x-amzn-bedrock-service-tier",
    }
)
# Response headers never recorded: hop-by-hop ones, which describe one connection, and
# ``date``, which changes each time; ``content-length`` is made again from the body replayed
# (``stored_headers`` keeps one that does not describe the body, as a HEAD answer's).
DROP_RESPONSE_HEADERS = frozenset(
    {
        "date",
        "connection",
        "keep-alive",
        "proxy-connection",
        "transfer-encoding",
        "te",
        "trailer",
        "upgrade",
        "content-length",
    }
)
# Cookie names that hold a session, whatever the redactor thinks of the word.
_SESSION_COOKIE = re.compile(r"sess|sid|csrf|xsrf|remember|login|auth|token", re.IGNORECASE)
_AUTHENTICATE = frozenset({"www-authenticate", "proxy-authenticate"})
_MIN_PASSWORD = 6
ENDPOINTS = (
    ("/api/chat", "ollama.chat"),
    ("/api/generate", "ollama.generate"),
    ("/api/embed", "ollama.embed"),
    ("/api/embeddings", "ollama.embed"),
    ("/v2/chat", "cohere.chat"),
    ("/v2/embed", "cohere.embed"),
    ("/chat/completions", "openai.chat.completions"),
    ("/responses", "openai.responses"),
    ("/embeddings", "openai.embeddings"),
    ("/completions", "openai.completions"),
    ("/messages", "anthropic.messages"),
    (":generateContent", "gemini.generate_content"),
    (":streamGenerateContent", "gemini.stream_generate_content"),
)


def name_of(
    method: str, path: str, *, host: str | None = None, agent: str | None = None
) -> tuple[str, str]:
    """The boundary kind and name of a request: a provider's route first (``_providers``:
    by path, ``host`` and the ``user-agent`` ``agent``), then ``ENDPOINTS``."""
    routed = route_of(method, path, host, agent)
    if routed is not None:
        return "model", routed
    if method == "POST":
        for suffix, name in ENDPOINTS:
            if path.endswith(suffix):
                return "model", name
    return "http", f"{method} {path}"


def query_pairs(pairs: Sequence[Sequence[str]], redactor: Redactor) -> list[list[str]]:
    """A URL's query as recorded: redacted by name, a ``QUERY_CREDENTIALS`` value masked
    whole."""
    return redactor.redact_pairs(
        [
            (name, mask(value) if name in QUERY_CREDENTIALS and value else value)
            for name, value in pairs
        ]
    )


def request_args(
    method: str,
    path: str,
    query: Sequence[Sequence[str]],
    headers: Any,
    keep: frozenset[str],
) -> dict[str, Any]:
    """A request as the args of a boundary call, but for its body (``Exchange.args`` puts
    the body by meaning). The
    password of a Basic ``authorization`` is masked where the path or query holds it
    (``without_password``); ``args["path"]`` is the path as masked."""
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
    basic = None
    for _, low, raw_value in triples:
        if low in wanted:
            name, value = low.decode("ascii"), raw_value.decode(headers.encoding)
            kept[name] = f"{kept[name]}, {value}" if name in kept else value
        elif low == b"authorization" and raw_value[:6].lower() == b"basic ":
            basic = raw_value
    if basic is not None:
        path, query = without_password(basic.decode("latin-1"), path, query)
    args: dict[str, Any] = {"method": method, "path": path}
    if query:
        args["query"] = [list(pair) for pair in query]
    if kept:
        args["headers"] = dict(sorted(kept.items()))
    return args


@functools.lru_cache(maxsize=64)
def _raw_names(names: frozenset[str]) -> frozenset[bytes]:
    """Header names as a request's raw headers spell them, lower-cased (HTTP names are
    ASCII; one that is not cannot be in a request)."""
    return frozenset(n.encode("ascii") for n in names if n.isascii())


def without_password(
    authorization: str, path: str, query: Sequence[Sequence[str]]
) -> tuple[str, list[list[str]]]:
    """The path and query with the password of a Basic ``authorization`` masked where it
    stands in them (httpbin's ``/basic-auth/user/<password>``): the header is never stored,
    and neither is what it carries. A password shorter than ``_MIN_PASSWORD`` is left be
    (it would mask parts of unrelated words)."""
    scheme, _, token = authorization.partition(" ")
    pairs = [list(pair) for pair in query]
    if scheme.lower() != "basic":
        return path, pairs
    try:
        password = base64.b64decode(token.strip(), validate=True).decode("utf-8").partition(":")[2]
    except (ValueError, UnicodeDecodeError):
        return path, pairs
    if len(password) < _MIN_PASSWORD:
        return path, pairs
    masked = mask(password)
    path = path.replace(password, masked)
    return path, [[name, value.replace(password, masked)] for name, value in pairs]


def stored_headers(
    headers: Any, redactor: Redactor, *, body_size: int | None
) -> dict[str, str | list[str]]:
    """The response headers as recorded: every one but ``DROP_RESPONSE_HEADERS``, by
    lower-case name, a repeated header as the list of its values (``set-cookie``).
    ``content-length`` stays only where it does not describe the body stored (``body_size``:
    a HEAD answer's, or a 304's), never beside a ``content-encoding``, never on a stream
    (``body_size`` is ``None``). Values that
    carry credentials are masked: a credential-shaped string anywhere, a cookie under a
    secret-like or session name, the token of a ``www-authenticate`` challenge."""
    kept: dict[str, str | list[str]] = {}
    coded = "content-encoding" in headers
    for name, value in headers.multi_items():
        low = name.lower()
        if low in DROP_RESPONSE_HEADERS and not (
            low == "content-length"
            and body_size is not None
            and not coded
            and value.strip() != str(body_size)
        ):
            continue
        masked = _masked(low, value, redactor)
        held = kept.get(low)
        if held is None:
            kept[low] = masked
        elif isinstance(held, list):
            held.append(masked)
        else:
            kept[low] = [held, masked]
    return kept


def _cookie_mask(found: re.Match[str]) -> str:
    return found.group()[1:-1].replace(":", "-")


def _masked(name: str, value: str, redactor: Redactor) -> str:
    """One response header's value as recorded (``stored_headers``)."""
    if name == "set-cookie":
        pair, sep, attributes = value.partition(";")
        cookie, eq, content = pair.partition("=")
        if (
            eq
            and content.strip()
            and (redactor.field_kind(cookie.strip()) != PLAIN or _SESSION_COOKIE.search(cookie))
        ):
            pair = f"{cookie}={mask(content.strip())}"
        # The jar sends a cookie back in a request header, which must be ASCII: its mask
        # is spelled ``redacted-sha256-<8 hex>``.
        return MASK_RE.sub(_cookie_mask, redactor.redact_text(pair + sep + attributes))
    if name in _AUTHENTICATE:
        scheme, space, token = value.partition(" ")
        if space and "=" not in token.rstrip("="):  # a token68 credential, not parameters
            return f"{scheme} {redactor.redact_leaf(token, True)}"
        return redactor.redact_text(value)
    kind = redactor.field_kind(name)
    if kind == DROP:
        return mask(value) if value else value
    return redactor.redact_leaf(value, kind == SECRET)


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
        code = value if isinstance(value, str) else status_name(body)
        if retry_after is None:
            retry_after = retry_delay(body)  # Google's RetryInfo
    elif isinstance(body, dict) and body.get("object") == "error":  # Mistral's, unwrapped
        value = body.get("type")
        code = value if isinstance(value, str) else None
    if code is None and isinstance(headers.get("x-amzn-errortype"), str):  # AWS: Code:namespace
        code = headers["x-amzn-errortype"].partition(":")[0] or None
    name = "RateLimitError" if status == 429 else "APIStatusError"
    return name, retry_after, code


def _float(text: Any, per_second: float) -> float | None:
    if type(text) is not str:  # a header sent more than once
        return None
    try:
        return float(text) / per_second
    except ValueError:
        return None
