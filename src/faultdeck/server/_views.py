"""What the JSON API and the pages show, as plain data: a cassette as ``faultdeck show
--format json`` gives it, the folder's list of cassettes, and a diff's rows prepared for a
page. No web framework here; the routes turn these into responses."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from .._base.errors import CassetteError
from .._cassette.format import Entry, Recording
from .._cassette.reader import load
from .._cassette.summary import status
from .._diff.align import CallPathDiff, Change, Row, either
from .._keys.fields import Cut, common_ends, cut_pair, preview
from ._names import NameRefused, cassette_name, cassette_path

# The differing middle's room on a page: a long prompt's whole edit, not the whole prompt.
_WINDOW = 1200


def cassette_files(root: Path) -> list[tuple[str, Path]]:
    """Each cassette under ``root`` (sub-folders too) that a URL can name, as
    ``(name, path)``, sorted by name; files whose names ``cassette_path`` refuses (hidden,
    spaces, a symlink out of the folder) are left out."""
    found = []
    for path in Path(root).rglob("*.jsonl"):
        name = cassette_name(root, path)
        try:
            resolved = cassette_path(root, name)
        except NameRefused:
            continue
        if resolved.is_file() and resolved == Path(os.path.realpath(path)):
            found.append((name, resolved))
    return sorted(found)


def summaries(root: Path) -> list[dict[str, Any]]:
    """One line per cassette under ``root``: ``name``, ``calls``, ``status`` (``ok``,
    ``failed``, ``interrupted``, or ``corrupt`` with ``error`` saying why), ``git_sha``
    (of the harness that recorded it, or ``None``) and ``size`` in bytes."""
    out: list[dict[str, Any]] = []
    for name, path in cassette_files(root):
        size = path.stat().st_size
        try:
            recording = load(path)
        except CassetteError as exc:
            row = {"name": name, "calls": None, "status": "corrupt", "git_sha": None}
            out.append(dict(row, size=size, error=str(exc)))
            continue
        sha = recording.header.harness.get("git_sha")
        out.append(
            {
                "name": name,
                "calls": len(recording.entries),
                "status": status(recording),
                "git_sha": sha if isinstance(sha, str) else None,
                "size": size,
            }
        )
    return out


def pretty(value: Any) -> str:
    """``value`` as indented JSON, for a page."""
    return orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode()


@dataclass(frozen=True, slots=True)
class CallView:
    """One call of a cassette's timeline.

    Attributes:
        entry: the call as recorded.
        width: its duration bar's width, in percent of the slowest call's.
        fault: the name of the fault it was recorded under, or ``None``.
        error: its error in words (type, status, message), or ``None``.
        args: its arguments as indented JSON.
        answer: its value (result, error or stream) as indented JSON.
    """

    entry: Entry
    width: float
    fault: str | None
    error: str | None
    args: str
    answer: str


def timeline(recording: Recording) -> list[CallView]:
    """The calls of ``recording`` prepared for its page."""
    slowest = max((e.ms for e in recording.entries), default=0.0)
    calls = []
    for entry in recording.entries:
        width = 100.0 * entry.ms / slowest if slowest > 0 else 0.0
        fault = entry.fault.get("fault") if isinstance(entry.fault, dict) else None
        calls.append(
            CallView(
                entry=entry,
                width=round(width, 2),
                fault=None if fault is None else str(fault),
                error=_error_text(entry),
                args=pretty(entry.args),
                answer=pretty(entry.value),
            )
        )
    return calls


def _error_text(entry: Entry) -> str | None:
    if entry.result != "error" or not isinstance(entry.value, dict):
        return None
    error = entry.value
    detail = [f"{k} {error[k]}" for k in ("status", "code") if k in error]
    text = str(error.get("type", "error")) + (f" ({', '.join(detail)})" if detail else "")
    message = error.get("message")
    return f"{text}: {message}" if message else text


@dataclass(frozen=True, slots=True)
class FieldView:
    """One changed field of a diff row, ready for a page.

    Attributes:
        path: the field's path (``args.messages[0].content``).
        a: A's value previewed as JSON (empty when ``marked``).
        b: B's value previewed as JSON (empty when ``marked``).
        marked: whether ``a``/``b`` are cuts with a differing middle (``del``/``ins``).
        cut_a: A's cut, when ``marked``.
        cut_b: B's cut, when ``marked``.
        at: the first differing character (1-based), when ``marked``.
    """

    path: str
    a: str
    b: str
    marked: bool
    cut_a: Cut | None = None
    cut_b: Cut | None = None
    at: int = 0


@dataclass(frozen=True, slots=True)
class RowView:
    """One aligned row of a diff page.

    Attributes:
        index: its place in the alignment (its anchor is ``row-{index}``).
        row: the aligned pair.
        first: whether it is the first divergence.
        kind: the call's kind.
        name: the call's name.
        fields: its changed fields.
    """

    index: int
    row: Row
    first: bool
    kind: str
    name: str
    fields: tuple[FieldView, ...]


def field_view(change: Change) -> FieldView:
    """A changed field: two strings cut around their first difference with the differing
    middle set apart; any other values previewed whole (up to 400 characters)."""
    if type(change.a) is not str or type(change.b) is not str:
        return FieldView(change.path, preview(change.a, 400), preview(change.b, 400), False)
    cut_a, cut_b = cut_pair(change.a, change.b, _WINDOW)
    at = common_ends(change.a, change.b)[0] + 1
    return FieldView(change.path, "", "", True, cut_a, cut_b, at)


def diff_rows(diff: CallPathDiff) -> list[RowView]:
    """Every aligned row of ``diff`` prepared for a page."""
    return [
        RowView(
            index=i,
            row=row,
            first=i == diff.first,
            kind=either(row).kind,
            name=either(row).name,
            fields=tuple(field_view(c) for c in row.changes),
        )
        for i, row in enumerate(diff.rows)
    ]
