"""An entrypoint whose process dies under one fault: the workshop loop, which exits its
process at once (as a segfault or an ``os._exit`` in a library would) after a timeout."""

from __future__ import annotations

import os

import faultdeck as fd
from faultdeck.workshop import POLICY, Workshop


def dies_on_timeout(deck: fd.Deck, clock: fd.VirtualClock) -> list[fd.Outcome]:
    outcomes = Workshop(deck).run(POLICY, clock=clock)
    if any("timeout" in str(call.fault) for call in deck.calls):
        os._exit(3)
    return outcomes
