"""Entrypoints for rehearsing the workshop loop on its golden cassette.

Each takes ``(deck, clock)`` (the deck already replaying the cassette under a fault plan),
runs the loop through it and returns the outcomes; ``POLICY`` is what the rehearsal judges
by. From the repository root::

    faultdeck rehearse examples/workshop/cassettes/golden.jsonl \\
        --entrypoint examples.workshop.rehearsal:good
    fd.rehearse("examples.workshop.rehearsal:retry_on_quota", "examples/workshop/...")

``good`` follows the degradation policy; the others are the broken loops of ``broken.py``.
"""

from __future__ import annotations

import faultdeck as fd
from examples.workshop import broken
from faultdeck.workshop import OPS, POLICY, Workshop

__all__ = [
    "POLICY",
    "coin_flip_retry",
    "drops_partial_work",
    "good",
    "reads_errors_back",
    "retry_on_quota",
    "unbounded_backoff",
]


def good(deck: fd.Deck, clock: fd.VirtualClock) -> list[fd.Outcome]:
    """The workshop loop under ``fd.run_steps``, which follows the policy."""
    return Workshop(deck).run(POLICY, clock=clock)


def retry_on_quota(deck: fd.Deck, clock: fd.VirtualClock) -> list[fd.Outcome]:
    """The loop that retries quota errors at once (breaks no_early_retry, call_budget)."""
    return Workshop(deck).run(POLICY, clock=clock, runner=broken.retry_on_quota)


def unbounded_backoff(deck: fd.Deck, clock: fd.VirtualClock) -> list[fd.Outcome]:
    """The loop that backs off without a cap (breaks bounded_waiting, call_budget)."""
    return Workshop(deck).run(POLICY, clock=clock, runner=broken.unbounded_backoff)


def drops_partial_work(deck: fd.Deck, clock: fd.VirtualClock) -> list[fd.Outcome]:
    """The loop that returns only the stop after a quota stop (breaks partial_work)."""
    return Workshop(deck).run(POLICY, clock=clock, runner=broken.drops_partial_work)


def coin_flip_retry(deck: fd.Deck, clock: fd.VirtualClock) -> list[fd.Outcome]:
    """The loop that retries by an unseeded coin (breaks replay_determinism)."""
    return Workshop(deck).run(POLICY, clock=clock, runner=broken.coin_flip_retry)


def reads_errors_back(deck: fd.Deck, clock: fd.VirtualClock) -> list[fd.Outcome]:
    """The loop that, when a read fails, tells the model what failed instead of stopping:
    the patch request then carries the error, a request the golden run never made. A
    rehearsal finds that cell off the recorded path until ``--branches record`` keeps
    where it leads; from then on it is judged offline, on its branch."""
    workshop = Workshop(deck)

    def step(op: str) -> object:
        try:
            return workshop.step(op)
        except fd.TransientError as exc:
            if op != "read":
                raise
            workshop.notes = {"error": f"the read failed ({exc.code}); patch from the plan"}
            return ["error"]

    return fd.run_steps(step, OPS, POLICY, clock=clock, repair=workshop.repair)
