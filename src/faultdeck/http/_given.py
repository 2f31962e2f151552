"""The model answers a run was given, the last one per call name: what a stale cache would
give again (``faults.stale_answer``).

Kept by deck (one deck, one run) and forgotten with it, for every transport and client
the run goes through. A fault that breaks an answer gets its parameters with the last
answer under ``faults._answers.PREVIOUS``; which kind reads it is the kind's business, not
this module's.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any, Literal

from ..faults import Fault
from ..faults._answers import PREVIOUS

Form = Literal["out", "stream"]

_GIVEN: weakref.WeakKeyDictionary[Any, dict[str, tuple[Form, Any]]] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def gave(deck: Any, name: str, form: Form, answer: Any) -> None:
    """The run of ``deck`` gave ``answer`` (a body, or a stream's events) to a model call
    named ``name``."""
    with _LOCK:
        given = _GIVEN.get(deck)
        if given is None:
            given = _GIVEN[deck] = {}
        given[name] = (form, answer)


def values(deck: Any, name: str, fault: Fault) -> dict[str, Any]:
    """``fault``'s parameters, and the last answer the run gave a call named ``name``
    (if any) under ``PREVIOUS``."""
    params = fault.values
    with _LOCK:
        previous = _GIVEN.get(deck, {}).get(name)
    if previous is not None:
        params[PREVIOUS] = previous
    return params
