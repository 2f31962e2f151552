"""How a long command shows that it is getting on: ``rehearse`` (cells) and ``replay --repeat``
(runs).

On a terminal, a rich bar on stderr: what is done of how many, failures so far, time left.
Not on a terminal, a short line on stderr now and then (at most every ``EVERY_SECONDS`` and
every ``EVERY_SHARE`` of the work, whichever is rarer) and one when a stage ends:
``faultdeck: 12/40 cells, 1 finding, ~30 s left``. stdout stays the report; ``--quiet``
shows nothing. The library calls a ``Meter`` as ``progress(done, total)``; the command line
counts failures itself (``Meter.failed``), since it is the one that judges a run.
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Protocol

import click
from rich.console import Console
from rich.progress import BarColumn, Progress, TaskID, TextColumn

EVERY_SECONDS = 5.0
"""The shortest time between two progress lines when stderr is not a terminal."""
EVERY_SHARE = 0.1
"""The least share of the work done between two progress lines when stderr is not a
terminal."""


@dataclass(frozen=True, slots=True)
class Reading:
    """Where a stage stands.

    Attributes:
        label: what the stage works on (a cassette, when there are several), or ``""``.
        done: how many units are done.
        total: how many there are (0 until the library says).
        failures: how many failed so far, or ``None`` while it is not known.
        elapsed: seconds since the stage began.
    """

    label: str
    done: int
    total: int
    failures: int | None
    elapsed: float

    @property
    def left(self) -> float | None:
        """Seconds left, from the pace so far; ``None`` before anything is done."""
        if self.done <= 0 or self.total <= 0:
            return None
        return self.elapsed / self.done * max(self.total - self.done, 0)


class View(Protocol):
    """Where readings go: a bar, lines, or nowhere; ``text`` is the reading in words."""

    def begin(self, reading: Reading, text: str) -> None:
        """A stage began."""

    def show(self, reading: Reading, text: str) -> None:
        """The stage moved on."""

    def end(self, reading: Reading, text: str) -> None:
        """The stage ended (``text`` says how long it took)."""


class Meter:
    """Counts a stage's units and failures and shows them; callable as the library's
    ``progress(done, total)``. Safe to call from several threads."""

    def __init__(
        self,
        view: View,
        *,
        noun: str,
        failure: tuple[str, str],
        live: bool = True,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """Args:
        view: where readings go.
        noun: the unit of work, plural (``cells``, ``runs``).
        failure: a failure, for one and for many: ``("finding", "findings")``.
        live: whether failures are counted as units finish; if not, they are shown only
            once known (``failed`` then ``end``, at a stage's end).
        clock: seconds, for the pace and the time left.
        """
        self._view, self._noun, self._failure = view, noun, failure
        self._live, self._known, self._clock = live, live, clock
        self._lock = threading.Lock()
        self._label, self._done, self._total, self._failures = "", 0, 0, 0
        self._start = clock()

    def __call__(self, done: int, total: int) -> None:
        """``done`` of ``total`` units are done (the library's ``progress(done, total)``)."""
        with self._lock:
            self._done, self._total = done, total
            self._show()

    def failed(self, count: int = 1) -> None:
        """Count ``count`` more failures."""
        with self._lock:
            self._failures += count
            if self._live:
                self._show()

    def begin(self, label: str = "", *, total: int = 0) -> None:
        """Start a stage (a cassette) of ``total`` units (0: the library will say): its
        units and failures count from 0."""
        with self._lock:
            self._label, self._done, self._total, self._failures = label, 0, total, 0
            self._start = self._clock()
            reading = self.reading()
            self._view.begin(reading, self.words(reading))

    def end(self) -> None:
        """End the stage: its last reading, with its failures."""
        with self._lock:
            self._known = True
            reading = self.reading()
            self._view.end(reading, self.words(reading, final=True))
            self._known = self._live

    def _show(self) -> None:
        reading = self.reading()
        self._view.show(reading, self.words(reading))

    def reading(self) -> Reading:
        """Where the stage stands now."""
        failures = self._failures if self._known else None
        return Reading(self._label, self._done, self._total, failures, self._clock() - self._start)

    def words(self, reading: Reading, *, final: bool = False) -> str:
        """``12/40 cells, 1 finding, ~30 s left`` (``…, in 12 s`` at a stage's end)."""
        parts = [f"{reading.done}/{reading.total or '?'} {self._noun}"]
        if reading.failures is not None:
            one, many = self._failure
            parts.append(f"{reading.failures} {one if reading.failures == 1 else many}")
        left = reading.left
        if final:
            parts.append(f"in {duration(reading.elapsed)}")
        elif left is not None:
            parts.append(f"~{duration(left)} left")
        head = f"{reading.label}: " if reading.label else ""
        return head + ", ".join(parts)


def duration(seconds: float) -> str:
    """``4 s``, ``3 min``, ``1.5 h``: a time to the precision a reader wants of an estimate."""
    if seconds < 90:
        return f"{max(0, math.ceil(seconds))} s"
    if seconds < 90 * 60:
        return f"{round(seconds / 60)} min"
    return f"{seconds / 3600:.1f} h"


class Silent:
    """``--quiet``: nothing."""

    def begin(self, reading: Reading, text: str) -> None:
        """Nothing."""

    def show(self, reading: Reading, text: str) -> None:
        """Nothing."""

    def end(self, reading: Reading, text: str) -> None:
        """Nothing."""


class Lines:
    """Not a terminal: ``faultdeck: …`` lines on stderr, seldom, and one as a stage ends."""

    def __init__(self) -> None:
        self._shown_at = 0.0
        self._shown_done = 0

    def begin(self, reading: Reading, text: str) -> None:
        """Count the intervals from the stage's start."""
        self._shown_at, self._shown_done = 0.0, 0

    def show(self, reading: Reading, text: str) -> None:
        """A line once both enough time and enough of the work went by since the last."""
        if reading.total <= 0 or reading.done >= reading.total:
            return  # nothing to measure by yet, or the stage's end says it
        if reading.elapsed - self._shown_at < EVERY_SECONDS:
            return
        if reading.done - self._shown_done < max(1, math.ceil(reading.total * EVERY_SHARE)):
            return
        self._shown_at, self._shown_done = reading.elapsed, reading.done
        click.echo(f"faultdeck: {text}", err=True)

    def end(self, reading: Reading, text: str) -> None:
        """The stage's last line."""
        click.echo(f"faultdeck: {text}", err=True)


class Bar:
    """A terminal: one rich bar on stderr, redrawn by hand (no refresh thread beside the
    worker processes a rehearsal forks), gone when the command ends."""

    def __init__(self, bar: Progress) -> None:
        self._bar = bar
        self._task: TaskID = bar.add_task("", total=None, status="")

    def begin(self, reading: Reading, text: str) -> None:
        """Start the bar afresh for this stage."""
        total = reading.total or None
        self._bar.reset(self._task, total=total, description="faultdeck", status=text)
        self._bar.refresh()

    def show(self, reading: Reading, text: str) -> None:
        """Move the bar."""
        total = reading.total or None
        self._bar.update(self._task, completed=reading.done, total=total, status=text)
        self._bar.refresh()

    def end(self, reading: Reading, text: str) -> None:
        """Show the stage's last state."""
        self.show(reading, text)


@contextlib.contextmanager
def meter(
    *,
    noun: str,
    failure: tuple[str, str],
    live: bool = True,
    quiet: bool = False,
    err: Console | None = None,
) -> Iterator[Meter]:
    """A ``Meter`` shown on stderr as a bar (a terminal) or lines (not), or not at all
    (``quiet``); the bar is cleared when the block ends.

    Args:
        noun: the unit of work, plural (``cells``, ``runs``).
        failure: a failure, for one and for many: ``("finding", "findings")``.
        live: whether failures are counted as units finish (see ``Meter``).
        quiet: show nothing.
        err: the console for stderr (rich's ``FORCE_COLOR``/``TTY_COMPATIBLE`` decide
            whether it is a terminal, as they do for rich everywhere).
    """
    console = err or Console(stderr=True, highlight=False)
    if quiet:
        yield Meter(Silent(), noun=noun, failure=failure, live=live)
    elif not console.is_terminal:
        yield Meter(Lines(), noun=noun, failure=failure, live=live)
    else:
        columns = (
            TextColumn("{task.description}"),
            BarColumn(),
            TextColumn("{task.fields[status]}"),
        )
        # stdout is the report: what a program prints there stays there, not above the bar.
        with Progress(
            *columns, console=console, auto_refresh=False, transient=True, redirect_stdout=False
        ) as bar:
            yield Meter(Bar(bar), noun=noun, failure=failure, live=live)
