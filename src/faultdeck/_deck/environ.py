"""``Deck.from_env()``: a deck configured by ``FAULTDECK_*`` variables, closed at exit.

The command line drives any program this way: it sets the variables, the program's deck
reads them, and at exit the deck writes its report where ``FAULTDECK_REPORT`` says.
"""

from __future__ import annotations

import atexit
import sys
import traceback
import warnings
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import Any, Protocol, TypeVar

import orjson

from .._base import terms
from .._base.clock import VirtualClock
from .._base.config import check_choice
from .._base.errors import (
    CassetteWarning,
    ConfigError,
    FaultdeckWarning,
    ReplayMiss,
    in_faultdeck,
)
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
    said = terms.from_env(env)
    if said is not None:  # the command line runs this program: hints name its commands
        terms.use(said)
        sys.excepthook = _misses_first(sys.excepthook)
    plan_path = env.get("FAULTDECK_FAULTS")
    if plan_path and "faults" not in kwargs:
        kwargs["faults"] = FaultPlan.load(plan_path)
    clock_name = env.get("FAULTDECK_CLOCK", "system")
    check_choice("FAULTDECK_CLOCK", clock_name, ("system", "virtual"))
    if clock_name == "virtual" and "clock" not in kwargs:
        kwargs["clock"] = VirtualClock()
    if env.get("FAULTDECK_DEFER_REPLACE") == "1":
        kwargs.setdefault("replace", False)
    # Set by `faultdeck drift`: "0" holds side effects to their stand-ins whatever the
    # program asks (the drift run is a check, not a run); "1" lets them run.
    allow = env.get("FAULTDECK_ALLOW_SIDE_EFFECTS")
    if allow == "0":
        kwargs["allow_side_effects"] = False
    elif allow == "1":
        kwargs.setdefault("allow_side_effects", True)
    deck = cls(cassette, mode=env.get("FAULTDECK_MODE") or None, environ=env, **kwargs)  # type: ignore[call-arg]
    report_path = env.get("FAULTDECK_REPORT")
    if said is None:
        deck.open()
    else:
        _open_quietly(deck, checked=env.get("FAULTDECK_CASSETTE_CHECKED") == "1")

    def finish() -> None:
        # An unhandled exception reached the top: the run ended, but not well.
        deck.close("error" if getattr(sys, "last_value", None) is not None else "ok")
        if report_path:
            with open(report_path, "wb") as fh:
                fh.write(orjson.dumps(deck.report().to_dict(), option=orjson.OPT_INDENT_2))

    atexit.register(finish)
    return deck


def _misses_first(
    shows: Callable[[type[BaseException], BaseException, TracebackType | None], Any],
) -> Callable[[type[BaseException], BaseException, TracebackType | None], None]:
    """A ``sys.excepthook`` that shows a replay miss without faultdeck's own frames: the
    program's frames (and its libraries'), then the miss, which says what diverged."""

    def hook(kind: type[BaseException], error: BaseException, tb: TracebackType | None) -> None:
        if not isinstance(error, ReplayMiss):
            shows(kind, error, tb)
            return
        frames = [f for f in traceback.extract_tb(tb) if not in_faultdeck(f.filename)]
        lines = ["Traceback (most recent call last; faultdeck's own frames hidden):\n"]
        lines += traceback.format_list(frames)
        lines.append(f"faultdeck.ReplayMiss: {error}\n")
        sys.stderr.write("".join(lines))

    return hook


def _open_quietly(deck: _Deck, *, checked: bool) -> None:
    """Open a deck the command line drives: its warnings are one line each on stderr, as
    the command's own are, and what the command said of the cassette already is not said
    again (``checked``: it read the cassette before it ran the program)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", FaultdeckWarning)
        deck.open()
    for found in caught:
        if not issubclass(found.category, FaultdeckWarning):
            warnings.warn_explicit(found.message, found.category, found.filename, found.lineno)
        elif not (checked and issubclass(found.category, CassetteWarning)):
            print(f"faultdeck: warning: {found.message}", file=sys.stderr)
