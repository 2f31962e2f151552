"""What an MCP request is as a boundary call: its name, its args, its schema version.

``tools/call`` is a ``tool`` call named after the tool, its arguments as args and a hash of
the tool's ``inputSchema`` as its schema version (part of its key: a tool whose schema
changes gets new keys). The other requests are ``tool`` calls of their own names,
``mcp:tools/list`` and so on; no MCP tool can be named so, as a tool's name holds no colon.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from typing import Any

from .._cassette.format import Recording
from .._keys.canonical import SCHEMA_DEFAULT, canonical

PREFIX = "mcp:"
METHODS = (
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/read",
    "prompts/list",
    "prompts/get",
)
"""The requests faultdeck records, as MCP names them."""

LIST_TOOLS = PREFIX + "tools/list"

INITIALIZE = "initialize"
DISCOVER = "server/discover"
HANDSHAKE = (DISCOVER, INITIALIZE)
"""How a session opens: the 2026 protocol's ``server/discover``, the handshake's
``initialize``. The server's answers are not calls; they are kept in the ``meta`` of the
session's first recorded call, as ``{"handshake": {method: {"result": ...}}}``."""


def call_name(method: str, params: Mapping[str, Any]) -> str:
    """The boundary call's name: the tool's own for ``tools/call``, else ``mcp:<method>``."""
    return str(params["name"]) if method == "tools/call" else PREFIX + method


def call_args(method: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """The boundary call's args: a tool's arguments, or the request's params."""
    if method == "tools/call":
        return dict(params.get("arguments") or {})
    return {k: v for k, v in params.items() if v is not None}


def schema_version(input_schema: Any) -> str:
    """A tool's schema version: ``mcp-`` and 16 hex digits of its canonical ``inputSchema``."""
    return "mcp-" + hashlib.sha256(canonical(input_schema)).hexdigest()[:16]


def listed(tools: Iterable[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    """A ``tools/list`` result's tools by name."""
    return {str(tool["name"]): tool for tool in tools if isinstance(tool, Mapping)}


def recorded_tools(recording: Recording | None) -> tuple[dict[str, str], dict[str, Any]]:
    """From a cassette: each tool's recorded schema version (its calls', else its latest
    listing's), and each listed tool's ``outputSchema``."""
    versions: dict[str, str] = {}
    outputs: dict[str, Any] = {}
    if recording is None:
        return versions, outputs
    for entry in recording.entries:
        if entry.kind != "tool":
            continue
        if entry.name == LIST_TOOLS:
            if entry.result != "out" or not isinstance(entry.value, Mapping):
                continue
            for name, tool in listed(entry.value.get("tools") or ()).items():
                versions.setdefault(name, schema_version(tool.get("inputSchema")))
                if tool.get("outputSchema") is not None:
                    outputs[name] = tool["outputSchema"]
        elif not entry.name.startswith(PREFIX) and entry.schema != SCHEMA_DEFAULT:
            # A call that ended in an error (a fault recorded, the server's MCP error) was
            # keyed by the same schema version as one that answered.
            versions[entry.name] = entry.schema
    return versions, outputs


def recorded_handshake(recording: Recording | None) -> dict[str, Any] | None:
    """The latest session's opening in a cassette: each handshake method's answer (its
    ``result`` or ``error``) as the server sent it; ``None`` for a cassette without one."""
    if recording is None:
        return None
    for entry in reversed(recording.entries):
        if entry.kind != "tool":
            continue
        meta = entry.meta
        if isinstance(meta, Mapping) and isinstance(meta.get("handshake"), Mapping):
            return dict(meta["handshake"])
    return None
