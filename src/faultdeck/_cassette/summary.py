"""A cassette in brief, as ``faultdeck show --format json`` and the server's API give it."""

from __future__ import annotations

from typing import Any

from .format import Recording


def status(recording: Recording) -> str:
    """How the recorded run ended: ``ok``, ``failed`` or ``interrupted``."""
    if recording.interrupted:
        return "interrupted"
    return "failed" if recording.failed else "ok"


def show_json(recording: Recording, cassette: str) -> dict[str, Any]:
    """A cassette as ``faultdeck show --format json`` prints it.

    Args:
        recording: the cassette, loaded.
        cassette: what to call it (the path given, or the name in the server's folder).
    """
    return {
        "cassette": cassette,
        "header": recording.header.to_json(),
        "ended": recording.end,
        "status": status(recording),
        "interrupted": recording.interrupted,
        "in_flight": [i.seq for i in recording.in_flight()],
        "calls": [dict(e.to_json(), line=e.line) for e in recording.entries],
    }
