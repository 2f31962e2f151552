"""The JSON API: the cassettes in the folder, one cassette, the diff of two, and a rewind.

Every name goes through ``cassette_path``; a refused name answers its status with
``{"error": {"type", "message"}}``, an unknown cassette 404, a corrupt one 422 with the cassette
error's one line, a cassette that is being recorded 409 to a rewind.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from .._base.errors import CassetteError, CassetteNotFound
from .._cassette.format import Recording
from .._cassette.reader import load
from .._cassette.summary import show_json
from .._diff.align import CallPathDiff, diff_recordings
from .._diff.render import diff_json
from ._config import REPLAYS, ServerConfig
from ._names import NameRefused, cassette_path
from ._proxy import Decks
from ._responses import refusal
from ._views import summaries


class Refused(Exception):
    """A request the API answers with an error: ``status`` and one line."""

    def __init__(self, status: int, reason: str) -> None:
        self.status = status
        self.reason = reason
        super().__init__(reason)


def json_response(data: Any, status: int = 200) -> Response:
    """``data`` as a JSON response."""
    body = orjson.dumps(data, option=orjson.OPT_NON_STR_KEYS)
    return Response(body, status_code=status, media_type="application/json")


def open_cassette(config: ServerConfig, name: str) -> Recording:
    """The cassette ``name`` in the configured folder.

    Raises:
        Refused: the name is refused (its status), there is no such cassette (404), or it
            cannot be read (422, with the cassette error's text).
    """
    try:
        path = cassette_path(config.cassettes, name)
    except NameRefused as exc:
        raise Refused(exc.status, exc.reason) from None
    try:
        return load(path)
    except CassetteNotFound:
        raise Refused(404, f"no cassette named {name!r} in the cassettes folder") from None
    except CassetteError as exc:
        raise Refused(422, " ".join(str(exc).split())) from None


def diff_of(config: ServerConfig, request: Request) -> CallPathDiff:
    """The diff a request asks for: ``a`` and ``b`` (cassette names), or two ``pick``
    (the list page's ticked boxes, A the first), ``responses=1`` to compare outputs too,
    ``ignore=FIELD`` (repeatable) for fields never compared.

    Raises:
        Refused: a missing name (400), or one ``open_cassette`` refuses.
    """
    picks = request.query_params.getlist("pick")
    if picks and len(picks) != 2:
        raise Refused(400, f"tick two cassettes to diff, not {len(picks)}")
    names = {side: request.query_params.get(side, "") for side in ("a", "b")}
    if picks:
        names = {"a": picks[0], "b": picks[1]}
    missing = [side for side, name in names.items() if not name]
    if missing:
        raise Refused(400, f"pick both cassettes: a=NAME and b=NAME (missing {', '.join(missing)})")
    a, b = (open_cassette(config, names[side]) for side in ("a", "b"))
    responses = request.query_params.get("responses", "") in ("1", "true", "yes", "on")
    ignore = request.query_params.getlist("ignore")
    diff = diff_recordings(a, b, responses=responses, ignore=ignore)
    # The names, not the server's paths, say which is which.
    return replace(diff, a=names["a"], b=names["b"])


def rewound(config: ServerConfig, decks: Decks, name: str) -> bool:
    """Start the replay of cassette ``name`` over (``Deck.rewind``): every key's answers
    from the first again, its counts afresh. Whether its deck was open: one that is not
    starts at its first answers anyway.

    Raises:
        Refused: the name is refused (its status), there is no such cassette (404), or it
            is recorded into, not replayed (409).
    """
    try:
        path = cassette_path(config.cassettes, name)
    except NameRefused as exc:
        raise Refused(exc.status, exc.reason) from None
    deck = decks.opened(path)
    if deck is None and not path.is_file():
        raise Refused(404, f"no cassette named {name!r} in the cassettes folder")
    mode = config.mode if deck is None else deck.active_mode  # once is decided when open
    if mode not in REPLAYS:
        raise Refused(
            409,
            f"cassette {name!r} is recorded into (mode {mode}), not replayed: only a "
            "replayed cassette starts over; serve it with --mode replay to rewind it",
        )
    if deck is None:
        return False
    deck.rewind()
    return True


def api_routes(config: ServerConfig) -> list[BaseRoute]:
    """The routes of the JSON API under ``/api``.

    The handlers are plain functions: Starlette runs them in its thread pool, so reading
    a large cassette never holds up the proxy's requests.

    ``GET /api/cassettes``: every cassette in the folder (``name``, ``calls``, ``status``,
    ``git_sha``, ``size``). ``GET /api/cassettes/{name}``: one cassette, as ``faultdeck
    show --format json``. ``GET /api/diff?a=NAME&b=NAME``: their diff, as ``faultdeck diff
    --format json`` (200 whether or not they differ). ``POST /api/cassettes/{name}/rewind``:
    the cassette's replay starts over (``rewound``), ``{"ok": true, "cassette", "open"}``.

    Args:
        config: the server's settings; ``cassettes`` is read here, and ``mode`` by a
            rewind.
    """

    def cassettes(request: Request) -> Response:
        return json_response({"cassettes": summaries(config.cassettes)})

    def cassette(request: Request) -> Response:
        name = request.path_params["name"]
        try:
            return json_response(show_json(open_cassette(config, name), name))
        except Refused as exc:
            return refusal(exc.status, exc.reason)

    def diff(request: Request) -> Response:
        try:
            return json_response(diff_json(diff_of(config, request)))
        except Refused as exc:
            return refusal(exc.status, exc.reason)

    async def rewind(request: Request) -> Response:
        # On the event loop, as the proxy: no request opens the deck between the look and
        # the rewind.
        name = request.path_params["name"]
        try:
            was_open = rewound(config, request.app.state.decks, name)
        except Refused as exc:
            return refusal(exc.status, exc.reason)
        return json_response({"ok": True, "cassette": name, "open": was_open})

    return [
        Route("/api/cassettes", cassettes, methods=["GET"]),
        Route("/api/cassettes/{name:path}/rewind", rewind, methods=["POST"]),
        Route("/api/cassettes/{name:path}", cassette, methods=["GET"]),
        Route("/api/diff", diff, methods=["GET"]),
    ]
