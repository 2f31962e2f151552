"""How a resumed run tells a call its threads reordered from a divergence.

``resume`` replays what the killed run recorded and runs the rest live. A call that matches
nothing the old run numbered, numbered itself at or before the old run's last seq while
recorded calls remain, is a divergence in a program that makes one call at a time. Under a
thread pool or ``asyncio.gather`` it may only be early: the replayed calls return at once,
so a worker can number a call the killed run never reached before another worker asks for
a recorded call the killed run had numbered first.

Such a call waits for its turn (``TURN_WAIT`` at most): until every call the old run
numbered at or before its seq, recorded or in flight, has been asked again. It then runs
live, as the call the killed run had not reached. A call that is still ahead of the
recording when the wait ends, or that nobody else could ask for (no other thread, no other
task), is a divergence: ``ReplayMiss``, as before. A sync call waits on the run's lock (it
lets the others in); a caller on an event loop (``Deck.abegin``, here: ``acall``, the async
HTTP transport, the MCP session) waits without blocking the loop (``catch_up``). The
``Run`` owns one ``Turns``.
"""

from __future__ import annotations

import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from .._base.errors import ReplayMiss
from .._cassette.format import Entry, Intent
from .._keys.canonical import SCHEMA_DEFAULT
from .call import Call
from .index import ReplayIndex

if TYPE_CHECKING:
    import asyncio

TURN_WAIT = 2.0
"""How long (seconds) a resumed call ahead of the recording waits for the calls before it,
in real time (``time.perf_counter``: a program whose time follows a virtual clock reads
``time.monotonic`` from it)."""

_POLL = 0.002  # how often ``catch_up`` looks again (seconds)

AWAITS: ContextVar[bool] = ContextVar("faultdeck_awaits", default=False)
"""Set while ``Deck.abegin`` decides a call: its caller can wait in ``catch_up``."""


Miss = Callable[[Call, Sequence["Entry | Intent"]], ReplayMiss]
"""The run's ``ReplayMiss`` for a call, naming the calls it waited for."""


class Turns:
    """The waiting of a resumed call for the recorded calls before it (see the module).

    Args:
        lock: the run's lock: a sync call waits on it, letting the others in.
        index: the recorded calls still queued.
        in_flight: the intents in flight at the kill, by key (filled on opening).
        miss: makes the ``ReplayMiss`` of a call still ahead when its wait ends.
    """

    def __init__(
        self,
        lock: threading.RLock,
        index: ReplayIndex,
        in_flight: dict[str, deque[Intent]],
        miss: Miss,
    ) -> None:
        self._lock, self._index, self._in_flight, self._miss = lock, index, in_flight, miss
        self._turn: threading.Condition | None = None  # made when a call first waits

    def took_turn(self) -> None:
        """A recorded or in-flight call was asked: a call waiting for it may go on."""
        turn = self._turn
        if turn is not None:
            turn.notify_all()

    def waits_turn(self, call: Call) -> bool:
        """Whether ``call`` (ahead of the recording, under the lock) goes live after waiting
        for the recorded calls before it; ``False``: a divergence, as nobody else could ask
        for them. When the wait ends with some of them still not asked, it raises the
        call's ``ReplayMiss``, naming them. Decided by ``Deck.abegin`` with an event loop
        running here, the call is marked behind and waits in ``catch_up`` instead."""
        early = self._before(call.seq)
        if not early:
            return False
        loop = _running_loop()
        if loop is not None:
            # A sync call would stall the loop's tasks it waits for; abegin waits in catch_up.
            if AWAITS.get() and (_other_tasks(loop) or threading.active_count() > 1):
                call._behind = True
                return True
            return False
        if threading.active_count() == 1:
            return False  # nobody else could ask for the calls before it
        if self._turn is None:
            self._turn = threading.Condition(self._lock)
        deadline = time.perf_counter() + TURN_WAIT
        while early:
            left = deadline - time.perf_counter()
            if left <= 0:
                raise self._miss(call, early)  # still ahead: a divergence after all
            self._turn.wait(left)
            early = self._unasked(early)
        return True

    async def catch_up(self, call: Call) -> None:
        """Wait, without blocking the loop, until the recorded calls before ``call`` were
        asked; else raise its ``ReplayMiss``."""
        deadline = time.perf_counter() + TURN_WAIT
        with self._lock:
            early = self._before(call.seq)
        while True:
            with self._lock:
                early = self._unasked(early)
                if not early:
                    call._behind = False
                    return
                if time.perf_counter() >= deadline:
                    raise self._miss(call, early)
            await _sleep(_POLL)

    def _before(self, seq: int) -> list[Entry | Intent]:
        """The calls the old run numbered at or before ``seq`` (recorded, or in flight)
        still to be asked: a scan of what is left, made once per waiting call."""
        early: list[Entry | Intent] = [e for e in self._index.unused() if e.seq <= seq]
        early += (i for queue in self._in_flight.values() for i in queue if i.seq <= seq)
        return early

    def _unasked(self, early: list[Entry | Intent]) -> list[Entry | Intent]:
        """Those of ``early`` still to be asked: looked up one by one, however long the
        recording."""
        return [c for c in early if self._waiting(c)]

    def _waiting(self, call: Entry | Intent) -> bool:
        """Whether ``call`` is still to be asked: queued, or its intent still in flight."""
        if isinstance(call, Intent):
            return any(i is call for i in self._in_flight.get(call.key, ()))
        return self._index.queued(call)


def _running_loop() -> asyncio.AbstractEventLoop | None:
    """The event loop running in this thread, if any. None runs before ``asyncio`` is
    imported, and faultdeck imports it only where it awaits (a sync program never does)."""
    imported = sys.modules.get("asyncio")
    if imported is None:
        return None
    try:
        loop: asyncio.AbstractEventLoop = imported.get_running_loop()
    except RuntimeError:
        return None
    return loop


async def _sleep(seconds: float) -> None:
    """``asyncio.sleep``: a coroutine runs on a loop, so asyncio is imported by then."""
    import asyncio

    await asyncio.sleep(seconds)


def _other_tasks(loop: asyncio.AbstractEventLoop) -> bool:
    """Whether a task besides the current one runs on ``loop``."""
    import asyncio  # (a loop runs: imported)

    current = asyncio.current_task(loop)
    return any(task is not current and not task.done() for task in asyncio.all_tasks(loop))


async def abegin(  # noqa: PLR0913 - begin's options, by keyword
    self: Any,
    kind: str,
    name: str,
    args: Any,
    *,
    schema_version: str = SCHEMA_DEFAULT,
    step: Any = None,
    meta: Any = None,
    shaped: frozenset[str] = frozenset(),
    retarget: bool = False,
) -> Call:
    """``begin`` for a caller on an event loop (``acall``, the async HTTP transport, the
    MCP session): the same call through ``begin``, but a resumed call that another task's
    reorder put ahead of the recorded calls before it waits for them without blocking
    the loop, where ``begin`` would raise ``ReplayMiss`` rather than stall them."""
    token = AWAITS.set(True)  # it may wait for its turn in catch_up, not on the lock
    try:
        call: Call = self.begin(
            kind, name, args, schema_version=schema_version, step=step, meta=meta,
            shaped=shaped, retarget=retarget,
        )  # fmt: skip
    finally:
        AWAITS.reset(token)
    if call._behind:  # resumed ahead of the recording: wait for the calls before it
        await self._run.turns.catch_up(call)
    return call
