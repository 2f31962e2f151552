"""The example's MCP server: one tool, ``get_weather``, built with the mcp SDK's MCPServer.

Each call is counted in ``CALLS`` so the example's tests can see that replay never reached it.
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

WEATHER = {"Paris": "sunny", "London": "raining"}
CALLS: list[str] = []


def weather_server() -> MCPServer:
    """A fresh server with the ``get_weather`` tool."""
    server = MCPServer("weather")

    @server.tool()
    def get_weather(city: str) -> str:
        """Today's weather in a city."""
        CALLS.append(city)
        return WEATHER.get(city, "unknown")

    return server
