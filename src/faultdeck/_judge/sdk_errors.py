"""The SDKs' own exceptions, read as the policy's failure classes: one table.

A loop built on the openai or anthropic SDK, or on httpx, meets their exceptions, not
faultdeck's: ``openai.RateLimitError`` for a 429, ``anthropic.OverloadedError`` for a 529,
``httpx.ReadTimeout``. ``classify_error`` reads one through ``SDK_ERRORS`` and gives the
failure the policy knows (``QuotaExhausted``, ``TransientError``, ``BadToolCall``) with its
status, its Retry-After (``retry-after-ms``, else ``retry-after``, in seconds) and its
provider code (``insufficient_quota`` is then the non-retryable quota stop).

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
    mcp                  MCPError -32001        TransientError  timeout          (REQUEST_TIMEOUT)
                         MCPError -32000        TransientError  disconnected     (CONNECTION_CLOSED)

The libraries are never imported here: a class is looked up in ``sys.modules``, so a
program that does not use a library pays nothing and faultdeck needs none of them. An
exception of none of these classes is not classified: the loop lets it out, as a bug.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

from .._base.errors import BadToolCall, QuotaExhausted, TransientError

Failure = QuotaExhausted | TransientError | BadToolCall
"""A failure the policy has a row for."""


@dataclass(frozen=True, slots=True)
class SdkError:
    """One exception class of a library, and the failure the policy sees in it.

    Attributes:
        module: the library's module, as ``sys.modules`` names it (``openai``).
        name: the class's name in that module (``RateLimitError``).
        failure: the policy's failure class it stands for.
        code: the code it gets when the exception carries none of its own.
        number: for a class that carries a numeric code (MCP's JSON-RPC error codes), the
            one it must carry.
    """

    module: str
    name: str
    failure: type[Failure]
    code: str
    number: int | None = None

    def matches(self, exc: BaseException) -> bool:
        """Whether ``exc`` is of this class (``False`` while the library is not loaded)."""
        found = getattr(sys.modules.get(self.module), self.name, None)
        if not (isinstance(found, type) and isinstance(exc, found)):
            return False
        return self.number is None or getattr(exc, "code", None) == self.number


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
    SdkError("mcp.shared.exceptions", "MCPError", TransientError, "timeout", -32001),
    SdkError("mcp.shared.exceptions", "MCPError", TransientError, "disconnected", -32000),
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
    return status if isinstance(status, int) else None


def _retry_after(exc: BaseException) -> float | None:
    """The wait the response asked for, in seconds; an HTTP date is read as none (a
    rehearsal's clock is not the wall clock the date is on)."""
    headers = getattr(getattr(exc, "response", None), "headers", None)
    if headers is None:
        return None
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
    return None


def _code(exc: BaseException) -> str | None:
    """The provider's code: anthropic's ``error.details.error_code``, openai's
    ``error.code``, else the body's ``error.code`` or ``error.type``."""
    for attribute in ("error_code", "code"):
        value = getattr(exc, attribute, None)
        if isinstance(value, str) and value:
            return value
    body: Any = getattr(exc, "body", None)
    inner = body.get("error", body) if isinstance(body, dict) else None
    if isinstance(inner, dict):
        for field in ("code", "type"):
            value = inner.get(field)
            if isinstance(value, str) and value:
                return value
    return None
