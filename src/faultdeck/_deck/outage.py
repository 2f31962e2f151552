"""Live calls that got no answer: an outage, not an answer of the world to record.

A call that never reached the world (connection refused, a name that does not resolve, no
connection in time: ``unreached``) or reached it and heard nothing back in time (a read
timeout) is raised to the program and never written. The run counts such calls, and a
recording that has any does not replace the cassette it records over: a replay of it would
miss where the service was down. ``outage_line`` is how every edge says so, in one form:

    recorded 0 of 6 calls: 6 got no answer (ConnectError); runs/base.jsonl kept, the new
    recording is in runs/base.partial.jsonl
"""

from __future__ import annotations

from collections.abc import Sequence

from .._base.words import plural
from .._cassette.errorjson import unreached

# Timeouts while waiting for an answer, by class name and top module anywhere in the chain
# (httpx's and httpx2's, and what the SDKs wrap them in). The builtin ``TimeoutError`` is not
# one: a tool raises it for its own reasons (a lock, a deadline), and it replays as raised.
_TIMEOUTS = frozenset({"ReadTimeout", "WriteTimeout", "PoolTimeout", "TimeoutException"})
_TIMEOUT_MODULES = ("httpx", "httpx2", "httpcore", "httpcore2")


def no_answer(exc: BaseException) -> bool:
    """Whether ``exc`` says a live call got no answer: it never reached the world
    (``unreached``), or nothing came back in time."""
    if unreached(exc):
        return True
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        cls = type(current)
        if cls.__name__ in _TIMEOUTS and cls.__module__.split(".")[0] in _TIMEOUT_MODULES:
            return True
        current = current.__cause__ or current.__context__
    return False


def outage_line(
    *,
    mode: str,
    stored: int,
    used: int,
    unanswered: Sequence[str],
    cassette: str,
    kept: str | None,
) -> str:
    """What a run that met an outage left: ``{verb} {held} of {made} calls: {n} got no
    answer ({types}); …``, then the cassette kept and where the new recording is
    (``kept``), or, for a cassette written in place, that it lacks those calls.

    Args:
        mode: the deck's mode (``append`` counts only the calls it added; ``record``,
            ``resume`` and ``fork`` the calls replayed too).
        stored: the calls the run wrote.
        used: the recorded calls that answered a call.
        unanswered: the error type of each call that got no answer.
        cassette: the cassette, as the user named it.
        kept: where the new recording is, beside the cassette it did not replace; ``None``
            when it was written in place (nothing to protect, or ``append``).
    """
    verb = {"append": "appended", "resume": "resumed"}.get(mode, "recorded")
    held = stored if mode == "append" else stored + used
    made = held + len(unanswered)
    types = ", ".join(sorted(set(unanswered)))
    head = f"{verb} {held} of {plural(made, 'call')}: {len(unanswered)} got no answer ({types})"
    if kept is not None:
        return f"{head}; {cassette} kept, the new recording is in {kept}"
    return (
        f"{head}; {cassette} holds only the answered ones, and a replay misses at the others: "
        "record again once the service answers"
    )
