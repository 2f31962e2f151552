"""Attach a deck to a program's HTTP clients, with no change to its code.

    with fd.intercept(deck):
        agent.run()   # its httpx, openai, anthropic… requests record, replay and rehearse

Inside the block every request of the client libraries in ``ADAPTERS`` goes through the
deck's HTTP boundary exactly as ``fd.http.Transport`` would put it: the same kind, name,
key, redaction, faults and streams. A request already decided by a deck (a client wired
with ``fd.http.Transport``) is not routed again, so no call is recorded twice. One adapter
per library, in one table: how it is routed, how it is undone, the versions it knows; a
library not installed is skipped, one imported later is routed when it is imported, and
nothing stays patched once the last block ends.

``faultdeck record|replay|rehearse… -- python agent.py`` does the same for a whole program
(the bootstrap, ``faultdeck._bootstrap``); ``fd.http.Transport`` stays the seam for full
control of one client.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from .._deck.deck import Deck
from . import _install, _state
from ._table import ADAPTERS, Adapter

__all__ = ["ADAPTERS", "Adapter", "intercept"]


@contextmanager
def intercept(deck: Deck) -> Iterator[Deck]:
    """Route the HTTP requests of the clients in ``ADAPTERS`` through ``deck`` inside the
    block (blocks nest: the innermost deck answers); everything is put back after it.

    Args:
        deck: the deck that records, replays or rehearses the requests. The block does not
            open or close it.
    """
    _install.install()
    _state.enter(deck)
    try:
        yield deck
    finally:
        _state.leave(deck)
        _install.uninstall()
