"""The bootstrap's work in a program the command line runs: its deck, from the
``FAULTDECK_*`` variables, and every HTTP client of ``fd.attach.ADAPTERS`` routed through it
for the process's life; on a virtual clock, the program's own time too.

Only the process the command started records: it writes its pid in ``FAULTDECK_OWNER``, and a
process it starts routes nothing, saying so in one line the first time it makes a request
that would have been recorded. A program that asks for ``fd.Deck.from_env()`` itself gets
this deck: its calls are recorded once.
"""

from __future__ import annotations

import os
import sys

from .._base.clock import VirtualClock
from .._base.errors import FaultdeckError
from .._deck.deck import Deck
from ..attach import _install, _state
from ..attach._clock import virtual_time

OWNER = "FAULTDECK_OWNER"
"""The pid of the process that records."""


def start() -> None:
    """Build the deck and route the clients; a deck that cannot be built ends the program
    (exit 2) with its one line, before the program makes a call."""
    environ = os.environ
    me = str(os.getpid())
    owner = environ.get(OWNER)
    if owner and owner != me:
        _state.notice(
            f"faultdeck: {_program()} (pid {me}) was started by the recorded program (pid "
            f"{owner}); only that one records: this one's requests go to the network as "
            "they are"
        )
        _install.install()
        return
    environ[OWNER] = me
    try:
        deck = Deck.from_env()
    except FaultdeckError as exc:
        sys.stderr.write(f"faultdeck: {exc}\n")
        sys.stderr.flush()
        os._exit(2)  # before the program runs: nothing of it to clean up
    _install.install()
    _state.enter(deck)
    if isinstance(deck.clock, VirtualClock):
        virtual_time(deck.clock)  # for the process's life: its waits take no real time


def _program() -> str:
    argv = getattr(sys, "orig_argv", None) or sys.argv
    return " ".join(argv[:3]) if argv else sys.executable
