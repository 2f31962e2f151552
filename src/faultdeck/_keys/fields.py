"""Field-level differences between two JSON values, and short previews of values. Pure."""

from __future__ import annotations

from typing import Any, NamedTuple

import orjson

ABSENT = "<absent>"


def field_diff(
    recorded: Any, asked: Any, path: str = "args", *, limit: int = 50
) -> list[tuple[str, Any, Any]]:
    """Return ``(path, recorded, asked)`` for each leaf that differs, at most ``limit``.

    Dicts are compared key by key, lists index by index; a side that lacks a field shows
    ``ABSENT``. Values of different types differ as a whole.
    """
    out: list[tuple[str, Any, Any]] = []
    _diff(recorded, asked, path, out, limit)
    return out


def _diff(a: Any, b: Any, path: str, out: list[tuple[str, Any, Any]], limit: int) -> None:  # noqa: C901 - one recursive walk over dicts, lists and leaves
    if len(out) >= limit:
        return
    if type(a) is dict and type(b) is dict:
        for k in a:
            if k in b:
                _diff(a[k], b[k], f"{path}.{k}", out, limit)
            elif len(out) < limit:
                out.append((f"{path}.{k}", a[k], ABSENT))
        for k in b:
            if k not in a and len(out) < limit:
                out.append((f"{path}.{k}", ABSENT, b[k]))
    elif type(a) is list and type(b) is list:
        for i in range(max(len(a), len(b))):
            if i >= len(a):
                out.append((f"{path}[{i}]", ABSENT, b[i]))
            elif i >= len(b):
                out.append((f"{path}[{i}]", a[i], ABSENT))
            else:
                _diff(a[i], b[i], f"{path}[{i}]", out, limit)
            if len(out) >= limit:
                return
    elif a != b or type(a) is not type(b):
        out.append((path, a, b))


def preview(value: Any, width: int = 72) -> str:
    """A one-line JSON preview of ``value``, cut to ``width`` characters."""
    if value is ABSENT:
        return str(value)
    try:
        text: str = orjson.dumps(value).decode()
    except TypeError:
        text = repr(value)
    return text if len(text) <= width else text[: width - 1] + "…"


MARK_A = ("[-", "-]")
MARK_B = ("{+", "+}")
"""How a one-line preview marks the differing middle of two strings (git's word-diff)."""


class Cut(NamedTuple):
    """One of two strings cut to a window around where they differ, as JSON-escaped text.

    Attributes:
        before: the shared text just before the difference, opening with ``"`` when the
            window starts at the string's start and with ``…`` where text was left out.
        middle: the part that differs (empty when the other string inserts text here),
            ending in ``…`` when it was cut.
        after: the shared text after it, ending with ``"`` at the string's end, ``…`` where
            text was left out; empty when the middle was cut.
        at: the first differing character's index in the string.
        size: the string's length in characters.
    """

    before: str
    middle: str
    after: str
    at: int
    size: int


def common_ends(a: str, b: str) -> tuple[int, int]:
    """The lengths of the longest shared beginning and end of ``a`` and ``b``, which never
    overlap (the end is sought in what follows the beginning)."""
    # Binary search on slices compares in C: a long prompt costs log(n) slice compares.
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    prefix = lo
    lo, hi = 0, min(len(a), len(b)) - prefix
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[len(a) - mid :] == b[len(b) - mid :]:
            lo = mid
        else:
            hi = mid - 1
    return prefix, lo


def cut_pair(a: str, b: str, width: int) -> tuple[Cut, Cut]:
    """Two strings cut to windows of at most ``width`` characters around their first
    difference, both windows opening on the same shared text so the change lines up.

    About a third of the window goes to the shared text before the difference, then the
    differing middle of each side, then the shared text after it, as room allows.
    """
    width = max(width, 8)
    first, suffix = common_ends(a, b)
    prefix, suffix = _whole_words(a, b, first, suffix)
    # The shared text before: the same on both sides, so measured once.
    before, start = _back(a, prefix, width // 3)
    opening = '"' if start == 0 else "…"
    room = width - 1 - len(before) - 1  # the opening and the closing character
    return (
        _forward(a, prefix, len(a) - suffix, opening + before, room, first),
        _forward(b, prefix, len(b) - suffix, opening + before, room, first),
    )


_WORD = 16  # a cut moves out of a word at most this far; a longer run is a token, cut as is


def _whole_words(a: str, b: str, prefix: int, suffix: int) -> tuple[int, int]:
    """The shared beginning and end shortened so that the middles hold whole words: a
    changed word reads ``[-Do-]``/``{+do+}``, not ``[-D-]o``/``{+d+}o``."""

    def inside(x: str, i: int) -> bool:  # whether i falls between two word characters of x
        return 0 < i < len(x) and x[i - 1].isalnum() and x[i].isalnum()

    p = prefix
    while p > 0 and prefix - p < _WORD and (inside(a, p) or inside(b, p)):
        p -= 1
    if prefix - p == _WORD:
        p = prefix
    s = suffix
    while s > 0 and suffix - s < _WORD and (inside(a, len(a) - s) or inside(b, len(b) - s)):
        s -= 1
    if suffix - s == _WORD:
        s = suffix
    return p, s


def _forward(text: str, start: int, stop: int, before: str, room: int, first: int) -> Cut:
    """The cut of ``text`` whose middle is ``text[start:stop]``, after ``before``."""
    middle, end = _ahead(text, start, stop, room)
    if end < stop:
        middle, _ = _ahead(text, start, stop, room - 1)
        return Cut(before, middle + "…", "", first, len(text))
    after, end = _ahead(text, stop, len(text), room - len(middle))
    closing = '"' if end == len(text) else "…"
    return Cut(before, middle, after + closing, first, len(text))


def _escaped(char: str) -> str:
    return orjson.dumps(char).decode()[1:-1]


def _ahead(text: str, start: int, stop: int, room: int) -> tuple[str, int]:
    """The escaped text from ``start`` on, before ``stop``, within ``room`` characters;
    and where it stopped."""
    parts: list[str] = []
    used = 0
    i = start
    while i < stop:
        part = _escaped(text[i])
        if used + len(part) > room:
            break
        parts.append(part)
        used += len(part)
        i += 1
    return "".join(parts), i


def _back(text: str, end: int, room: int) -> tuple[str, int]:
    """The escaped text just before ``end``, within ``room`` characters; and where it
    starts."""
    parts: list[str] = []
    used = 0
    i = end
    while i > 0:
        part = _escaped(text[i - 1])
        if used + len(part) > room:
            break
        parts.append(part)
        used += len(part)
        i -= 1
    return "".join(reversed(parts)), i


def marked_pair(a: str, b: str, width: int = 72) -> tuple[str, str]:
    """Two strings, each as a window of at most ``width`` characters (12 at least) around
    their first difference (``cut_pair``), the differing middle marked ``[-…-]`` in ``a``
    and ``{+…+}`` in ``b``: ``…the retry budget[-.\\nDo-] not…``."""
    cut_a, cut_b = cut_pair(a, b, width - len(MARK_A[0]) - len(MARK_A[1]))
    return _marked(cut_a, MARK_A), _marked(cut_b, MARK_B)


def _marked(cut: Cut, marks: tuple[str, str]) -> str:
    """The window with its differing middle marked; nothing marked where that side has no
    middle (the other side inserted text there)."""
    if not cut.middle:
        return f"{cut.before}{cut.after}"
    return f"{cut.before}{marks[0]}{cut.middle}{marks[1]}{cut.after}"


def preview_pair(a: Any, b: Any, width: int = 72) -> tuple[str, str]:
    """Previews of two differing values that show where they differ.

    Values that fit in ``width`` are shown whole. Two longer strings are shown as windows
    around their first differing character, the differing middle marked (``marked_pair``),
    so a changed word in the middle or at the end of a long prompt is in view whatever the
    width; other values are cut at ``width``.
    """
    if type(a) is not str or type(b) is not str:
        return preview(a, width), preview(b, width)
    # Cheap length bounds first: a long prompt is not dumped to be measured.
    if len(a) + 2 <= width and len(b) + 2 <= width:
        whole_a, whole_b = preview(a, 10**9), preview(b, 10**9)
        if len(whole_a) <= width and len(whole_b) <= width:
            return whole_a, whole_b
    return marked_pair(a, b, width)
