"""Canonical JSON and call keys.

A key is ``"{kind}:{16 hex}"``: the first 16 hex digits of the sha256 of the canonical JSON
of ``{"v": schema, "kind": kind, "name": name, "args": args}``, where ``args`` has already
been normalized (see ``_normalize``). Canonical JSON is sorted keys, ``(",", ":")``
separators and UTF-8 that is not ASCII-escaped: the bytes ``json.dumps(value,
sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()`` gives for the JSON
values normalization lets through.
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson

SCHEMA_DEFAULT = "v1"
KINDS = ("model", "tool", "env", "http")

_SORTED = orjson.OPT_SORT_KEYS


def canonical(value: Any) -> bytes:
    """Return the canonical JSON bytes of a JSON value (already checked by normalization)."""
    return orjson.dumps(value, option=_SORTED)


def make_key(kind: str, name: str, args: Any, schema: str = SCHEMA_DEFAULT) -> str:
    """Return the key of a boundary call whose args are already normalized.

    Args:
        kind: ``model``, ``tool``, ``env`` or ``http``.
        name: the call's name, such as ``search_docs`` or ``openai.chat.completions``.
        args: the normalized args.
        schema: the tool's schema version; changing it changes every key of that tool.
    """
    payload = orjson.dumps({"v": schema, "kind": kind, "name": name, "args": args}, option=_SORTED)
    return f"{kind}:{hashlib.sha256(payload).hexdigest()[:16]}"
