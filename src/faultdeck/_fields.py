"""Field-level differences between two JSON values, and short previews of values. Pure."""

from __future__ import annotations

from typing import Any

import orjson

ABSENT = "<absent>"


def field_diff(
    recorded: Any, asked: Any, path: str = "args", *, limit: int = 50
) -> list[tuple[str, Any, Any]]:
    """Return ``(path, recorded, asked)`` for each leaf that differs, at most ``limit``.

    Dicts are compared key by key, lists index by index; a side that lacks a field shows
    ``ABSENT``. Values of different types differ as a whole.
    """
    out: list[tuple[str, Any, Any]] = []
    _diff(recorded, asked, path, out, limit)
    return out


def _diff(a: Any, b: Any, path: str, out: list[tuple[str, Any, Any]], limit: int) -> None:
    if len(out) >= limit:
        return
    if type(a) is dict and type(b) is dict:
        for k in a:
            if k in b:
                _diff(a[k], b[k], f"{path}.{k}", out, limit)
            elif len(out) < limit:
                out.append((f"{path}.{k}", a[k], ABSENT))
        for k in b:
            if k not in a and len(out) < limit:
                out.append((f"{path}.{k}", ABSENT, b[k]))
    elif type(a) is list and type(b) is list:
        for i in range(max(len(a), len(b))):
            if i >= len(a):
                out.append((f"{path}[{i}]", ABSENT, b[i]))
            elif i >= len(b):
                out.append((f"{path}[{i}]", a[i], ABSENT))
            else:
                _diff(a[i], b[i], f"{path}[{i}]", out, limit)
            if len(out) >= limit:
                return
    elif a != b or type(a) is not type(b):
        out.append((path, a, b))


def preview(value: Any, width: int = 72) -> str:
    """A one-line JSON preview of ``value``, cut to ``width`` characters."""
    if value is ABSENT:
        return str(value)
    try:
        text: str = orjson.dumps(value).decode()
    except TypeError:
        text = repr(value)
    return text if len(text) <= width else text[: width - 1] + "…"
