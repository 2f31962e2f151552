"""The value checks behind faults: which parameters each kind takes, what selectors accept.

Shared by the constructors in ``_faults`` (and so the ``faultdeck.faults`` factories) and
the plan-file parser in ``_faultplan``, so that a value is refused with the same words
whichever way it came in. A checker returns the value (converted where needed) or raises
``_Invalid`` with what it expected; ``check_value`` turns that into a ``ConfigError``
naming the field.
"""

from __future__ import annotations

import difflib
import math
import reprlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .._base.errors import ConfigError
from .._keys.canonical import KINDS

# Every kind of fault; ``PARAMS`` says what each takes.
FAULT_KINDS = (
    "quota",
    "timeout",
    "transient",
    "bad_tool_call",
    "slow_first_token",
    "latency",
    "crash",
    "reset",
    "stream_cut",
    "malformed_stream",
)
BAD_TOOL_CALL_HOWS = ("missing_field", "wrong_type", "unparseable", "unknown_tool")

# Statuses a retrying client treats as "try again": request timeout, conflict, too early,
# rate limited, and the whole 5xx range (529 is Anthropic's "overloaded").
_TRANSIENT_STATUSES = frozenset((408, 409, 425, 429, *range(500, 600)))
_STATUS_TEXT = "an HTTP status of 408, 409, 425, 429 or 500-599"
_REQUIRED = object()
# Integers a plan may hold (seqs, counts, seeds): what 64 bits hold.
_INT_MAX = 2**63 - 1
# Waits a plan may ask for: a year, in the field's unit.
_YEAR_S = 365 * 24 * 3600.0
_YEAR_MS = _YEAR_S * 1000
_SHOWN = reprlib.Repr()
_SHOWN.maxlevel = 3
_SHOWN.maxstring = 40
_SHOWN.maxother = 40


def shown(value: Any) -> str:
    """``value`` as an error message shows it: short, whatever its size or depth."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
        return f"an integer of {value.bit_length()} bits"
    try:
        return _SHOWN.repr(value)
    except (RecursionError, ValueError):
        return f"a {type(value).__name__} too large to show"


class _Invalid(Exception):
    """A value a checker refuses; ``expected`` says what it wanted."""

    def __init__(self, expected: str) -> None:
        self.expected = expected
        super().__init__(expected)


def _wait(high: float, unit: str) -> Callable[[Any], float]:
    def check(value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _Invalid("a number >= 0")
        if isinstance(value, float) and not math.isfinite(value):
            raise _Invalid("a finite number >= 0")
        if value < 0:
            raise _Invalid("a number >= 0")
        if value > high:
            raise _Invalid(f"a number >= 0 of at most a year ({high:.0f} {unit})")
        return float(value)

    return check


_non_negative = _wait(_YEAR_MS, "ms")
_seconds = _wait(_YEAR_S, "s")


def _optional_seconds(value: Any) -> float | None:
    return None if value is None else _seconds(value)


def _int_from(low: int) -> Callable[[Any], int]:
    def check(value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise _Invalid(f"an integer >= {low}")
        if value > _INT_MAX:
            raise _Invalid(f"an integer >= {low} that 64 bits hold")
        return value

    return check


def integer(value: Any) -> int:
    """``value`` if it is an integer (not a bool) that 64 bits hold; a checker for
    ``check_value``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise _Invalid("an integer")
    if not -_INT_MAX <= value <= _INT_MAX:
        raise _Invalid("an integer that 64 bits hold")
    return value


def _one_of(choices: tuple[str, ...]) -> Callable[[Any], str]:
    def check(value: Any) -> str:
        if not isinstance(value, str) or value not in choices:
            raise _Invalid(f"one of: {', '.join(choices)}")
        return value

    return check


def _text(value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise _Invalid("a non-empty string")
    return value


def _status(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value not in _TRANSIENT_STATUSES:
        raise _Invalid(_STATUS_TEXT)
    return value


def _probability(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise _Invalid("a probability from 0 to 1")
    return float(value)


# kind -> parameter -> (checker, default); _REQUIRED has no default, None is left out.
PARAMS: dict[str, dict[str, tuple[Callable[[Any], Any], Any]]] = {
    "quota": {
        "code": (_text, "rate_limit_exceeded"),
        "retry_after": (_optional_seconds, None),
    },
    "timeout": {},
    "transient": {"status": (_status, 503)},
    "bad_tool_call": {"how": (_one_of(BAD_TOOL_CALL_HOWS), "missing_field")},
    "slow_first_token": {"ms": (_non_negative, _REQUIRED)},
    "latency": {"ms": (_non_negative, _REQUIRED)},
    "crash": {},
    "reset": {},
    "stream_cut": {"after": (_int_from(0), 1), "how": (_one_of(("cut", "error_event")), "cut")},
    "malformed_stream": {},
}

# selector field -> checker; the plan-file parser and ``Selector`` both use them.
SELECTOR_CHECKS: dict[str, Callable[[Any], Any]] = {
    "seq": _int_from(1),
    "kind": _one_of(KINDS),
    "name": _text,
    "nth": _int_from(1),
    "every": _int_from(1),
    "p": _probability,
    "seed": integer,
    "times": _int_from(0),
}


def check_value(check: Callable[[Any], Any], value: Any, where: str) -> Any:
    """``check(value)``, or a ``ConfigError`` that names ``where`` and what was expected."""
    try:
        return check(value)
    except _Invalid as exc:
        raise ConfigError(f"{where}: expected {exc.expected}, got {shown(value)}") from None


def hint(word: Any, known: Iterable[str]) -> str:
    """``"; did you mean 'x'?"`` for the close match to ``word`` in ``known``, else ``""``."""
    close = difflib.get_close_matches(word, list(known), n=1) if isinstance(word, str) else []
    return f"; did you mean {close[0]!r}?" if close else ""


def check_params(
    kind: str, given: Mapping[str, Any], where: Callable[[str], str], unknown_where: str
) -> tuple[tuple[str, Any], ...]:
    """A fault's parameters, checked, defaults filled in, as sorted ``(name, value)`` pairs.

    Args:
        kind: the fault kind, one of ``FAULT_KINDS``.
        given: the parameters given, by name.
        where: names a parameter in an error message, such as ``quota: retry_after``.
        unknown_where: names the fault in the message for an unknown parameter.

    Raises:
        ConfigError: an unknown or missing parameter, or a value it cannot take.
    """
    spec = PARAMS[kind]
    for name in given:
        if name not in spec:
            known = ", ".join(spec) or "none"
            raise ConfigError(
                f"{unknown_where}: unknown parameter {name!r}; known: {known}{hint(name, spec)}"
            )
    out: list[tuple[str, Any]] = []
    for name, (check, default) in spec.items():
        value = given.get(name, default)
        if value is _REQUIRED:
            raise ConfigError(f"{where(name)}: missing; expected {_expected(check)}")
        value = check_value(check, value, where(name))
        if value is not None:
            out.append((name, value))
    return tuple(sorted(out))


def _expected(check: Callable[[Any], Any]) -> str:
    try:
        check(object())
    except _Invalid as exc:
        return exc.expected
    return "a value"  # pragma: no cover - every checker refuses a bare object
