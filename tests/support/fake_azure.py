"""A local fake Azure OpenAI: the fake upstream's Chat Completions and Embeddings behind
Azure's deployment routes.

Azure answers at ``/openai/deployments/{deployment}/chat/completions?api-version=…`` and
refuses a request without ``api-version`` (404, as Azure does) or without a key
(``api-key`` header, or an Entra ID ``authorization: Bearer`` token: 401). Its answers carry
the content filter's verdicts (``prompt_filter_results``, each choice's
``content_filter_results``) that the real service adds. What reached it is kept on
``app.state.requests``, as the fake upstream keeps it.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tests.support.fake_upstream import chat_completions

SAFE = {
    category: {"filtered": False, "severity": "safe"}
    for category in ("hate", "self_harm", "sexual", "violence")
}


def _refused(request: Request) -> Response | None:
    if "api-version" not in request.query_params:
        error = {"code": "404", "message": "Resource not found"}
        return JSONResponse({"error": error}, status_code=404)
    auth = request.headers.get("authorization", "")
    if not request.headers.get("api-key") and not auth.startswith("Bearer "):
        error = {"code": "401", "message": "Access denied due to invalid subscription key."}
        return JSONResponse({"error": error}, status_code=401)
    return None


async def deployment_chat(request: Request) -> Response:
    """Chat Completions at a deployment, with Azure's filter verdicts on a whole answer."""
    refused = _refused(request)
    if refused is not None:
        return refused
    answer = await chat_completions(request)
    if not isinstance(answer, JSONResponse):
        return answer  # a stream, as the upstream sends it
    body: Any = json.loads(bytes(answer.body))
    body["prompt_filter_results"] = [{"prompt_index": 0, "content_filter_results": SAFE}]
    for choice in body["choices"]:
        choice["content_filter_results"] = SAFE
    headers = {k: v for k, v in answer.headers.items() if k.lower() == "x-request-id"}
    return JSONResponse(body, headers={**headers, "apim-request-id": "fake-apim"})


def create_app() -> Starlette:
    """The fake Azure OpenAI app."""
    app = Starlette(
        routes=[
            Route(
                "/openai/deployments/{deployment}/chat/completions",
                deployment_chat,
                methods=["POST"],
            ),
        ]
    )
    app.state.requests = []
    app.state.stream_delay = None
    return app
