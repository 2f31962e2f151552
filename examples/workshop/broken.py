"""Loops that break the degradation policy on purpose, each in one way.

Each has ``run_steps``'s signature, so it drops into ``Workshop.run(runner=…)`` and the
invariants can show what it breaks. None of them is a straw man: each is a loop that
ships in real agents.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from typing import Any

import faultdeck as fd


def unbounded_backoff(
    step: Callable[[Any], Any],
    ops: Iterable[Any],
    policy: fd.Policy,
    *,
    clock: fd.Clock,
    repair: Callable[[Any, fd.BadToolCall], Any] | None = None,
) -> list[fd.Outcome]:
    """Retries transient errors with doubling waits and no cap on waits or attempts
    (stopped at 12 attempts only so that a test ends)."""
    outcomes = []
    for op in ops:
        with fd.step(op):
            delay, attempts = 1.0, 0
            while True:
                attempts += 1
                try:
                    outcomes.append(fd.Outcome(op, "ok", step(op), attempts=attempts))
                    break
                except fd.TransientError:
                    if attempts == 12:
                        outcomes.append(fd.Outcome(op, "degraded", None, "transient", attempts))
                        break
                    clock.sleep(delay)
                    delay *= 2
    return outcomes


def retry_on_quota(
    step: Callable[[Any], Any],
    ops: Iterable[Any],
    policy: fd.Policy,
    *,
    clock: fd.Clock,
    repair: Callable[[Any, fd.BadToolCall], Any] | None = None,
) -> list[fd.Outcome]:
    """Treats a quota error like any other error: retries it at once, three times."""
    outcomes = []
    for op in ops:
        with fd.step(op):
            for attempt in range(1, 5):
                try:
                    outcomes.append(fd.Outcome(op, "ok", step(op), attempts=attempt))
                    break
                except fd.QuotaExhausted:
                    if attempt == 4:
                        outcomes.append(fd.Outcome(op, "stopped", None, "quota", attempt))
                        return outcomes
    return outcomes


def drops_partial_work(
    step: Callable[[Any], Any],
    ops: Iterable[Any],
    policy: fd.Policy,
    *,
    clock: fd.Clock,
    repair: Callable[[Any, fd.BadToolCall], Any] | None = None,
) -> list[fd.Outcome]:
    """Follows the policy, but on a quota stop returns only the stop, losing finished work."""
    outcomes = fd.run_steps(step, ops, policy, clock=clock, repair=repair)
    if outcomes and outcomes[-1].status == "stopped":
        return [outcomes[-1]]
    return outcomes


def coin_flip_retry(
    step: Callable[[Any], Any],
    ops: Iterable[Any],
    policy: fd.Policy,
    *,
    clock: fd.Clock,
    repair: Callable[[Any, fd.BadToolCall], Any] | None = None,
) -> list[fd.Outcome]:
    """Decides whether to retry a transient error by an unseeded coin: runs of the same
    cassette and faults disagree."""
    outcomes = []
    for op in ops:
        with fd.step(op):
            try:
                outcomes.append(fd.Outcome(op, "ok", step(op)))
            except fd.TransientError:
                if random.random() < 0.5:
                    outcomes.append(fd.Outcome(op, "ok", step(op), attempts=2))
                else:
                    outcomes.append(fd.Outcome(op, "degraded", None, "transient"))
    return outcomes


BROKEN: dict[str, Callable[..., list[fd.Outcome]]] = {
    "unbounded_backoff": unbounded_backoff,
    "retry_on_quota": retry_on_quota,
    "drops_partial_work": drops_partial_work,
    "coin_flip_retry": coin_flip_retry,
}
