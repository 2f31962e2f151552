"""A replay miss as pytest reports it: the miss first, then the test's own frames.

A miss raised through an SDK passes through dozens of frames (the SDK's, httpx's,
faultdeck's) that say nothing about the test; what the reader needs is in the message (which
call, after how many agreeing calls, which argument changed, the command that re-records the
test) and in the test's own lines that made the call. ``MissReport`` is what pytest prints
for it instead of its traceback: pytest renders any report with ``toterminal``, reads
``reprcrash`` for its one-line summaries, and stores ``str()`` where it needs text (JUnit
XML). pytest-xdist would carry it from a worker to the controller as that text, losing
``reprcrash``; ``to_data`` and ``from_data`` carry it whole (see the plugin's
``pytest_report_to_serializable``).
"""

from __future__ import annotations

import functools
import linecache
import os
import traceback
from dataclasses import dataclass
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any, Protocol

_PACKAGE = str(Path(__file__).resolve().parents[1]) + os.sep


@functools.cache
def _libraries() -> tuple[str, ...]:
    """The folders Python's and the installed libraries' modules are in (asked once, when
    a miss is first shown)."""
    import sysconfig

    paths = sysconfig.get_paths()
    folders = (paths.get(name) for name in ("stdlib", "platstdlib", "purelib", "platlib"))
    return tuple(sorted({str(Path(folder).resolve()) + os.sep for folder in folders if folder}))


HIDDEN = "(faultdeck's and the libraries' frames are hidden; --tb=long or --fulltrace shows them)"


class Writer(Protocol):
    """The part of pytest's terminal writer a report uses."""

    def line(self, s: str = "", **markup: bool) -> None:
        """Write ``s`` and a new line, in ``markup`` (``red=True``, ``bold=True``…)."""


@dataclass(frozen=True, slots=True)
class Frame:
    """One of the test's frames: where it was when the miss was raised.

    Attributes:
        path: the file, relative to where pytest was run when it is below it.
        lineno: the 1-based line.
        name: the function.
        line: the source line, stripped (empty when the source is not available).
    """

    path: str
    lineno: int
    name: str
    line: str


@dataclass(frozen=True, slots=True)
class Crash:
    """Where pytest's one-line summaries say the test failed (``--tb=line``, ``-ra``).

    Attributes:
        path: the file of the test's deepest frame.
        lineno: its line.
        message: the miss's first line.
    """

    path: str
    lineno: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.lineno}: {self.message}"


@dataclass(frozen=True, slots=True)
class MissReport:
    """What pytest prints for a test that failed on a replay miss.

    Attributes:
        message: the miss's message, its type first.
        frames: the test's own frames, outermost first (none shown with ``--tb=line``).
        reprcrash: the deepest of them, with the message's first line.
    """

    message: str
    frames: tuple[Frame, ...]
    reprcrash: Crash

    def lines(self) -> list[str]:
        """The report as lines of text."""
        out = self.message.splitlines()
        if not self.frames:
            return out
        out.append("")
        for frame in self.frames:
            out.append(f"{frame.path}:{frame.lineno}: in {frame.name}")
            if frame.line:
                out.append(f"    {frame.line}")
        out.append(HIDDEN)
        return out

    def toterminal(self, tw: Writer) -> None:
        """Write the report to pytest's terminal: the message as pytest writes errors."""
        shown = self.lines()
        count = len(self.message.splitlines())
        for line in shown[:count]:
            tw.line(line, red=True, bold=True)
        for line in shown[count:]:
            tw.line(line)

    def __str__(self) -> str:
        return "\n".join(self.lines())

    def to_data(self) -> dict[str, Any]:
        """Plain data, as a serialized pytest report carries it."""
        crash = self.reprcrash
        return {
            "message": self.message,
            "frames": [[f.path, f.lineno, f.name, f.line] for f in self.frames],
            "reprcrash": [crash.path, crash.lineno, crash.message],
        }

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> MissReport:
        """The report ``to_data`` made."""
        frames = tuple(Frame(str(p), int(n), str(f), str(s)) for p, n, f, s in data["frames"])
        path, lineno, message = data["reprcrash"]
        return cls(str(data["message"]), frames, Crash(str(path), int(lineno), str(message)))


def miss_report(exc: BaseException, invoked_in: Path, *, frames: bool) -> MissReport | None:
    """The report of ``exc``, or ``None`` when none of its frames is the test's own.

    Args:
        exc: the miss, with its traceback.
        invoked_in: the folder pytest was run in; paths below it are shown relative to it.
        frames: show the test's frames after the message (not with ``--tb=line``).
    """
    own = own_frames(exc.__traceback__, invoked_in)
    if not own:
        return None
    message = f"{type(exc).__name__}: {exc}"
    deepest = own[-1]
    crash = Crash(deepest.path, deepest.lineno, message.splitlines()[0])
    return MissReport(message, own if frames else (), crash)


def own_frames(tb: TracebackType | None, invoked_in: Path) -> tuple[Frame, ...]:
    """The frames of ``tb`` that are neither faultdeck's nor an installed library's (pytest,
    the SDKs, httpx, the standard library), and not hidden with ``__tracebackhide__``."""
    frames = []
    for frame, lineno in traceback.walk_tb(tb):
        path = frame.f_code.co_filename
        if _library(path) or _hides(frame):
            continue
        line = linecache.getline(path, lineno).strip()
        frames.append(Frame(_shown(path, invoked_in), lineno, frame.f_code.co_name, line))
    return tuple(frames)


def _library(path: str) -> bool:
    if path.startswith("<frozen "):
        return True
    real = os.path.realpath(path)
    return real.startswith((_PACKAGE, *_libraries()))


def _hides(frame: FrameType) -> bool:
    return bool(frame.f_locals.get("__tracebackhide__", frame.f_globals.get("__tracebackhide__")))


def _shown(path: str, invoked_in: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(invoked_in.resolve()))
    except ValueError:
        return path
