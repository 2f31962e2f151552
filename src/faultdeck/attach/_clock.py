"""A program's time, bound to its deck's ``VirtualClock``: its own waits take no real time and
advance the clock, and its time readings read the clock.

While bound (``virtual_time(clock)`` until its undo is called)::

    time.sleep                      clock.sleep, then a real sleep(0) so other threads run
    asyncio.sleep, anyio.sleep      clock.sleep, then a timer due at once (see below)
    time.time, time.time_ns         the wall time at binding + the clock's advance since;
    datetime.now, .utcnow, .today,    with time-machine, which patches the C functions, so a
    date.today, time.localtime,       ``from datetime import datetime`` made before binding
    .gmtime, .strftime,               reads it too; without it only ``time.time`` and
    clock_gettime(CLOCK_REALTIME)     ``time.time_ns`` (the attributes) are bound
    time.monotonic, .monotonic_ns   the monotonic reading at binding + the same advance
    an event loop with only timers  jumps the clock to its next timer (see below)

Left real:

- ``time.perf_counter``: it measures how long code really ran (profilers, benchmarks,
  faultdeck's own ``SystemClock``), and nothing schedules on it: asyncio, anyio, urllib3 and
  the SDKs' retries read ``monotonic`` or ``time``; a program that times a virtual wait with it
  sees the wait take no time, which is what happened;
- what only an attribute patch binds (``time.sleep``, ``time.monotonic``, ``asyncio.sleep``;
  ``time.time`` without time-machine), reached through a reference taken before binding:
  ``from time import sleep``, a default argument such as ``sched``'s;
- waits in C on an OS clock: a lock's, a queue's, ``Event.wait``'s, a ``select`` timeout.

``_bind`` lists every name bound; nothing outside it is touched.

asyncio and anyio. A loop reads ``time.monotonic``, so its timers (``call_later``,
``wait_for``'s and anyio's deadlines) fall due on the virtual clock. A virtual sleep advances
the clock, then waits on a timer at its end, due at once: the loop runs the timers that fell
due before it first, so a timeout shorter than the sleep fires, as it would have (a loop whose
time is not ``time.monotonic``, uvloop's, gets one turn of the loop instead). Sleeps advance
the clock one after the other, as ``VirtualClock.asleep`` does: two tasks sleeping 10 s at
once move it 20 s. anyio's asyncio backend calls the ``sleep`` it imported from asyncio
(``from asyncio import sleep``), so that module's ``sleep`` is patched too when loaded, and
when anyio is imported while bound it takes the virtual one: undo puts the real one back in
either case. A loop built while bound gets a selector (``selectors.DefaultSelector``, what a
selector loop builds) that, when nothing is ready for ``IDLE_BEFORE_JUMP`` real seconds and a
timer is due, advances the clock to that timer (a wait, in ``clock.sleeps``), so a program
waiting on a timer alone does not wait forever. Real I/O or thread work slower than that under
a timeout sees the timeout fire early: under a deck its calls are replayed, not real. A timer
a day or more away (asyncio caps a select at a day) is a sleep-forever: the loop waits for
real. A loop built before binding keeps its selector and does not jump; uvloop is not bound.

One process has one time: a second ``virtual_time`` before the first's undo is refused with a
``FaultdeckError`` that says where the first was made.
"""

from __future__ import annotations

import math
import selectors
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from .._base.clock import VirtualClock
from .._base.errors import FaultdeckError

__all__ = ["bound_clock", "virtual_time"]

IDLE_BEFORE_JUMP = 0.05
"""Real seconds an event loop sits idle, a timer pending, before its clock jumps to the timer:
long enough for replayed calls and threads' work to come back first, short enough that a
program waiting on timers alone runs at about 20 timers a second."""

_DAY = 24 * 3600.0
"""asyncio's cap on one select (``base_events.MAXIMUM_SELECT_TIMEOUT``)."""

_SLEEP_IMPORTERS = ("anyio._backends._asyncio",)
"""Modules that sleep through a ``sleep`` they imported from asyncio."""

_real_sleep = time.sleep
_real_time = time.time
_real_time_ns = time.time_ns
_real_monotonic = time.monotonic
_real_monotonic_ns = time.monotonic_ns

_REAL: dict[str, Callable[..., Any]] = {}
"""The real ``asyncio.sleep``, kept at the first binding (asyncio is imported then)."""

_LOCK = threading.Lock()
_bound: _Binding | None = None
_said: list[str] = []  # the notices said in this process, each once


class _Binding:
    """One binding of the process's time to ``clock``: the readings it started from and the
    steps that undo it."""

    def __init__(self, clock: VirtualClock, site: str) -> None:
        self.clock = clock
        self.site = site
        self.start = clock.now()
        self.wall_ns = _real_time_ns()
        self.mono_ns = _real_monotonic_ns()
        self.undo: list[Callable[[], None]] = []
        self.done = False

    def elapsed(self) -> float:
        return self.clock.now() - self.start

    def time_ns(self) -> int:
        return self.wall_ns + round(self.elapsed() * 1e9)

    def time(self) -> float:
        return self.time_ns() / 1e9

    def monotonic_ns(self) -> int:
        return self.mono_ns + round(self.elapsed() * 1e9)

    def monotonic(self) -> float:
        return self.mono_ns / 1e9 + self.elapsed()

    def patch(self, owner: object, name: str, value: object) -> None:
        """Set ``owner.name`` to ``value`` until undone."""
        original = getattr(owner, name)
        setattr(owner, name, value)
        self.undo.append(lambda: setattr(owner, name, original))


def virtual_time(clock: VirtualClock) -> Callable[[], None]:
    """Bind this process's time to ``clock`` until the returned undo is called (idempotent).

    Args:
        clock: the deck's clock; the program's waits advance it and its readings read it.

    Returns:
        The undo: it puts back every original the binding replaced; a second call does
        nothing.

    Raises:
        FaultdeckError: the process's time is bound already (one process has one time).
    """
    global _bound
    caller = sys._getframe(1)
    with _LOCK:
        if _bound is not None:
            raise FaultdeckError(
                f"this process's time is bound to a VirtualClock already (by virtual_time at "
                f"{_bound.site}): call the undo that call returned before binding another "
                "clock; one process has one time"
            )
        binding = _Binding(clock, f"{caller.f_code.co_filename}:{caller.f_lineno}")
        try:
            _bind(binding)
        except BaseException:
            _unwind(binding)
            raise
        _bound = binding

    def undo() -> None:
        global _bound
        with _LOCK:
            if binding.done:
                return
            if _bound is binding:
                _bound = None
            _unwind(binding)

    return undo


def bound_clock() -> VirtualClock | None:
    """The clock the process's time is bound to now, or None."""
    binding = _bound
    return None if binding is None else binding.clock


def _bind(binding: _Binding) -> None:
    """Every patch, in the order ``_unwind`` takes them back the other way."""
    import asyncio  # for a program that uses it; the bootstrap binds before it runs

    if not _travel(binding):
        binding.patch(time, "time", _time)
        binding.patch(time, "time_ns", _time_ns)
        _say(
            "faultdeck: datetime.now(), date.today() and time.localtime() keep real time "
            "under the virtual clock (time.time() follows it): pip install time-machine"
        )
    binding.patch(time, "monotonic", _monotonic)
    binding.patch(time, "monotonic_ns", _monotonic_ns)
    binding.patch(time, "sleep", _sleep)
    if asyncio.sleep is not _asleep:
        _REAL["asyncio.sleep"] = asyncio.sleep
    binding.undo.append(_take_back_imported_sleeps)
    binding.patch(asyncio, "sleep", _asleep)
    binding.patch(asyncio.tasks, "sleep", _asleep)
    for name in _SLEEP_IMPORTERS:
        module = sys.modules.get(name)
        if module is not None:
            binding.patch(module, "sleep", _asleep)
    binding.patch(selectors, "DefaultSelector", _JumpingSelector)


def _unwind(binding: _Binding) -> None:
    binding.done = True
    while binding.undo:
        binding.undo.pop()()


def _travel(binding: _Binding) -> bool:
    """Bind the wall clock's C functions through time-machine; False when it is missing."""
    try:
        import time_machine
    except ImportError:
        return False
    travel = time_machine.travel(binding.wall_ns / 1e9, tick=False)
    traveller = travel.start()
    binding.undo.append(travel.stop)
    # time-machine's C functions read the travelling time from this method at every call:
    # computed from the clock, it needs no shift to follow a clock others advance too.
    traveller.time_ns = binding.time_ns  # type: ignore[method-assign]
    return True


def _take_back_imported_sleeps() -> None:
    """A module imported while bound took the virtual ``sleep``: give it the real one."""
    for name in _SLEEP_IMPORTERS:
        module = sys.modules.get(name)
        if module is not None and getattr(module, "sleep", None) is _asleep:
            module.sleep = _REAL["asyncio.sleep"]  # type: ignore[attr-defined]


def _say(line: str) -> None:
    if line not in _said:
        _said.append(line)
        sys.stderr.write(line + "\n")


def _virtual(seconds: object) -> bool:
    """A wait the clock can take: a number from zero to finite (the rest, a sleep-forever or
    a value the real sleep refuses, goes to the real one)."""
    return isinstance(seconds, int | float) and 0 <= seconds < math.inf


def _sleep(seconds: float) -> None:
    """``time.sleep`` on the bound clock."""
    binding = _bound
    if binding is None or not _virtual(seconds):
        _real_sleep(seconds)
        return
    binding.clock.sleep(seconds)
    _real_sleep(0)  # releases the GIL: a thread polling in a sleep loop starves no other


async def _asleep(delay: float, result: Any = None) -> Any:
    """``asyncio.sleep`` on the bound clock."""
    import asyncio  # imported already: binding patched it

    binding = _bound
    if binding is None or not _virtual(delay) or delay <= 0:
        return await _REAL["asyncio.sleep"](delay, result)
    loop = asyncio.get_running_loop()
    due = loop.time() + delay
    binding.clock.sleep(delay)
    if not isinstance(loop, asyncio.BaseEventLoop):
        # Its time is not time.monotonic (uvloop's is libuv's): one turn of the loop.
        return await _REAL["asyncio.sleep"](0, result)
    # Woken by a timer that is due already, the sleeper goes on after the timers that fell
    # due before it in the sleep (a shorter timeout fires first), as in a real sleep.
    future = loop.create_future()
    handle = loop.call_at(due, _wake, future, result)
    try:
        return await future
    finally:
        handle.cancel()


def _wake(future: Any, result: Any) -> None:
    if not future.cancelled():
        future.set_result(result)


def _time() -> float:
    binding = _bound
    return _real_time() if binding is None else binding.time()


def _time_ns() -> int:
    binding = _bound
    return _real_time_ns() if binding is None else binding.time_ns()


def _monotonic() -> float:
    binding = _bound
    return _real_monotonic() if binding is None else binding.monotonic()


def _monotonic_ns() -> int:
    binding = _bound
    return _real_monotonic_ns() if binding is None else binding.monotonic_ns()


class _JumpingSelector(selectors.DefaultSelector):
    """The selector of a loop built while bound: when the loop has nothing to do but wait
    for a timer, the clock jumps to the timer instead of the loop waiting for it."""

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        binding = _bound
        if binding is None or timeout is None or timeout <= 0 or timeout >= _DAY:
            return super().select(timeout)
        ready = super().select(min(timeout, IDLE_BEFORE_JUMP))
        if not ready:
            binding.clock.sleep(timeout)
        return ready
