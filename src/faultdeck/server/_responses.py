"""The server's errors: one shape for every route, the providers' own, so that an SDK
pointed at the server raises them as it raises the provider's."""

from __future__ import annotations

from collections.abc import Mapping

from starlette.responses import JSONResponse, Response

KIND_OF_STATUS = {
    400: "faultdeck_bad_request",
    401: "faultdeck_unauthorized",
    404: "faultdeck_not_found",
    409: "faultdeck_conflict",
    413: "faultdeck_too_large",
    422: "faultdeck_cassette_error",
}
"""The error ``type`` of each status the server answers with on its own account."""


def error(
    status: int, kind: str, message: str, headers: Mapping[str, str] | None = None
) -> Response:
    """A one-line JSON error: ``{"error": {"type": kind, "message": message}}``."""
    body = {"error": {"type": kind, "message": message}}
    return JSONResponse(body, status_code=status, headers=dict(headers or {}))


def refusal(status: int, message: str) -> Response:
    """An error whose ``type`` follows from its status."""
    return error(status, KIND_OF_STATUS.get(status, "faultdeck_error"), message)
