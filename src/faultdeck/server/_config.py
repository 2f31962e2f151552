"""What a ``faultdeck serve`` server runs with: one frozen value, passed to every route."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal, get_args

from .._base.config import Mode, Repeats
from ..faults import FaultPlan

ServedRepeats = Literal["cycle", "strict"]
"""What a request asked more often than its cassette recorded it gets (``--repeats``)."""
SERVED_REPEATS: tuple[ServedRepeats, ...] = get_args(ServedRepeats)
DECK_REPEATS: dict[ServedRepeats, Repeats] = {"cycle": "cycle", "strict": "miss"}
"""The deck's repeat policy for each: ``strict`` is the deck's default, a miss."""
REPLAYS = frozenset({"replay", "once"})
"""The server modes whose cassettes replay (``once``: those that exist)."""

MAX_BODY = 8 * 1024 * 1024
"""The largest request body the server reads (bytes), unless told otherwise."""


@dataclass(frozen=True, slots=True)
class ServerConfig:
    """The server's settings.

    Attributes:
        cassettes: the folder every cassette name is resolved in (``DIR/{name}.jsonl``).
        mode: the mode of every cassette's deck.
        upstream: the provider's base URL requests are forwarded to when recording.
        faults: a fault plan for the whole server.
        token: when set, every route requires it (``X-Faultdeck-Token``, or a page's
            ``?token=`` then its cookie).
        max_body: the largest request body read, in bytes; a larger one is a 413.
        repeats: what a replayed request asked more often than its cassette recorded it
            gets: ``cycle`` (its recorded answers again from the first, so the program's
            next run gets the answers of the first) or ``strict`` (a 404 miss, as a retry
            storm). A cassette that records (``append``, ``resume``) records a repeat live.
    """

    cassettes: Path
    mode: Mode = "replay"
    upstream: str | None = None
    faults: FaultPlan | None = None
    token: str | None = None
    max_body: int = MAX_BODY
    repeats: ServedRepeats = "cycle"
