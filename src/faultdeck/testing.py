"""Assertions for tests: the invariants and replay determinism as pytest-friendly failures.

These are the only places (with the pytest plugin and the command line) where a check
becomes an ``AssertionError``; ``fd.check`` itself returns results.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ._base.clock import Clock
from ._judge.invariants import Violation, check
from ._judge.policy import Outcome, Policy

__all__ = ["assert_deterministic", "assert_invariants", "assert_violates"]


def assert_invariants(
    outcomes: Sequence[Outcome],
    *,
    policy: Policy,
    deck: Any = None,
    clock: Clock | None = None,
    replays: Sequence[Sequence[Outcome]] = (),
) -> None:
    """Fail with every violated invariant, one per line, if any does not hold."""
    violations = check(outcomes, policy=policy, deck=deck, clock=clock, replays=replays)
    if violations:
        raise AssertionError(_lines(violations))


def assert_violates(
    invariant: str,
    outcomes: Sequence[Outcome],
    *,
    policy: Policy,
    deck: Any = None,
    clock: Clock | None = None,
    replays: Sequence[Sequence[Outcome]] = (),
) -> list[Violation]:
    """Fail unless ``invariant`` is violated; return its violations (for a broken loop)."""
    violations = check(outcomes, policy=policy, deck=deck, clock=clock, replays=replays)
    mine = [v for v in violations if v.invariant == invariant]
    if not mine:
        held = _lines(violations) if violations else "every invariant held"
        raise AssertionError(f"expected {invariant} to be violated, but: {held}")
    return mine


def assert_deterministic(
    run: Callable[[], Sequence[Outcome]],
    *,
    n: int = 20,
    ignore: Iterable[str] = ("elapsed_ms",),
) -> list[Outcome]:
    """Run ``run`` ``n`` times; fail unless every run gives the same outcomes. Returns them."""
    runs = [list(run()) for _ in range(n)]
    first, rest = runs[0], runs[1:]
    violations = [
        v
        for v in check(first, policy=Policy(), replays=rest, ignore=ignore)
        if v.invariant == "replay_determinism"
    ]
    if violations:
        raise AssertionError(_lines(violations))
    return first


def _lines(violations: Iterable[Violation]) -> str:
    return "\n".join(str(v) for v in violations)
