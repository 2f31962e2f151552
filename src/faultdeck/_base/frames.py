"""A traceback as its reader needs it: only the frames of their own code.

A miss raised through an SDK passes through dozens of frames (the SDK's, httpx's, the
standard library's, faultdeck's) that say nothing about the program; ``own_frames`` keeps
the rest, for pytest's report of a miss and for a program the command line runs alike.
"""

from __future__ import annotations

import functools
import linecache
import os
import traceback
from dataclasses import dataclass
from pathlib import Path
from types import FrameType, TracebackType

_PACKAGE = str(Path(__file__).resolve().parents[1]) + os.sep


@functools.cache
def _libraries() -> tuple[str, ...]:
    """The folders Python's and the installed libraries' modules are in (asked once, when
    a miss is first shown)."""
    import sysconfig

    paths = sysconfig.get_paths()
    folders = (paths.get(name) for name in ("stdlib", "platstdlib", "purelib", "platlib"))
    return tuple(sorted({str(Path(folder).resolve()) + os.sep for folder in folders if folder}))


@dataclass(frozen=True, slots=True)
class Frame:
    """One of the program's own frames: where it was when the error was raised.

    Attributes:
        path: the file, relative to the folder it was run in when it is below it.
        lineno: the 1-based line.
        name: the function.
        line: the source line, stripped (empty when the source is not available).
    """

    path: str
    lineno: int
    name: str
    line: str


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


def frame_lines(frames: tuple[Frame, ...]) -> list[str]:
    """``frames`` as lines, outermost first: ``path:line: in name``, then the source."""
    out = []
    for frame in frames:
        out.append(f"{frame.path}:{frame.lineno}: in {frame.name}")
        if frame.line:
            out.append(f"    {frame.line}")
    return out


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
