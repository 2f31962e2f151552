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


def _diff(a: Any, b: Any, path: str, out: list[tuple[str, Any, Any]], limit: int) -> None:  # noqa: C901 - one recursive walk over dicts, lists and leaves
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


def preview_pair(a: Any, b: Any, width: int = 72) -> tuple[str, str]:
    """Previews of two differing values that show where they differ.

    Two strings that share a long beginning or end are shown from a little before their
    first difference, the shared part elided as ``…``, so a changed word at the end of a
    long prompt is visible instead of cut away.
    """
    if type(a) is not str or type(b) is not str:
        return preview(a, width), preview(b, width)
    full_a, full_b = preview(a, 10**9), preview(b, 10**9)
    if len(full_a) <= width and len(full_b) <= width:
        return full_a, full_b
    start = 0
    limit = min(len(full_a), len(full_b))
    while start < limit and full_a[start] == full_b[start]:
        start += 1
    keep = 12  # characters of shared context before the difference
    cut = max(0, start - keep)
    head = "…" if cut > 0 else ""
    return _clip(head + full_a[cut:], width), _clip(head + full_b[cut:], width)


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"
