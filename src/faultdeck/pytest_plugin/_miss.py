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

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from .._base.frames import Frame, frame_lines, own_frames

HIDDEN = "(faultdeck's and the libraries' frames are hidden; --tb=long or --fulltrace shows them)"


class Writer(Protocol):
    """The part of pytest's terminal writer a report uses."""

    def line(self, s: str = "", **markup: bool) -> None:
        """Write ``s`` and a new line, in ``markup`` (``red=True``, ``bold=True``…)."""


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
        out += frame_lines(self.frames)
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
