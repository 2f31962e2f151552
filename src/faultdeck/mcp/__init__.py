"""MCP sessions as boundary calls: record a client session once, replay it offline.

``faultdeck.mcp.Client(deck, server)`` is the mcp SDK's ``Client`` with each request a call
of ``deck``: ``call_tool`` a ``tool`` call named after the tool (its arguments as args, a
hash of its ``inputSchema`` as schema version), the listings and reads calls of their own
(``mcp:tools/list``, ``mcp:resources/read``...). ``faultdeck mcp serve`` serves a recorded
session as an MCP server, and ``faultdeck mcp record`` records one through a proxy. Needs
the ``mcp`` extra: ``pip install 'faultdeck[mcp]'``.
"""

from __future__ import annotations

try:
    import mcp as _mcp  # noqa: F401 - the SDK this module wraps
except ImportError as exc:  # pragma: no cover - the SDK is in the dev tools
    raise ImportError(
        f"faultdeck.mcp needs the mcp SDK ({exc.name} is missing): pip install 'faultdeck[mcp]'"
    ) from exc

from ._calls import schema_version
from ._client import Client

__all__ = ["Client", "schema_version"]
