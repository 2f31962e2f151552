"""Context variables: the step a call belongs to, so that the deck can label calls without
the loop passing the label through every layer (threads and tasks each see their own), and
the idempotency key of the side-effecting call that is running, and whether a request on
its way out is one a deck already decided."""

from __future__ import annotations

from contextvars import ContextVar, Token
from typing import Any

_STEP: ContextVar[Any] = ContextVar("faultdeck_step", default=None)
_IDEMPOTENCY_KEY: ContextVar[str | None] = ContextVar("faultdeck_idempotency_key", default=None)
THROUGH_DECK: ContextVar[bool] = ContextVar("faultdeck_through_deck", default=False)
"""True while a request goes to the network that a deck has already decided (a live call it
records), or that faultdeck itself makes (a cassette in a store): the clients that
``fd.intercept`` routes let such a request pass, so that no call is recorded twice."""


class step:  # lower-case: used as a function, ``with fd.step("plan"):``
    """Label every boundary call made inside the block with ``label`` (an op of the loop).

    The invariants group calls by this label: which transport calls one op made, and
    whether the loop retried them as its policy allows. A class rather than a generator
    context manager: entered once per op of a loop, it costs a fifth as much.
    """

    __slots__ = ("_label", "_token")

    def __init__(self, label: Any) -> None:
        self._label = label
        self._token: Token[Any] | None = None

    def __enter__(self) -> None:
        self._token = _STEP.set(self._label)

    def __exit__(self, *exc: object) -> None:
        if self._token is not None:
            _STEP.reset(self._token)
            self._token = None


step_now = _STEP.get
"""The label of the enclosing ``step`` block, or ``None`` (the context variable's own
method: no frame of its own on a call's path)."""
enter_step = _STEP.set
"""``step(label).__enter__`` without the object: gives the token ``leave_step`` takes (for
a loop that labels every op)."""
leave_step = _STEP.reset


class idempotency:  # lower-case: used as a function, ``with idempotency(key):``
    """Make ``key`` the running call's idempotency key inside the block.

    A class, as ``step`` is: every live call enters one. When the key is ``None`` and none
    is set already (a call without side effects, outside any that has them), there is
    nothing to change and the block runs as it is.
    """

    __slots__ = ("_key", "_token")

    def __init__(self, key: str | None) -> None:
        self._key = key
        self._token: Token[str | None] | None = None

    def __enter__(self) -> None:
        if self._key is not None or _IDEMPOTENCY_KEY.get() is not None:
            self._token = _IDEMPOTENCY_KEY.set(self._key)

    def __exit__(self, *exc: object) -> None:
        if self._token is not None:
            _IDEMPOTENCY_KEY.reset(self._token)
            self._token = None


def current_idempotency_key() -> str | None:
    """The idempotency key of the side-effecting call running now, if any: the same key
    when ``resume`` runs a call again that was in flight at a kill."""
    return _IDEMPOTENCY_KEY.get()
