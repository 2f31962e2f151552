"""Real MCP servers for the tests, built with the mcp SDK's ``MCPServer``.

``weather_server()`` has two tools (``get_weather``, and ``search_notes`` with an
``outputSchema``), a resource and a prompt; ``drift=True`` gives ``get_weather`` a new
argument, so its ``inputSchema`` (and its schema version) changes. The same server runs in
memory, as a stdio subprocess (``stdio_params()``: ``python -m tests.mcp.servers``) and over
streamable HTTP on 127.0.0.1 (``http_server()``). Every tool call is counted in
``CALLS`` (in memory) so a test can see that replay never reached the server.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from mcp import StdioServerParameters
from mcp.server.mcpserver import MCPServer
from pydantic import BaseModel

from tests.support.fake_upstream import Upstream

ROOT = Path(__file__).resolve().parents[2]
CALLS: list[str] = []


class Notes(BaseModel):
    """search_notes' structured output."""

    query: str
    hits: list[str]


def weather_server(*, drift: bool = False) -> MCPServer:
    server = MCPServer("weather")

    if drift:

        @server.tool(name="get_weather")
        def get_weather_in_units(city: str, units: str = "C") -> str:
            """Weather in a city, in the given units."""
            CALLS.append("get_weather")
            return f"sunny in {city} ({units})"

    else:

        @server.tool()
        def get_weather(city: str) -> str:
            """Weather in a city."""
            CALLS.append("get_weather")
            return f"sunny in {city}"

    @server.tool()
    def search_notes(query: str) -> Notes:
        """Notes that mention the query."""
        CALLS.append("search_notes")
        return Notes(query=query, hits=[f"{query}: bring an umbrella"])

    @server.resource("notes://today")
    def today() -> str:
        """Today's notes."""
        return "buy milk"

    @server.prompt()
    def greet(name: str) -> str:
        """A greeting."""
        return f"Hello {name}"

    return server


def stdio_params(*, drift: bool = False) -> StdioServerParameters:
    """The weather server as a stdio subprocess of this Python."""
    args = ["-m", "tests.mcp.servers"] + (["--drift"] if drift else [])
    env = {"PYTHONPATH": str(ROOT), "PATH": os.environ.get("PATH", "")}
    return StdioServerParameters(command=sys.executable, args=args, env=env, cwd=str(ROOT))


@contextmanager
def http_server(*, drift: bool = False) -> Iterator[str]:
    """The weather server over streamable HTTP on 127.0.0.1; yields its ``/mcp`` URL."""
    app = weather_server(drift=drift).streamable_http_app()
    with Upstream(app=app) as upstream:
        yield f"{upstream.url}/mcp"


if __name__ == "__main__":
    weather_server(drift="--drift" in sys.argv).run("stdio")
