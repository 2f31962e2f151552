"""``Deck.from_env()``: a deck configured by ``FAULTDECK_*`` variables, closed at exit.

The command line drives any program this way: it sets the variables, the program's deck
reads them, and at exit the deck writes its report where ``FAULTDECK_REPORT`` says.
"""

from __future__ import annotations

import atexit
import sys
from collections.abc import Mapping
from typing import Any, Protocol, TypeVar

import orjson

from .._base.clock import VirtualClock
from .._base.config import check_choice
from .._base.errors import ConfigError
from ..faults import FaultPlan
from .report import Report


class _Deck(Protocol):
    def open(self) -> None: ...
    def close(self, status: str = "ok") -> None: ...
    def report(self) -> Report: ...


D = TypeVar("D", bound=_Deck)


def deck_from_env(cls: type[D], env: Mapping[str, str], kwargs: dict[str, Any]) -> D:
    """The body of ``Deck.from_env``: build, open, and close at exit."""
    cassette = env.get("FAULTDECK_CASSETTE")
    if not cassette:
        raise ConfigError(
            "FAULTDECK_CASSETTE is not set; set it to the cassette path "
            "(faultdeck record/replay set it for the program they run)"
        )
    plan_path = env.get("FAULTDECK_FAULTS")
    if plan_path and "faults" not in kwargs:
        kwargs["faults"] = FaultPlan.load(plan_path)
    clock_name = env.get("FAULTDECK_CLOCK", "system")
    check_choice("FAULTDECK_CLOCK", clock_name, ("system", "virtual"))
    if clock_name == "virtual" and "clock" not in kwargs:
        kwargs["clock"] = VirtualClock()
    if env.get("FAULTDECK_DEFER_REPLACE") == "1":
        kwargs.setdefault("replace", False)
    deck = cls(cassette, mode=env.get("FAULTDECK_MODE") or None, environ=env, **kwargs)  # type: ignore[call-arg]
    report_path = env.get("FAULTDECK_REPORT")
    deck.open()

    def finish() -> None:
        # An unhandled exception reached the top: the run ended, but not well.
        deck.close("error" if getattr(sys, "last_value", None) is not None else "ok")
        if report_path:
            with open(report_path, "wb") as fh:
                fh.write(orjson.dumps(deck.report().to_dict(), option=orjson.OPT_INDENT_2))

    atexit.register(finish)
    return deck
