"""A local fake of Google's Gemini API (v1 and v1beta, and Vertex AI's publisher paths) for
faultdeck's tests.

A Starlette app that answers ``POST …/models/{model}:generateContent`` with one JSON
``GenerateContentResponse`` and ``…:streamGenerateContent?alt=sse`` with the same answer as
server-sent events (``data: {…}`` lines, CRLF-separated as Google sends them), enough for the
real ``google-genai`` SDK to parse. The script, as ``fake_upstream``'s:

* the last turn carries a ``functionResponse`` whose ``response`` holds ``R`` (its
  ``result`` or ``output``) -> text ``"It is R in Paris."``;
* otherwise, function declarations offered -> a ``functionCall`` of ``get_weather`` (or
  the first declared) with ``{"city": "Paris"}``;
* otherwise -> text ``"Hello from the fake Gemini."``.

``responseId`` is fresh on every answer (a stream's events share one). What reached the app
is kept on it (``app.state.requests``): method, path, query and headers, so a test can see which key
header the SDK sent. Run it with ``fake_upstream.Upstream(app=create_app())``.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

__all__ = ["DEFAULT_TEXT", "TOOL_ARGUMENTS", "TOOL_NAME", "create_app", "tool_result_text"]

DEFAULT_TEXT = "Hello from the fake Gemini."
TOOL_NAME = "get_weather"
TOOL_ARGUMENTS: dict[str, Any] = {"city": "Paris"}
STREAM_DELAY = 0.005


def tool_result_text(result: str) -> str:
    """The scripted reply once the function returned ``result``."""
    return f"It is {result} in Paris."


def _last_parts(body: dict[str, Any]) -> list[dict[str, Any]]:
    contents = body.get("contents") or []
    last = contents[-1] if contents else {}
    parts = last.get("parts") if isinstance(last, dict) else None
    return [part for part in parts or [] if isinstance(part, dict)]


def _declared(body: dict[str, Any]) -> list[str]:
    names = []
    for tool in body.get("tools") or []:
        for declaration in tool.get("functionDeclarations") or []:
            names.append(declaration.get("name"))
    return [name for name in names if isinstance(name, str)]


def _parts(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The answer's parts, by the script."""
    for part in _last_parts(body):
        answered = part.get("functionResponse")
        if isinstance(answered, dict):
            response = answered.get("response") or {}
            result = response.get("result", response.get("output", json.dumps(response)))
            return [{"text": tool_result_text(str(result))}]
    declared = _declared(body)
    if declared:
        name = TOOL_NAME if TOOL_NAME in declared else declared[0]
        return [{"functionCall": {"name": name, "args": dict(TOOL_ARGUMENTS)}}]
    return [{"text": DEFAULT_TEXT}]


def _usage(body: dict[str, Any], parts: list[dict[str, Any]]) -> dict[str, int]:
    prompt = max(1, len(json.dumps(body.get("contents") or []).split()))
    answer = max(1, len(json.dumps(parts).split()))
    return {
        "promptTokenCount": prompt,
        "candidatesTokenCount": answer,
        "totalTokenCount": prompt + answer,
    }


def _response(
    model: str,
    parts: list[dict[str, Any]],
    *,
    finish: bool,
    usage: dict[str, int] | None,
    response_id: str,
) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish:
        candidate["finishReason"] = "STOP"
    answer: dict[str, Any] = {"candidates": [candidate]}
    if usage is not None:
        answer["usageMetadata"] = usage
    answer["modelVersion"] = model
    answer["responseId"] = response_id
    return answer


def _pieces(parts: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The parts as streamed: text word by word, a function call whole."""
    if len(parts) == 1 and "text" in parts[0]:
        words = parts[0]["text"].split(" ")
        return [
            [{"text": word + (" " if i < len(words) - 1 else "")}] for i, word in enumerate(words)
        ]
    return [parts]


async def _body(request: Request) -> dict[str, Any]:
    payload = await request.json()
    request.app.state.requests.append(
        {
            "method": request.method,
            "path": request.url.path,
            "query": request.url.query,
            "headers": dict(request.headers),
        }
    )
    return payload if isinstance(payload, dict) else {}


async def _model_call(request: Request) -> Response:
    target = request.path_params["target"]
    model, _, method = target.partition(":")
    body = await _body(request)
    parts = _parts(body)
    usage = _usage(body, parts)
    response_id = uuid.uuid4().hex[:22]  # one per answer, streamed or not
    if method == "generateContent":
        answer = _response(model, parts, finish=True, usage=usage, response_id=response_id)
        return JSONResponse(answer)
    if method == "streamGenerateContent" and request.query_params.get("alt") == "sse":
        pieces = _pieces(parts)

        async def events() -> AsyncIterator[bytes]:
            for i, piece in enumerate(pieces):
                last = i == len(pieces) - 1
                answer = _response(
                    model,
                    piece,
                    finish=last,
                    usage=usage if last else None,
                    response_id=response_id,
                )
                yield b"data: " + json.dumps(answer).encode() + b"\r\n\r\n"
                await asyncio.sleep(STREAM_DELAY)

        return StreamingResponse(events(), media_type="text/event-stream")
    error = {"code": 404, "message": f"Method {method!r} not found.", "status": "NOT_FOUND"}
    return JSONResponse({"error": error}, status_code=404)


def create_app() -> Starlette:
    """The fake, with ``app.state.requests`` empty."""
    app = Starlette(
        routes=[
            Route("/v1beta/models/{target:str}", _model_call, methods=["POST"]),
            Route("/v1/models/{target:str}", _model_call, methods=["POST"]),
            Route(
                "/v1/projects/{project}/locations/{location}/publishers/google/models/{target:str}",
                _model_call,
                methods=["POST"],
            ),
        ]
    )
    app.state.requests = []
    return app
