"""Outputs as the cassette stores them: checked as JSON, wall-clock values made placeholders.

``check_json`` names the first value JSON cannot hold (``_locate`` also names one in args,
for the normalizer); ``scrub`` replaces wall-clock values in an output by placeholders that
depend only on the call's ``seq``, keeping their type and format, so re-recordings diff
cleanly and SDK parsers still accept replayed bodies.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

from faultdeck._base.errors import ArgumentError

_DATETIME = re.compile(
    r"(\d{4}-\d{2}-\d{2})([T ])(\d{2}:\d{2}(?::\d{2})?)(\.\d+)?(Z|[+-]\d{2}:?\d{2})?"
)
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_TIME_NAMES = frozenset({"created", "updated", "timestamp", "ts", "time", "now", "date"})
_TIME_SUFFIXES = ("_at", "_time", "_ts", "At")
EPOCH_S = (1e9, 4e9)
EPOCH_MS = (1e12, 4e12)
# 2000-01-01T00:00:00Z: placeholders count seconds from here by seq.
PLACEHOLDER_EPOCH = 946684800
INT_LIMIT = 2**63
PROVIDER_TIMES = frozenset({"created", "created_at", "completed_at", "createTime"})


def is_time_field(name: str) -> bool:
    """Whether a field name conventionally holds a wall-clock value."""
    return name in _TIME_NAMES or name.endswith(_TIME_SUFFIXES)


def is_epoch(value: float) -> bool:
    """Whether a number reads as a time since 1970, in seconds or milliseconds."""
    return EPOCH_S[0] <= value < EPOCH_S[1] or EPOCH_MS[0] <= value < EPOCH_MS[1]


def scrub(out: Any, seq: int, volatile: frozenset[str], declared: frozenset[str]) -> Any:
    """``out`` with the values of the fields named in ``volatile`` replaced by placeholders
    derived from ``seq`` (any scalar under a ``declared`` name, only wall-clock values under
    the others); ``out`` itself when nothing changed."""
    return _scrub(out, None, PLACEHOLDER_EPOCH + seq, volatile, declared)


def check_json(value: Any, where: str) -> None:
    """Raise ``ArgumentError`` naming the first value in an output that JSON cannot hold.

    Args:
        value: the output.
        where: what it is the output of, for the message.
    """
    found = locate(value, "out", None)
    if found is not None:
        path, detail = found
        raise ArgumentError(f"{where}: {path}", detail)


def locate(value: Any, path: str, skip: Callable[[str], bool] | None) -> Any:
    """``(path, what is wrong)`` of the first value JSON cannot hold, in walk order, or
    ``None``; dict keys for which ``skip`` is true are passed over, as normalization strips
    them."""
    stack: list[tuple[str, Any]] = [(path, value)]
    while stack:
        here, item = stack.pop()
        cls = type(item)
        if cls is dict:
            children = []
            for k, v in item.items():
                if type(k) is not str:
                    return (
                        f"{here}[{k!r}]",
                        f"dict key of type {type(k).__name__}; JSON keys are strings",
                    )
                if skip is None or not skip(k):
                    children.append((f"{here}.{k}", v))
            stack.extend(reversed(children))
        elif cls is list or cls is tuple:
            stack.extend(reversed([(f"{here}[{i}]", v) for i, v in enumerate(item)]))
        elif cls is float:
            if not math.isfinite(item):
                return here, f"{item} is not a JSON number; pass null or a string"
        elif cls is int:
            if not -INT_LIMIT <= item < INT_LIMIT:
                return here, "integer outside 64 bits; pass it as a string"
        elif cls is not str and cls is not bool and item is not None:
            return (
                here,
                f"{cls.__name__} is not a JSON value; convert it first (for example str(), "
                ".isoformat() or .model_dump(mode='json'); for SDK objects, record at the HTTP "
                "boundary with fd.http.Transport)",
            )
    return None


def _scrub(
    value: Any,
    field_name: str | None,
    stamp: int,
    volatile: frozenset[str],
    declared: frozenset[str],
) -> Any:
    cls = type(value)
    if cls is dict:
        changed = False
        result: dict[str, Any] = {}
        for k, v in value.items():
            new = _scrub(v, k, stamp, volatile, declared)
            changed = changed or new is not v
            result[k] = new
        return result if changed else value
    if cls is list:
        items = [_scrub(v, field_name, stamp, volatile, declared) for v in value]
        if any(new is not old for new, old in zip(items, value, strict=True)):
            return items
        return value
    if field_name is None or field_name not in volatile:
        return value
    return _stand_in(value, field_name in declared, stamp)


def _stand_in(value: Any, declared: bool, stamp: int) -> Any:
    cls = type(value)
    if cls is str:
        if len(value) >= 16:
            match = _DATETIME.fullmatch(value)
            if match is not None:
                return _format_stamp(stamp, match)
        if len(value) == 10 and _DATE.fullmatch(value):
            return "2000-01-01"
        return "«volatile»" if declared else value
    if cls is int or cls is float:
        if EPOCH_S[0] <= value < EPOCH_S[1]:
            return cls(stamp)
        if EPOCH_MS[0] <= value < EPOCH_MS[1]:
            return cls(stamp * 1000)
        return cls(0) if declared else value
    return value


def _format_stamp(stamp: int, match: re.Match[str]) -> str:
    seconds = stamp - PLACEHOLDER_EPOCH
    hh, rest = divmod(seconds, 3600)
    mm, ss = divmod(rest, 60)
    days, hh = divmod(hh, 24)
    date = f"2000-01-{1 + days:02d}" if days < 31 else "2000-02-01"
    clock = (
        f"{hh:02d}:{mm:02d}:{ss:02d}" if match.group(3).count(":") == 2 else f"{hh:02d}:{mm:02d}"
    )
    fraction = match.group(4)
    frac = "." + "0" * (len(fraction) - 1) if fraction else ""
    return f"{date}{match.group(2)}{clock}{frac}{match.group(5) or ''}"
