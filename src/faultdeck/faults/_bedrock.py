"""What a fault looks like from the Bedrock runtime (``bedrock.converse``,
``bedrock.converse_stream``, ``bedrock.invoke_model``…), as AWS sends it: pure data.

An error response names its error in the ``x-amzn-errortype`` header (``Code:namespace``)
and carries ``{"message": …}``: botocore raises ``ClientError`` with that code. A throttle
comes with no retry hint (AWS sends none; botocore backs off by itself). A stream that
fails after it started ends in an exception message of the event stream (``:message-type``
``exception``, ``:exception-type`` the union member, lower camel case), which botocore
raises as ``EventStreamError``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_NAMESPACE = "http://internal.amazon.com/coral/com.amazon.bedrock/"
_TRANSIENT = {
    500: ("InternalServerException", "The server encountered an internal error."),
    503: ("ServiceUnavailableException", "Bedrock is unable to process your request."),
    424: ("ModelErrorException", "The model encountered an error processing the request."),
    429: ("ModelNotReadyException", "Model is not ready to serve inference requests."),
    408: ("ModelTimeoutException", "Model has timed out in processing the request."),
}
STREAM_ERRORS = {
    "modelStreamErrorException": "The model stream encountered an error.",
    "throttlingException": "Too many requests, please wait before trying again.",
    "serviceUnavailableException": "Bedrock is unable to process your request.",
    "internalServerException": "The server encountered an internal error.",
}
"""The exception messages a Bedrock stream may end in, by ``:exception-type``."""


def _error(status: int, code: str, message: str) -> tuple[int, dict[str, str], Any]:
    headers = {
        "content-type": "application/json",
        "x-amzn-errortype": f"{code}:{_NAMESPACE}",
    }
    return status, headers, {"message": message}


def quota_response(params: Mapping[str, Any], name: str) -> tuple[int, dict[str, str], Any]:
    """Bedrock's 429 ``ThrottlingException`` (``params`` may name another ``code``, as
    ``ServiceQuotaExceededException``, which is a 400)."""
    code = params.get("code")
    if code in ("ServiceQuotaExceededException", "insufficient_quota"):  # no wait refills it
        message = "Your request exceeds the service quota for your account."
        return _error(400, "ServiceQuotaExceededException", message)
    return _error(429, "ThrottlingException", "Too many requests, please wait before trying again.")


def transient_response(params: Mapping[str, Any], name: str) -> tuple[int, dict[str, str], Any]:
    """Bedrock's 5xx for ``status`` (503 ``ServiceUnavailableException`` by default, 500
    ``InternalServerException``; 424, 429 and 408 give the model's own errors)."""
    status = int(params.get("status", 503))
    code, message = _TRANSIENT.get(status, _TRANSIENT[503])
    return _error(status, code, message)


def error_event(name: str, kind: str = "modelStreamErrorException") -> dict[str, Any]:
    """The exception message a Bedrock stream ends in (``kind``), as an event of the stream
    stored (``faultdeck.http``'s event-stream framing encodes it)."""
    data: dict[str, Any] = {"message": STREAM_ERRORS[kind]}
    if kind == "modelStreamErrorException":
        data |= {"originalStatusCode": 500, "originalMessage": "Internal server error"}
    return {
        "event": kind,
        "headers": {":content-type": "application/json", ":message-type": "exception"},
        "data": data,
    }
