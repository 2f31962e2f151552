"""The web view: the cassettes in the folder, one cassette's timeline, and the diff of two.

Rendered on the server from the Jinja2 templates beside this module, autoescaped; no
script, so every page works with JavaScript off (a call expands with ``<details>``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import BaseRoute, Route

from .._cassette.summary import show_json
from ._api import Refused, diff_of, open_cassette
from ._config import ServerConfig
from ._views import diff_rows, summaries, timeline

SORTS = ("name", "calls", "status", "size")
"""The columns the list of cassettes sorts by (``/ui/?sort=…``)."""

_TEMPLATES = Environment(
    loader=FileSystemLoader(Path(__file__).parent / "templates"),
    autoescape=True,
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)


def render(template: str, values: dict[str, Any], *, code: int = 200) -> Response:
    """The page ``template`` rendered with ``values``, answered with status ``code``."""
    text = _TEMPLATES.get_template(template).render(**values)
    return HTMLResponse(text, status_code=code)


def refused(exc: Refused) -> Response:
    """The page saying why a request was refused, with its status."""
    return render("error.html", {"status": exc.status, "reason": exc.reason}, code=exc.status)


def _sort_key(sort: str) -> Any:
    def key(row: dict[str, Any]) -> tuple[bool, Any, str]:
        value = row[sort]
        # A corrupt cassette has no count of calls: it sorts last.
        return (value is None, value if value is not None else 0, row["name"])

    return key


def page_routes(config: ServerConfig) -> list[BaseRoute]:
    """The routes of the web view under ``/ui``.

    ``GET /ui/`` lists the cassettes (``?sort=name|calls|status|size``) with a form that
    picks A and B for a diff; ``GET /ui/cassettes/{name}`` is one cassette's timeline;
    ``GET /ui/diff?a=NAME&b=NAME`` (``responses=1``, ``ignore=FIELD`` as in the API) is
    their aligned call paths, the first divergence marked.

    Args:
        config: the server's settings; only ``cassettes`` is read here.
    """

    def index(request: Request) -> Response:
        sort = request.query_params.get("sort", "name")
        if sort not in SORTS:
            sort = "name"
        rows = sorted(summaries(config.cassettes), key=_sort_key(sort))
        return render("index.html", {"cassettes": rows, "sort": sort, "sorts": SORTS})

    def cassette(request: Request) -> Response:
        name = request.path_params["name"]
        try:
            recording = open_cassette(config, name)
        except Refused as exc:
            return refused(exc)
        shown = show_json(recording, name)
        values = {"name": name, "show": shown, "header": recording.header}
        return render("cassette.html", dict(values, calls=timeline(recording)))

    def diff(request: Request) -> Response:
        try:
            result = diff_of(config, request)
        except Refused as exc:
            return refused(exc)
        return render("diff.html", {"diff": result, "rows": diff_rows(result)})

    return [
        Route("/ui/", index, methods=["GET"]),
        Route("/ui/cassettes/{name:path}", cassette, methods=["GET"]),
        Route("/ui/diff", diff, methods=["GET"]),
    ]
