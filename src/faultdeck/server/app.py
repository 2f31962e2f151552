"""The ``faultdeck serve`` application: ``make_app(config)``.

Routes:

* ``ANY /c/{name}/v1/…`` — the replay proxy (``_proxy``): an OpenAI client's base URL is
  ``http://HOST:PORT/c/NAME/v1``, an Anthropic client's ``http://HOST:PORT/c/NAME``;
* ``GET /api/health`` — ``{"ok": true, "mode": …, "repeats": …, "cassettes": …, "open":
  [names]}``;
* ``/api/…`` — the JSON API (``_api``): the cassettes, one cassette, a diff, a rewind;
* whatever ``extra_routes`` brings.

Every error is one line of JSON, ``{"error": {"type": …, "message": …}}``. With a token,
every route asks for it first (``_guard``). Shutting down (the lifespan's end, which
uvicorn runs on SIGINT and SIGTERM) closes every open cassette with its end line.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from ._api import api_routes
from ._config import ServerConfig
from ._guard import TokenGuard
from ._pages import page_routes
from ._proxy import Decks, proxy
from ._responses import error

METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]


def make_app(config: ServerConfig, *, extra_routes: Sequence[BaseRoute] = ()) -> Starlette:
    """The server's application.

    Args:
        config: the server's settings.
        extra_routes: more routes, mounted after the proxy, the JSON API and the pages.
    """
    decks = Decks(config)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await decks.close()

    routes: list[BaseRoute] = [
        Route("/", home, methods=["GET"]),
        Route("/api/health", health, methods=["GET"]),
        Route("/c/{name:path}", proxy, methods=METHODS),
        *api_routes(config),
        *page_routes(config),
        *extra_routes,
    ]
    middleware = [Middleware(TokenGuard, token=config.token)] if config.token else []
    app = Starlette(
        routes=routes,
        middleware=middleware,
        lifespan=lifespan,
        exception_handlers={HTTPException: _http_error},
    )
    app.state.decks = decks
    app.state.config = config
    return app


async def home(request: Request) -> Response:
    """``GET /``: the pages."""
    return RedirectResponse("/ui/", status_code=307)


async def health(request: Request) -> Response:
    """``GET /api/health``: the server is up, in which mode, over which folder."""
    decks: Decks = request.app.state.decks
    config = decks.config
    return JSONResponse(
        {
            "ok": True,
            "mode": config.mode,
            "repeats": config.repeats,
            "cassettes": str(config.cassettes),
            "upstream": config.upstream,
            "open": decks.names,
        }
    )


async def _http_error(request: Request, exc: Exception) -> Response:
    status = exc.status_code if isinstance(exc, HTTPException) else 500
    if status == 404:
        return error(404, "faultdeck_not_found", f"no route {request.url.path}; see /api/health")
    if status == 405:
        return error(405, "faultdeck_method_not_allowed", f"{request.method} {request.url.path}")
    return error(status, "faultdeck_http_error", str(getattr(exc, "detail", exc)))
