"""``[tool.faultdeck] max_age`` in pytest: a test's cassette last committed too long ago.

The format keeps no wall-clock time, so a cassette's age is that of its last git commit.
A test that replays a stale cassette gets an ``fd.StaleCassette`` warning, or fails under
``--faultdeck-strict``; an uncommitted cassette, or one outside git, is not stale.
"""

from __future__ import annotations

import time
from pathlib import Path

from .._base.config import Settings, last_commit, parse_age

_USES_ANSWERS = ("replay", "once", "append", "resume")
"""The modes in which a test's answers come from its cassette."""


def stale_message(
    cassette: Path, settings: Settings, *, mode: str, record: str, now: float | None = None
) -> str | None:
    """What to say of ``cassette`` when it was last committed longer ago than the project's
    ``max_age``; ``None`` when it was not, when no ``max_age`` is set, or when the test's
    mode does not replay it.

    Args:
        cassette: the test's cassette.
        settings: the project's settings (``max_age`` already checked on loading).
        mode: the test's deck mode.
        record: the command that re-records the test.
        now: the time to measure from (seconds since 1970); the clock's by default.
    """
    if settings.max_age is None or mode not in _USES_ANSWERS or not cassette.is_file():
        return None
    committed = last_commit(cassette)
    if committed.at is None:
        return None
    age = (time.time() if now is None else now) - committed.at
    if age <= parse_age(settings.max_age):
        return None
    day = time.strftime("%Y-%m-%d", time.gmtime(committed.at))
    return (
        f"{cassette}: last committed {day} ({int(age // 86400)} days ago), older than "
        f"max_age {settings.max_age}; the world it recorded may have moved: check it with "
        f"faultdeck drift {cassette} -- CMD, or re-record it: {record}"
    )
