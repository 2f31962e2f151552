"""The environment and a deck: ``Deck.from_env()``, a deck configured by ``FAULTDECK_*``
variables and closed at exit; and ``Deck.env()``, a variable read as a boundary call.

The command line drives any program this way: it sets the variables, the program's deck
reads them, and at exit the deck writes its report where ``FAULTDECK_REPORT`` says.
"""

from __future__ import annotations

import atexit
import os
import sys
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol, TypeVar, cast

import orjson

from .._base import terms
from .._base.clock import VirtualClock
from .._base.config import check_choice
from .._base.errors import (
    CassetteWarning,
    ConfigError,
    FaultdeckWarning,
    ReplayMiss,
)
from .._base.frames import frame_lines, own_frames
from .._cassette.session import hash_value
from .._keys.redact import Redactor
from ..faults import FaultPlan
from .call import Call
from .fork import fork_from_env
from .report import Report


class _Deck(Protocol):
    def open(self) -> None: ...
    def close(self, status: str = "ok") -> None: ...
    def report(self) -> Report: ...


D = TypeVar("D", bound=_Deck)


class _EnvDeck(Protocol):
    """What ``env`` reads of its deck."""

    path: str
    environ: Mapping[str, str]
    public_env: frozenset[str]
    redactor: Redactor

    def begin(self, kind: str, name: str, args: Any) -> Call: ...


def deck_from_env(cls: type[D], env: Mapping[str, str], kwargs: dict[str, Any]) -> D:
    """The body of ``Deck.from_env``: build and open (``built_from_env``), and close at exit.

    When ``FAULTDECK_TERMS`` says the command line runs this program, its hints name the
    commands and a replay miss that ends the program is shown without faultdeck's frames.
    At exit the deck is closed (``error`` when an exception ended the program) and its
    report written where ``FAULTDECK_REPORT`` says.

    One deck per process and cassette: a later call returns the deck the first one made
    (under the command line, the one the bootstrap made for the program), so that a
    program's calls are recorded once, by one writer.
    """
    made = _MADE.get((os.getpid(), env.get("FAULTDECK_CASSETTE")))
    if made is not None:
        return cast(D, made)
    said = terms.from_env(env)
    if said is not None:  # the command line runs this program: hints name its commands
        terms.use(said)
        sys.excepthook = _misses_first(sys.excepthook, debug=bool(env.get("FAULTDECK_DEBUG")))
    deck = built_from_env(cls, env, kwargs)
    report_path = env.get("FAULTDECK_REPORT")

    def finish() -> None:
        # An unhandled exception reached the top: the run ended, but not well.
        ended = getattr(sys, "last_value", None)
        refused = str(ended).splitlines()[0] if isinstance(ended, ConfigError) else None
        write_report(deck, "ok" if ended is None else "error", report_path, refused=refused)

    atexit.register(finish)
    _MADE[(os.getpid(), env.get("FAULTDECK_CASSETTE"))] = deck
    return deck


_MADE: dict[tuple[int, str | None], Any] = {}
"""The deck ``deck_from_env`` made, by process (a forked child makes its own) and cassette."""


def built_from_env(cls: type[D], env: Mapping[str, str], kwargs: dict[str, Any]) -> D:
    """The deck the ``FAULTDECK_*`` variables in ``env`` describe, opened; nothing else is
    touched (no exit hook, no ``sys.excepthook``, no global terms), so that the command line
    can serve a deck itself for a program that is not Python.

    Reads ``FAULTDECK_CASSETTE`` (required), ``FAULTDECK_MODE``, ``FAULTDECK_FAULTS`` (a
    fault plan file), ``FAULTDECK_CLOCK`` (``virtual`` for a clock that never waits),
    ``FAULTDECK_DEFER_REPLACE`` (``1``: a fresh recording stays beside the cassette when
    the run ends, for ``faultdeck record`` to move once the program exits 0), and for
    ``FAULTDECK_MODE=fork`` ``FAULTDECK_FORK_PARENT`` and ``FAULTDECK_FORK_AT`` (the
    ``parent`` and ``at`` that ``faultdeck fork`` sets), and ``FAULTDECK_ALLOW_SIDE_EFFECTS``
    (``0``: side effects run their stand-ins whatever the program passes, as
    ``faultdeck drift`` asks; ``1``: they may run). With ``FAULTDECK_TERMS`` set, opening
    warns in one line each (``FAULTDECK_CASSETTE_CHECKED=1``: not of what the command said
    of the cassette already). ``FAULTDECK_REPORT`` is ``write_report``'s to use.

    Raises:
        ConfigError: ``FAULTDECK_CASSETTE`` is not set, or a value is not valid.
    """
    fork_from_env(env, kwargs)
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
    # Set by `faultdeck drift`: "0" holds side effects to their stand-ins whatever the
    # program asks (the drift run is a check, not a run); "1" lets them run.
    allow = env.get("FAULTDECK_ALLOW_SIDE_EFFECTS")
    if allow == "0":
        kwargs["allow_side_effects"] = False
    elif allow == "1":
        kwargs.setdefault("allow_side_effects", True)
    deck = cls(cassette, mode=env.get("FAULTDECK_MODE") or None, environ=env, **kwargs)  # type: ignore[call-arg]
    if terms.from_env(env) is None:
        deck.open()
    else:
        _open_quietly(deck, checked=env.get("FAULTDECK_CASSETTE_CHECKED") == "1")
    return deck


def write_report(
    deck: _Deck, status: str, report_path: str | None, *, refused: str | None = None
) -> None:
    """Close ``deck`` as ``status`` (``ok`` or ``error``) and write its report as JSON to
    ``report_path`` (``FAULTDECK_REPORT``), if given: what the commands read back. With
    ``refused``, the line of the faultdeck input error that ended the program (a fault its
    call cannot show): the command says it and exits 2."""
    deck.close(status)
    if report_path:
        said = deck.report().to_dict()
        if refused is not None:
            said["refused"] = refused
        with open(report_path, "wb") as fh:
            fh.write(orjson.dumps(said, option=orjson.OPT_INDENT_2))


def _misses_first(
    shows: Callable[[type[BaseException], BaseException, TracebackType | None], Any],
    *,
    debug: bool = False,
) -> Callable[[type[BaseException], BaseException, TracebackType | None], None]:
    """A ``sys.excepthook`` that shows a replay miss as pytest's plugin does: the miss first
    (what diverged, after how many agreeing calls, which argument changed), then the
    program's own frames, the SDK's, the libraries' and faultdeck's hidden (``debug``,
    ``faultdeck --debug``: the whole traceback); and leaves a faultdeck input error
    (``ConfigError``) to the command, which says it in one line (the report carries it,
    ``write_report``)."""

    def hook(kind: type[BaseException], error: BaseException, tb: TracebackType | None) -> None:
        if isinstance(error, ConfigError):  # bad input: the command says it in one line
            return
        if not isinstance(error, ReplayMiss) or debug:
            shows(kind, error, tb)
            return
        lines = [f"faultdeck.ReplayMiss: {error}", ""]
        lines += frame_lines(own_frames(tb, Path.cwd()))
        lines.append(_HIDDEN)
        sys.stderr.write("\n".join(lines) + "\n")

    return hook


_HIDDEN = "(the libraries' and faultdeck's frames are hidden; faultdeck --debug … shows them)"


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


_SECRETISH = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH")


def env(
    self: Any, name: str, default: str | None = None, *, public: bool | None = None
) -> str | None:
    """Read an environment variable as a boundary call of kind ``env`` (``deck.env``).

    The value is stored as a hash unless the variable is public (``public=True``, or
    listed in ``public_env``); names that look like credentials are never public. On
    replay a public value comes from the cassette; a hashed one is read from the
    environment and must hash the same as it did when recorded.

    Raises:
        ReplayMiss: the variable's value differs from the recording.
    """
    deck: _EnvDeck = self
    is_public = name in deck.public_env if public is None else public
    if is_public and any(part in name.upper() for part in _SECRETISH):
        is_public = False
    live = deck.environ.get(name)
    stored: str | None = None
    if live is not None:
        stored = deck.redactor.redact_text(live) if is_public else hash_value(live)
    with deck.begin("env", name, {}) as call:
        call.inject()
        if call.recorded is None:
            call.result(stored, stored=stored)
            return default if live is None else live
        recorded = call.replay()
    if is_public:
        return default if recorded is None else cast(str, recorded)
    if recorded != stored:
        raise ReplayMiss(
            f"replay miss at seq {call.seq}: env {name} differs from the recording in "
            f"{deck.path} (recorded {recorded or 'unset'}, now {stored or 'unset'}); "
            f"set it as it was, or re-record with {terms.current().about(deck.path).record}",
            seq=call.seq,
            kind="env",
            name=name,
            key=call.key,
            agreed=sum(r.source == "replay" for r in call._ledger.log) - 1,
            nearest=None,
            diff=(("value", recorded, stored),),
        )
    return default if live is None else live
