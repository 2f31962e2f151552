"""Clocks: where faultdeck reads and waits for time. Passed in, never global.

``SystemClock`` is the real one. ``VirtualClock`` advances on ``sleep`` and never waits, so
backoffs, Retry-After waits and recorded latencies run offline in microseconds, and it
reports how long a run would have waited.

``asyncio`` is imported where a clock is first awaited: a program that never awaits one (a
command rehearsal's cell, a sync agent) does not pay for importing it.
"""

from __future__ import annotations

import threading
import time
from typing import Protocol, runtime_checkable


@runtime_checkable
class Clock(Protocol):
    """What faultdeck needs of a clock."""

    def now(self) -> float:
        """Seconds on a monotonic scale."""
        ...

    def sleep(self, seconds: float) -> None:
        """Wait ``seconds``."""
        ...

    async def asleep(self, seconds: float) -> None:
        """Wait ``seconds`` without blocking the event loop."""
        ...

    def advance(self, seconds: float) -> None:
        """Let ``seconds`` pass as work (a slow call), not counted as waiting."""
        ...

    async def aadvance(self, seconds: float) -> None:
        """``advance`` without blocking the event loop."""
        ...

    @property
    def waited(self) -> float:
        """Total seconds spent in ``sleep`` and ``asleep`` so far."""
        ...


class SystemClock:
    """The real clock: ``time.perf_counter`` and real sleeps."""

    def __init__(self) -> None:
        self._waited = 0.0
        self._lock = threading.Lock()

    def now(self) -> float:
        """Seconds from ``time.perf_counter``."""
        return time.perf_counter()

    def sleep(self, seconds: float) -> None:
        """Block for ``seconds``."""
        if seconds > 0:
            self._add(seconds)
            time.sleep(seconds)

    async def asleep(self, seconds: float) -> None:
        """Await ``asyncio.sleep(seconds)``."""
        if seconds > 0:
            self._add(seconds)
            import asyncio  # (on first use: see the module)

            await asyncio.sleep(seconds)

    def advance(self, seconds: float) -> None:
        """Block for ``seconds`` without counting it as waiting."""
        if seconds > 0:
            time.sleep(seconds)

    async def aadvance(self, seconds: float) -> None:
        """Await ``asyncio.sleep(seconds)`` without counting it as waiting."""
        if seconds > 0:
            import asyncio  # (on first use: see the module)

            await asyncio.sleep(seconds)

    def _add(self, seconds: float) -> None:
        with self._lock:
            self._waited += seconds

    @property
    def waited(self) -> float:
        """Total seconds slept."""
        return self._waited


class VirtualClock:
    """A clock that advances on ``sleep`` and never waits.

    Args:
        start: the reading of ``now()`` before anything slept.
    """

    def __init__(self, start: float = 0.0) -> None:
        self._now = start
        self._waited = 0.0
        self._sleeps: list[float] = []
        self._lock = threading.Lock()

    def now(self) -> float:
        """The virtual time."""
        return self._now

    def sleep(self, seconds: float) -> None:
        """Advance by ``seconds`` at once."""
        if seconds > 0:
            with self._lock:
                self._now += seconds
                self._waited += seconds
                self._sleeps.append(seconds)

    async def asleep(self, seconds: float) -> None:
        """Advance by ``seconds`` at once, yielding to the event loop like a real sleep."""
        self.sleep(seconds)
        import asyncio  # (on first use: see the module)

        await asyncio.sleep(0)

    def advance(self, seconds: float) -> None:
        """Move time forward without counting it as waiting (work that took time)."""
        if seconds > 0:
            with self._lock:
                self._now += seconds

    async def aadvance(self, seconds: float) -> None:
        """``advance``, yielding to the event loop like a real sleep."""
        self.advance(seconds)
        import asyncio  # (on first use: see the module)

        await asyncio.sleep(0)

    @property
    def waited(self) -> float:
        """Total seconds slept."""
        return self._waited

    @property
    def sleeps(self) -> tuple[float, ...]:
        """Each sleep's length, in order."""
        return tuple(self._sleeps)
