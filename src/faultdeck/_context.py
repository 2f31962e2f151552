"""The step a call belongs to, carried by a context variable so that the deck can label
calls without the loop passing the label through every layer (threads and tasks each see
their own)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

_STEP: ContextVar[Any] = ContextVar("faultdeck_step", default=None)


@contextmanager
def step(label: Any) -> Iterator[None]:
    """Label every boundary call made inside the block with ``label`` (an op of the loop).

    The invariants group calls by this label: which transport calls one op made, and
    whether the loop retried them as its policy allows.
    """
    token = _STEP.set(label)
    try:
        yield
    finally:
        _STEP.reset(token)


def current_step() -> Any:
    """The label of the enclosing ``step`` block, or ``None``."""
    return _STEP.get()
