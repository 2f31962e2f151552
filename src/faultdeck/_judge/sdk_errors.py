"""The SDKs' own exceptions, read as the policy's failure classes: one table.

A loop built on the openai or anthropic SDK, or on httpx, meets their exceptions, not
faultdeck's: ``openai.RateLimitError`` for a 429, ``anthropic.OverloadedError`` for a 529,
``httpx.ReadTimeout``. ``classify_error`` reads one through ``SDK_ERRORS`` and gives the
failure the policy knows (``QuotaExhausted``, ``TransientError``, ``BadToolCall``) with its
status, its Retry-After (``retry-after-ms``, else ``retry-after``, in seconds) and its
provider code (``insufficient_quota`` is then the non-retryable quota stop); google-genai's
errors carry the wait as the ``RetryInfo`` of their body, which is read too.

    SDK_ERRORS (first match wins; subclasses come before their bases)
    openai / anthropic   APITimeoutError        TransientError  timeout
                         APIConnectionError     TransientError  connection
                         RateLimitError         QuotaExhausted  rate_limit_exceeded
    anthropic            PaymentRequiredError   QuotaExhausted  billing_error
                         OverloadedError        TransientError  overloaded       (529)
    openai / anthropic   InternalServerError    TransientError  server_error     (5xx)
    httpx / httpx2       TimeoutException       TransientError  timeout
                         NetworkError           TransientError  connection
                         RemoteProtocolError    TransientError  protocol
    google.genai         ClientError 429        QuotaExhausted  RESOURCE_EXHAUSTED (RetryInfo)
                         ServerError            TransientError  server_error     (5xx)
    mcp                  MCPError -32001        TransientError  timeout          (REQUEST_TIMEOUT)
                         MCPError -32000        TransientError  disconnected     (CONNECTION_CLOSED)
    ollama               ResponseError 429      QuotaExhausted  rate_limited
                         ResponseError 5xx      TransientError  server_error     (503: busy)
                         ResponseError -1       TransientError  stream_error     (an error line)
                         ConnectionError        TransientError  connection       (its own text)
    cohere               TooManyRequestsError   QuotaExhausted  rate_limited     (429)
                         InternalServerError    TransientError  server_error     (500)
                         ServiceUnavailableError TransientError unavailable      (503)
                         GatewayTimeoutError    TransientError  timeout          (504)
    mistralai            MistralError 429       QuotaExhausted  rate_limited     (SDKError)
                         MistralError 5xx       TransientError  server_error
                         ResponseValidationError TransientError server_error     (an error
                           object where a stream's chunk was due)
    botocore             ClientError Throttling…        QuotaExhausted  (its Error.Code)
                         ClientError ServiceUnavailable…, InternalServer…, ModelStreamError…,
                           ModelNotReady…, ModelTimeout…, ModelError…  TransientError
                         ReadTimeoutError, ConnectTimeoutError          TransientError  timeout
                         EndpointConnectionError, ConnectionClosedError TransientError  connection
                         ResponseStreamingError                         TransientError  protocol

botocore's ``ClientError`` (``EventStreamError`` for an error inside a stream) is one class
for every AWS error: its rows match by ``response["Error"]["Code"]``, in any case (a stream
names it ``throttlingException``, a response ``ThrottlingException``).

The libraries are never imported here: a class is looked up in ``sys.modules``, so a
program that does not use a library pays nothing and faultdeck needs none of them. An
exception of none of these classes is not classified: the loop lets it out, as a bug.
"""

from __future__ import annotations

import builtins
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .._base.errors import BadToolCall, QuotaExhausted, TransientError
from ..faults._gemini import retry_delay

Failure = QuotaExhausted | TransientError | BadToolCall
"""A failure the policy has a row for."""


@dataclass(frozen=True, slots=True)
class SdkError:
    """One exception class of a library, and the failure the policy sees in it.

    Attributes:
        module: the library's module, as ``sys.modules`` names it (``openai``).
        name: the class's name in that module (``RateLimitError``), or of a builtin class
            the library raises (ollama's ``ConnectionError``).
        failure: the policy's failure class it stands for.
        code: the code it gets when the exception carries none of its own.
        number: for a class that carries a numeric code (MCP's JSON-RPC error codes), the
            one it must carry.
        when: a further test an exception of the class must pass (one class for every
            status, as ``ollama.ResponseError``; a builtin class only with its library's text).
    """

    module: str
    name: str
    failure: type[Failure]
    code: str
    number: int | None = None
    when: Callable[[BaseException], bool] | None = None

    def matches(self, exc: BaseException) -> bool:
        """Whether ``exc`` is of this class (``False`` while the library is not loaded)."""
        library = sys.modules.get(self.module)
        if library is None:
            return False
        found = getattr(library, self.name, None) or getattr(builtins, self.name, None)
        if not (isinstance(found, type) and isinstance(exc, found)):
            return False
        if self.number is not None and getattr(exc, "code", None) != self.number:
            return False
        return self.when is None or self.when(exc)


def _status_in(low: int, high: int) -> Callable[[BaseException], bool]:
    """Whether an exception's ``status_code`` is in ``low..high``."""
    return lambda exc: low <= getattr(exc, "status_code", 0) <= high


def _ollama_unreachable(exc: BaseException) -> bool:
    """Whether a builtin ``ConnectionError`` is the one ollama raises when it cannot connect
    (any other is a program's own, not classified)."""
    return str(exc).startswith("Failed to connect to Ollama")


def _streamed_error(exc: BaseException) -> bool:
    """Whether mistralai's ``ResponseValidationError`` met Mistral's error object in a
    stream, where a chunk was due (the SDK reads no error event: it fails to parse it)."""
    try:
        event = json.loads(getattr(exc, "body", None) or "")
    except ValueError:
        return False
    data = event.get("data") if isinstance(event, dict) else None
    return isinstance(data, dict) and data.get("object") == "error"


def _aws_is(code: str) -> Callable[[BaseException], bool]:
    """Whether botocore's ``ClientError`` carries ``Error.Code`` ``code``, in any case."""
    return lambda exc: (_aws_code(exc) or "").lower() == code.lower()


SDK_ERRORS: tuple[SdkError, ...] = (
    SdkError("openai", "APITimeoutError", TransientError, "timeout"),
    SdkError("anthropic", "APITimeoutError", TransientError, "timeout"),
    SdkError("openai", "APIConnectionError", TransientError, "connection"),
    SdkError("anthropic", "APIConnectionError", TransientError, "connection"),
    SdkError("openai", "RateLimitError", QuotaExhausted, "rate_limit_exceeded"),
    SdkError("anthropic", "RateLimitError", QuotaExhausted, "rate_limit_error"),
    SdkError("anthropic", "PaymentRequiredError", QuotaExhausted, "billing_error"),
    SdkError("anthropic", "OverloadedError", TransientError, "overloaded"),
    SdkError("openai", "InternalServerError", TransientError, "server_error"),
    SdkError("anthropic", "InternalServerError", TransientError, "server_error"),
    SdkError("httpx", "TimeoutException", TransientError, "timeout"),
    SdkError("httpx2", "TimeoutException", TransientError, "timeout"),
    SdkError("httpx", "NetworkError", TransientError, "connection"),
    SdkError("httpx2", "NetworkError", TransientError, "connection"),
    SdkError("httpx", "RemoteProtocolError", TransientError, "protocol"),
    SdkError("httpx2", "RemoteProtocolError", TransientError, "protocol"),
    SdkError("google.genai.errors", "ClientError", QuotaExhausted, "RESOURCE_EXHAUSTED", 429),
    SdkError("google.genai.errors", "ServerError", TransientError, "server_error"),
    SdkError("mcp.shared.exceptions", "MCPError", TransientError, "timeout", -32001),
    SdkError("mcp.shared.exceptions", "MCPError", TransientError, "disconnected", -32000),
    SdkError("ollama", "ResponseError", QuotaExhausted, "rate_limited", when=_status_in(429, 429)),
    SdkError("ollama", "ResponseError", TransientError, "server_error", when=_status_in(500, 599)),
    SdkError("ollama", "ResponseError", TransientError, "stream_error", when=_status_in(-1, -1)),
    SdkError("ollama", "ConnectionError", TransientError, "connection", when=_ollama_unreachable),
    SdkError("cohere", "TooManyRequestsError", QuotaExhausted, "rate_limited"),
    SdkError("cohere", "InternalServerError", TransientError, "server_error"),
    SdkError("cohere", "ServiceUnavailableError", TransientError, "unavailable"),
    SdkError("cohere", "GatewayTimeoutError", TransientError, "timeout"),
    SdkError(
        "mistralai.client.errors",
        "ResponseValidationError",
        TransientError,
        "server_error",
        when=_streamed_error,
    ),
    SdkError(
        "mistralai.client.errors",
        "MistralError",
        QuotaExhausted,
        "rate_limited",
        when=_status_in(429, 429),
    ),
    SdkError(
        "mistralai.client.errors",
        "MistralError",
        TransientError,
        "server_error",
        when=_status_in(500, 599),
    ),
    *(
        SdkError("botocore.exceptions", "ClientError", failure, code, when=_aws_is(code))
        for failure, code in (
            (QuotaExhausted, "ThrottlingException"),
            (QuotaExhausted, "ServiceQuotaExceededException"),
            (TransientError, "ServiceUnavailableException"),
            (TransientError, "InternalServerException"),
            (TransientError, "ModelStreamErrorException"),
            (TransientError, "ModelNotReadyException"),
            (TransientError, "ModelTimeoutException"),
            (TransientError, "ModelErrorException"),
        )
    ),
    SdkError("botocore.exceptions", "ReadTimeoutError", TransientError, "timeout"),
    SdkError("botocore.exceptions", "ConnectTimeoutError", TransientError, "timeout"),
    SdkError("botocore.exceptions", "EndpointConnectionError", TransientError, "connection"),
    SdkError("botocore.exceptions", "ConnectionClosedError", TransientError, "connection"),
    SdkError("botocore.exceptions", "ResponseStreamingError", TransientError, "protocol"),
)
"""Every library exception the policy knows, in the order they are tried."""


def classify_error(exc: BaseException) -> Failure | None:
    """``exc`` as the policy's failure, or ``None`` when it is none the policy knows.

    A faultdeck ``QuotaExhausted``, ``TransientError`` or ``BadToolCall`` is returned as
    it is; an SDK's or httpx's exception of ``SDK_ERRORS`` becomes one, carrying its status,
    Retry-After and code, with ``exc`` as its cause.

    Args:
        exc: what a step raised.
    """
    if isinstance(exc, (QuotaExhausted, TransientError, BadToolCall)):
        return exc
    rule = next((rule for rule in SDK_ERRORS if rule.matches(exc)), None)
    if rule is None:
        return None
    failure = rule.failure(
        f"{type(exc).__module__.split('.')[0]}.{type(exc).__name__}: {exc}",
        status=_status(exc),
        retry_after=_retry_after(exc),
        code=_code(exc) or rule.code,
    )
    failure.__cause__ = exc
    return failure


def _status(exc: BaseException) -> int | None:
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        return status
    if _aws_code(exc) is not None:  # botocore: in the response's metadata
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")  # type: ignore[attr-defined]
        return status if isinstance(status, int) else None
    code = getattr(exc, "code", None)  # google-genai's APIError holds the status as its code
    return code if isinstance(code, int) and 100 <= code < 600 else None


def _aws_code(exc: BaseException) -> str | None:
    """botocore's ``ClientError`` code (``response["Error"]["Code"]``), if ``exc`` has one."""
    response = getattr(exc, "response", None)
    error = response.get("Error") if isinstance(response, dict) else None
    code = error.get("Code") if isinstance(error, dict) else None
    return code if isinstance(code, str) and code else None


def _retry_after(exc: BaseException) -> float | None:
    """The wait the response asked for, in seconds; an HTTP date is read as none (a
    rehearsal's clock is not the wall clock the date is on)."""
    response = getattr(exc, "response", None) or getattr(exc, "raw_response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        headers = getattr(exc, "headers", None)  # cohere's errors hold the headers
    if headers is None or not hasattr(headers, "get"):
        return retry_delay(getattr(exc, "details", None))  # google-genai: the RetryInfo
    for name, per_second in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) / per_second
        except ValueError:
            continue
        if seconds >= 0:
            return seconds
    return retry_delay(getattr(exc, "details", None))  # google-genai: the body's RetryInfo


def _code(exc: BaseException) -> str | None:
    """The provider's code: anthropic's ``error.details.error_code``, openai's
    ``error.code``, botocore's ``Error.Code``, google-genai's ``status``
    (``RESOURCE_EXHAUSTED``), else the body's ``error.code`` or ``error.type`` (a flat error
    object, as Mistral's body text holds it: its ``type``)."""
    aws = _aws_code(exc)
    if aws is not None:
        return aws
    for attribute in ("error_code", "code", "status"):
        value = getattr(exc, attribute, None)
        if isinstance(value, str) and value:
            return value
    body: Any = getattr(exc, "body", None)
    if isinstance(body, str) and body.startswith("{"):
        try:
            body = json.loads(body)
        except ValueError:
            return None
    inner = body.get("error", body) if isinstance(body, dict) else None
    if isinstance(inner, dict):
        flat = inner is body and body.get("object") == "error"
        for field in ("type", "code") if flat else ("code", "type"):
            value = inner.get(field)
            if isinstance(value, str) and value:
                return value
    return None
