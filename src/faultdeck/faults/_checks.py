"""The value checks behind faults: what a parameter or a selector field accepts.

Shared by the kinds in ``_kinds`` (their parameters), ``Selector`` and the plan-file
parser, so that a value is refused with the same words whichever way it came in. A checker
returns the value (converted where needed) or raises ``_Invalid`` with what it expected;
``check_value`` turns that into a ``ConfigError`` naming the field.
"""

from __future__ import annotations

import difflib
import math
import reprlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .._base.errors import ConfigError
from .._keys.canonical import KINDS

# Statuses a retrying client treats as "try again": request timeout, conflict, too early,
# rate limited, and the whole 5xx range (529 is Anthropic's "overloaded").
_TRANSIENT_STATUSES = frozenset((408, 409, 425, 429, *range(500, 600)))
_STATUS_TEXT = "an HTTP status of 408, 409, 425, 429 or 500-599"
REQUIRED = object()
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


milliseconds = _wait(_YEAR_MS, "ms")
_seconds = _wait(_YEAR_S, "s")


def optional_seconds(value: Any) -> float | None:
    return None if value is None else _seconds(value)


def int_from(low: int) -> Callable[[Any], int]:
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


@dataclass(frozen=True, slots=True)
class OneOf:
    """A checker that takes one of a few names (or one of the older names ``also`` keeps
    working); the catalogue lists its ``choices``."""

    choices: tuple[str, ...]
    also: tuple[str, ...] = ()

    def __call__(self, value: Any) -> str:
        if not isinstance(value, str) or (value not in self.choices and value not in self.also):
            accepted = f" (also accepted: {', '.join(self.also)})" if self.also else ""
            raise _Invalid(f"one of: {', '.join(self.choices)}{accepted}")
        return value


def one_of(choices: tuple[str, ...], also: tuple[str, ...] = ()) -> OneOf:
    return OneOf(tuple(choices), tuple(also))


def text(value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise _Invalid("a non-empty string")
    return value


def status(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value not in _TRANSIENT_STATUSES:
        raise _Invalid(_STATUS_TEXT)
    return value


def _probability(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise _Invalid("a probability from 0 to 1")
    return float(value)


# selector field -> checker; the plan-file parser and ``Selector`` both use them.
SELECTOR_CHECKS: dict[str, Callable[[Any], Any]] = {
    "seq": int_from(1),
    "kind": one_of(KINDS),
    "name": text,
    "nth": int_from(1),
    "every": int_from(1),
    "p": _probability,
    "seed": integer,
    "times": int_from(0),
    "after": int_from(0),
    "burst": int_from(1),
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


Spec = Mapping[str, tuple[Callable[[Any], Any], Any]]
"""A kind's parameters: name -> (checker, default); ``REQUIRED`` has no default."""


def check_params(
    spec: Spec, given: Mapping[str, Any], where: Callable[[str], str], unknown_where: str
) -> tuple[tuple[str, Any], ...]:
    """A fault's parameters, checked, defaults filled in, as sorted ``(name, value)`` pairs.

    Args:
        spec: what the kind takes.
        given: the parameters given, by name.
        where: names a parameter in an error message, such as ``quota: retry_after``.
        unknown_where: names the fault in the message for an unknown parameter.

    Raises:
        ConfigError: an unknown or missing parameter, or a value it cannot take.
    """
    for name in given:
        if name not in spec:
            known = ", ".join(spec) or "none"
            raise ConfigError(
                f"{unknown_where}: unknown parameter {name!r}; known: {known}{hint(name, spec)}"
            )
    out: list[tuple[str, Any]] = []
    for name, (check, default) in spec.items():
        value = given.get(name, default)
        if value is REQUIRED:
            raise ConfigError(f"{where(name)}: missing; expected {expected(check)}")
        value = check_value(check, value, where(name))
        if value is not None:
            out.append((name, value))
    return tuple(sorted(out))


def expected(check: Callable[[Any], Any]) -> str:
    """What ``check`` takes, in the words its refusal uses (``a number >= 0``)."""
    try:
        check(object())
    except _Invalid as exc:
        return exc.expected
    return "a value"  # pragma: no cover - every checker refuses a bare object
