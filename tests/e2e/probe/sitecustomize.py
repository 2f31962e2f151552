"""A probe the end-to-end tests put on an unmodified program's path, behind faultdeck's
bootstrap (which runs the ``sitecustomize`` it hides): each real wait of a second or more
that the program starts is written to the file ``FAULTDECK_TEST_WAITS`` names, one line
each. A ``time.sleep`` is seen by its audit event (Python 3.12 and later; before, by
wrapping ``time.sleep`` when it is still the real one), an event loop's wait by the timeout
it hands its selector. On the deck's virtual clock a program starts none: its sleeps advance
the clock, and an idle loop's selector jumps to its next timer."""

from __future__ import annotations

import os
import selectors
import sys
import time
import types
from typing import Any

WAITS = os.environ.get("FAULTDECK_TEST_WAITS")
LONG = 1.0


def _note(what: str, seconds: float) -> None:
    with open(WAITS or os.devnull, "a", encoding="utf-8") as fh:
        fh.write(f"{what} {seconds:g} pid {os.getpid()}\n")


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if event == "time.sleep" and args and args[0] >= LONG:
        _note("time.sleep", args[0])


def _probe(cls: type[selectors.BaseSelector]) -> None:
    original = cls.select

    def select(self: Any, timeout: float | None = None) -> Any:
        if timeout is not None and timeout >= LONG:
            _note("select", timeout)
        return original(self, timeout)

    cls.select = select  # type: ignore[method-assign]


# Only in a program the bootstrap started: not in the faultdeck command that starts it.
if WAITS and os.environ.get("FAULTDECK_BOOTSTRAP") == "1":
    sys.addaudithook(_audit)
    if sys.version_info < (3, 12) and isinstance(time.sleep, types.BuiltinFunctionType):
        real_sleep = time.sleep  # not bound to the deck's clock: its sleeps are real

        def sleep(seconds: float) -> None:
            if seconds >= LONG:
                _note("time.sleep", seconds)
            real_sleep(seconds)

        time.sleep = sleep  # type: ignore[assignment]
    for name in ("EpollSelector", "PollSelector", "SelectSelector", "KqueueSelector"):
        if hasattr(selectors, name):
            _probe(getattr(selectors, name))
