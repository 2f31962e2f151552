"""Faults for one request: the ``X-Faultdeck-Fault`` header, on top of the server's plan.

A deck picks its faults from its plan as each call begins. A request's own fault rides in
a context variable for the time of that request, and the deck's plan (``RequestFaults``)
picks it first: the fault then goes the one way every fault goes, through the call seam,
and comes back shaped as the HTTP boundary shapes it.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from typing import Any

import orjson

from .._base.errors import ConfigError
from ..faults import CallInfo, Fault, FaultPlan, FaultRun
from ..faults import from_json as fault_from_json

HEADER = "x-faultdeck-fault"
_SELECTORS = ("at", "on", "every", "random", "times")
_REQUEST: contextvars.ContextVar[Fault | None] = contextvars.ContextVar(
    "faultdeck_request_fault", default=None
)


def parse_header(value: str) -> Fault:
    """The fault an ``X-Faultdeck-Fault`` header holds: one plan-file fault, no selector.

    Raises:
        ConfigError: one line naming the header and what is wrong.
    """
    where = "X-Faultdeck-Fault"
    try:
        data: Any = orjson.loads(value)
    except orjson.JSONDecodeError:
        raise ConfigError(
            f'{where}: not JSON; send one fault as a JSON object, e.g. {{"fault": "quota"}}'
        ) from None
    if isinstance(data, dict):
        for key in _SELECTORS:
            if key in data:
                raise ConfigError(
                    f"{where}: {key!r} has no place here; the fault applies to this request"
                )
    return fault_from_json(data, where=where)


@contextlib.contextmanager
def request_fault(fault: Fault | None) -> Iterator[None]:
    """Let ``fault`` answer the calls made inside the block (this request's)."""
    token = _REQUEST.set(fault)
    try:
        yield
    finally:
        _REQUEST.reset(token)


class RequestFaults(FaultPlan):
    """A deck's plan: the request's own fault first, else the server's plan.

    Args:
        plan: the server's plan, if any.
    """

    __slots__ = ()

    def __init__(self, plan: FaultPlan | None) -> None:
        base = plan or FaultPlan()
        super().__init__(base.faults, seed=base.seed)

    def start(self) -> FaultRun:
        """Fresh counters for one deck's run."""
        return _RequestRun(self)

    def __bool__(self) -> bool:
        return True  # a request may bring a fault even when the plan has none


class _RequestRun(FaultRun):
    __slots__ = ()

    def pick(self, call: CallInfo) -> Fault | None:
        own = _REQUEST.get()
        return own if own is not None else super().pick(call)

    def passes(self, seq: int, kind: str, name: str) -> bool:
        return _REQUEST.get() is None and super().passes(seq, kind, name)
