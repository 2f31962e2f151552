"""A run's report, built from its state: the log's records, the index's counts, the clock."""

from __future__ import annotations

from .._base.clock import Clock, VirtualClock
from .._cassette.format import Recording
from .index import ReplayIndex
from .report import CallRecord, Report


def build_report(  # noqa: PLR0913 - keyword-only: the run's state, read once under its lock
    calls: tuple[CallRecord, ...],
    *,
    cassette: str,
    mode: str,
    index: ReplayIndex,
    recording: Recording | None,
    clock: Clock,
    harness_changed: tuple[str, str] | None,
    kept: str | None,
    stored: int,
    unanswered: tuple[str, ...],
    remote_tools: tuple[str, ...] = (),
) -> Report:
    """The report of a run so far, from its ``calls`` and its state."""
    return Report(
        cassette=cassette,
        mode=mode,
        entries=len(recording.entries) if recording else 0,
        used=index.served,
        live=sum(1 for c in calls if c.source == "live"),
        unused=index.unused_refs(),
        repeats=index.repeats(calls),
        misses=tuple(c for c in calls if c.source == "miss"),
        order_changes=index.order_changes,
        faults=sum(1 for c in calls if c.fault is not None),
        waited=clock.waited,
        sleeps=clock.sleeps if isinstance(clock, VirtualClock) else (),
        harness_changed=harness_changed,
        interrupted=bool(recording and recording.interrupted),
        calls=calls,
        kept=kept,
        stored=stored,
        unanswered=unanswered,
        remote_tools=remote_tools,
    )
