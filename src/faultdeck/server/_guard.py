"""The token every route asks for when the server has one.

An API client sends it as ``X-Faultdeck-Token``. A browser opens a page once with
``?token=…``; the answer sets it as a cookie (HttpOnly, SameSite=Strict) that later pages
send. The provider's ``Authorization`` header is the client's business with the upstream:
it is never taken for the server's token.
"""

from __future__ import annotations

import hmac
from http.cookies import CookieError, SimpleCookie
from urllib.parse import parse_qs

from starlette.datastructures import MutableHeaders
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

TOKEN_HEADER = "x-faultdeck-token"
COOKIE = "faultdeck_token"
PAGES = "/ui"


class TokenGuard:
    """ASGI middleware: a request without the right token gets a 401 and goes no further.

    Args:
        app: the application behind the guard.
        token: the token.
    """

    def __init__(self, app: ASGIApp, *, token: str) -> None:
        self.app = app
        self.token = token.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        sent = headers.get(TOKEN_HEADER.encode())
        page = scope["path"] == PAGES or scope["path"].startswith(PAGES + "/")
        from_query = False
        if sent is None and page:
            sent = _cookie(headers.get(b"cookie", b""))
            if sent is None:
                sent = _query_token(scope.get("query_string", b""))
                from_query = sent is not None
        if sent is None or not hmac.compare_digest(sent, self.token):
            why = "missing" if sent is None else "wrong"
            where = "?token= (pages) or X-Faultdeck-Token" if page else "X-Faultdeck-Token"
            response = JSONResponse(
                {
                    "error": {
                        "type": "faultdeck_unauthorized",
                        "message": f"token {why}: send {where}",
                    }
                },
                status_code=401,
            )
            await response(scope, receive, send)
            return
        if not from_query:
            await self.app(scope, receive, send)
            return

        async def with_cookie(message: Message) -> None:
            if message["type"] == "http.response.start":
                cookie = f"{COOKIE}={self.token.decode()}; Path=/; HttpOnly; SameSite=Strict"
                MutableHeaders(scope=message).append("set-cookie", cookie)
            await send(message)

        await self.app(scope, receive, with_cookie)


def _cookie(raw: bytes) -> bytes | None:
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(raw.decode("latin-1"))
    except CookieError:  # a malformed cookie header holds no token
        return None
    morsel = jar.get(COOKIE)
    return morsel.value.encode() if morsel is not None else None


def _query_token(raw: bytes) -> bytes | None:
    values = parse_qs(raw.decode("latin-1")).get("token")
    return values[0].encode("latin-1") if values else None
