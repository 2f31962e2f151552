"""What a ``faultdeck serve`` server runs with: one frozen value, passed to every route."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .._base.config import Mode
from ..faults import FaultPlan

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
    """

    cassettes: Path
    mode: Mode = "replay"
    upstream: str | None = None
    faults: FaultPlan | None = None
    token: str | None = None
    max_body: int = MAX_BODY
