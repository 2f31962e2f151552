"""Rendering a call-path diff: text for terminals, a JSON-ready dict for machines, one
self-contained HTML page for people."""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from typing import Any

from .._cassette.format import Entry
from .._keys.fields import Cut, common_ends, cut_pair, marked_pair, preview
from .align import OPS, CallPathDiff, Change, Row, either, plural_s, what, where

_MARK = {"same": " ", "changed": "~", "removed": "-", "added": "+"}
# Changes listed per changed call in text; JSON and HTML list them all.
_TEXT_CHANGES = 8
_INDENT = " " * 14
# Strings up to this long are shown whole on one line, unmarked: the eye compares them.
_SHORT = 24
# The differing middle's room in HTML: a long prompt's whole edit, not the whole prompt.
_HTML_WINDOW = 1200


def _key(row: Row) -> str:
    if row.a is not None and row.b is not None and row.a.key != row.b.key:
        return f"{row.a.key} → {row.b.key}"
    return either(row).key


def fork_note(diff: CallPathDiff) -> str | None:
    """One line on the fork between the sides, if one forked from the other."""
    fork = diff.forked
    if fork is None:
        return None
    child, parent = ("B", "A") if fork.fork == "b" else ("A", "B")
    if not fork.intact:
        return (
            f"{child} forked from {parent} at seq {fork.at}, but {parent} changed since "
            "(its sha256 differs from the one the fork recorded): compared from the start"
        )
    n = diff.shared
    return (
        f"{child} forked from {parent} at seq {fork.at}: the {n} call{plural_s(n)} up to it "
        f"are shared and not compared; compared from seq {fork.at + 1}"
    )


def _verdict(diff: CallPathDiff) -> str:
    counts = diff.counts
    total = len(diff.rows)
    parts = ", ".join(f"{counts[op]} {op}" for op in OPS)
    return f"{total} aligned call{plural_s(total)}: {parts}"


def _clip(line: str, width: int, *, left: bool = False) -> str:
    if len(line) <= width:
        return line
    # For file paths the name at the end says more than the folders at the start.
    return "…" + line[len(line) - width + 1 :] if left else line[: width - 1] + "…"


def diff_text(diff: CallPathDiff, *, context: int = 2, width: int = 100) -> str:
    """The diff for a terminal: a summary, then the differing calls with ``context`` agreeing
    calls around each; longer runs of agreeing calls are folded. No line exceeds ``width``.

    A changed long string is shown on two lines, A's and B's, each a window around the first
    differing character with the differing middle marked ``[-…-]`` and ``{+…+}``. A call a
    later ``append`` run added shows its place (``5+1``) in the seq columns.

    Args:
        diff: the diff.
        context: agreeing calls shown before and after each differing one.
        width: the longest line, in characters.
    """
    width = max(width, 40)
    lines = [
        "A: " + _clip(diff.a, width - 3, left=True),
        "B: " + _clip(diff.b, width - 3, left=True),
        _verdict(diff),
    ]
    note = fork_note(diff)
    if note is not None:
        lines.append(note)
    if diff.ignored:
        lines.append("ignored fields: " + ", ".join(diff.ignored))
    lines += _first_lines(diff, width)
    if diff.first is not None:
        column = max([5] + [len(row.place(side)) for row in diff.rows for side in ("a", "b")])
        lines += [
            "",
            f"  {'seq A':>{column}} {'seq B':>{column}}  call   "
            "(~ changed, - only in A, + only in B)",
        ]
        if any(row.appended(side) for row in diff.rows for side in ("a", "b")):
            lines.append("  N+k: the k-th call that a later run in append mode added after seq N")
        lines += _text_rows(diff.rows, context, width, column)
    return "\n".join(_clip(line, width) for line in lines) + "\n"


def _first_lines(diff: CallPathDiff, width: int) -> list[str]:
    """The first divergence on one line, its values previewed as wide as the line allows
    (the rows below show them in full view); on two lines when even the call and the field
    do not fit on one."""
    line = _widest(diff.first_divergence, width)
    if line is not None or diff.first is None:
        return [line or diff.first_divergence(0)]
    row = diff.rows[diff.first]
    agreed = diff.first
    return [
        f"first divergence at {where(row)} (after {agreed} agreeing call{plural_s(agreed)}):",
        _widest(lambda room: "  " + what(row, room), width) or "  " + what(row, 0),
    ]


def _widest(line: Callable[[int], str], width: int) -> str | None:
    """``line(room)`` with the widest value previews that keep it within ``width``, or
    without values; ``None`` when neither fits."""
    for room in (40, 32, 24, 0):
        text = line(room)
        if len(text) <= width:
            return text
    return None


def _text_rows(rows: Sequence[Row], context: int, width: int, column: int) -> list[str]:
    ends = [i for i, row in enumerate(rows) if row.op != "same"]
    shown = {k for i in ends for k in range(i - context, i + context + 1)}
    lines: list[str] = []
    folded = 0
    for i, row in enumerate(rows):
        if i not in shown:
            folded += 1
            continue
        if folded:
            lines.append(f"  … {folded} agreeing call{plural_s(folded)}")
            folded = 0
        entry = either(row)
        place_a, place_b = row.place("a") or "·", row.place("b") or "·"
        lines.append(
            f"{_MARK[row.op]} {place_a:>{column}} {place_b:>{column}}  "
            f"{entry.kind} {entry.name}  {_key(row)}"
        )
        for c in row.changes[:_TEXT_CHANGES]:
            lines += _change_lines(c, width)
        if len(row.changes) > _TEXT_CHANGES:
            hidden = len(row.changes) - _TEXT_CHANGES
            lines.append(f"{_INDENT}… and {hidden} more differing field{plural_s(hidden)}")
    if folded:
        lines.append(f"  … {folded} agreeing call{plural_s(folded)}")
    return lines


def _change_lines(c: Change, width: int) -> list[str]:
    """One changed field: ``path: a → b`` when both fit whole on the line; else the path,
    then each side on its own line, long strings as a window around their first
    difference with the differing middle marked ``[-…-]`` (A) and ``{+…+}`` (B)."""
    head = f"{_INDENT}{c.path}:"
    strings = type(c.a) is str and type(c.b) is str
    if not strings or max(len(c.a), len(c.b)) <= _SHORT:
        a, b = preview(c.a, width), preview(c.b, width)
        if len(head) + len(a) + len(b) + 4 <= width:
            return [f"{head} {a} → {b}"]
    room = width - len(_INDENT) - 5  # "  A: "
    if not strings:
        return [head, f"{_INDENT}  A: {preview(c.a, room)}", f"{_INDENT}  B: {preview(c.b, room)}"]
    a, b = marked_pair(c.a, c.b, room)
    at = common_ends(c.a, c.b)[0] + 1
    notes = (
        f" differs at character {at:,} ({len(c.a):,} characters in A, {len(c.b):,} in B)",
        f" differs at character {at:,}",
    )
    head += next((note for note in notes if len(head) + len(note) <= width), "")
    return [head, f"{_INDENT}  A: {a}", f"{_INDENT}  B: {b}"]


def diff_json(diff: CallPathDiff) -> dict[str, Any]:
    """The diff as a JSON-ready dict.

    Agreeing calls are summarized by ``counts["same"]``; every other row is listed in
    ``rows`` with its ``index`` in the full alignment, so positions can be recovered.
    ``first`` is that same object for the first divergence plus ``agreeing`` (the calls
    that agreed before it) and ``text`` (``first_divergence()``), or ``None``. Each row
    gives, per side, ``seq_*`` (as written), ``place_*`` (``"5+1"`` for a call a later
    ``append`` run added, see ``Row.place``), ``appended_*`` and ``line_*`` (its line in
    the file). ``forked`` says how one side forked from the other (``fork``: ``a`` or
    ``b``, ``at``, ``intact``, ``shared``, ``text``), or is ``None``.
    """
    first: dict[str, Any] | None = None
    if diff.first is not None:
        first = _row_json(diff.first, diff.rows[diff.first])
        first["agreeing"] = diff.first
        first["text"] = diff.first_divergence()
    return {
        "a": diff.a,
        "b": diff.b,
        "identical": diff.identical,
        "responses": diff.responses,
        "ignored": list(diff.ignored),
        "counts": diff.counts,
        "forked": None
        if diff.forked is None
        else {
            "fork": diff.forked.fork,
            "at": diff.forked.at,
            "intact": diff.forked.intact,
            "shared": diff.shared,
            "text": fork_note(diff),
        },
        "first": first,
        "rows": [_row_json(i, row) for i, row in enumerate(diff.rows) if row.op != "same"],
    }


def _row_json(index: int, row: Row) -> dict[str, Any]:
    entry = either(row)
    return {
        "index": index,
        "op": row.op,
        "seq_a": None if row.a is None else row.a.seq,
        "seq_b": None if row.b is None else row.b.seq,
        "kind": entry.kind,
        "name": entry.name,
        "place_a": row.place("a") or None,
        "place_b": row.place("b") or None,
        "appended_a": row.appended("a"),
        "appended_b": row.appended("b"),
        "line_a": None if row.a is None else row.a.line,
        "line_b": None if row.b is None else row.b.line,
        "key_a": None if row.a is None else row.a.key,
        "key_b": None if row.b is None else row.b.key,
        "changes": [{"path": c.path, "a": c.a, "b": c.b} for c in row.changes],
    }


_CSS = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 1.5rem; color: #1d1d1f; }
h1 { font-size: 1.3rem; margin: 0 0 .6rem; } dt { font-weight: 600; }
code, td { font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 13px; }
dl { display: grid; grid-template-columns: auto 1fr; gap: .2rem .8rem; margin: 0 0 .8rem; }
dd { margin: 0; word-break: break-all; } .verdict { font-weight: 600; }
.verdict.ok { color: #1a7f37; } .verdict.diverged { color: #b35900; }
.first { background: #fff4d6; border-left: 4px solid #e0a100; padding: .5rem .8rem; }
table { border-collapse: collapse; width: 100%; } table.calls { margin-top: 1rem; }
th, td { border: 1px solid #ddd; padding: .2rem .45rem; text-align: left; vertical-align: top; }
th { background: #f2f2f2; } tr.same td { color: #555; }
tr.changed > td { background: #fff8e1; } tr.removed > td { background: #fdecea; }
tr.added > td { background: #e9f7ef; } tr.is-first > td { outline: 2px solid #e0a100; }
table.fields td { white-space: pre-wrap; word-break: break-all; border-color: #e6d9a8; }
del { background: #ffd7d5; } ins { background: #c7f0d2; text-decoration: none; }
del:empty, ins:empty { border-left: 2px solid #b35900; } small { color: #555; }
"""


def diff_html(diff: CallPathDiff) -> str:
    """The diff as one self-contained HTML page: inline CSS, no scripts, nothing fetched.

    A header with both paths and the verdict, the first divergence highlighted, a table of
    aligned calls (A and B side by side, coloured by op) and each changed call's fields.
    Every value from the cassettes is escaped.
    """
    e = html.escape
    state = "ok" if diff.identical else "diverged"
    out = [
        '<!DOCTYPE html>\n<html lang="en">\n<head><meta charset="utf-8">',
        f"<title>faultdeck diff: {e(diff.first_divergence())}</title>",
        f"<style>{_CSS}</style></head>\n<body>\n<h1>faultdeck call-path diff</h1>",
        f"<dl><dt>A</dt><dd><code>{e(diff.a)}</code></dd>"
        f"<dt>B</dt><dd><code>{e(diff.b)}</code></dd></dl>",
        f'<p class="verdict {state}">{"identical" if diff.identical else "diverged"}: '
        f"{e(_verdict(diff))}</p>",
    ]
    note = fork_note(diff)
    if note is not None:
        out.append(f'<p class="fork">{e(note)}</p>')
    if diff.ignored:
        out.append(f"<p>ignored fields: <code>{e(', '.join(diff.ignored))}</code></p>")
    link = "" if diff.first is None else f' <a href="#row-{diff.first}">show</a>'
    out.append(f'<p class="first">{e(diff.first_divergence())}{link}</p>')
    out.append(
        '<table class="calls">\n<thead><tr><th rowspan="2">op</th><th colspan="4">A</th>'
        '<th colspan="4">B</th></tr><tr>'
        + "<th>seq</th><th>kind</th><th>name</th><th>key</th>" * 2
        + "</tr></thead>\n<tbody>"
    )
    for i, row in enumerate(diff.rows):
        classes = row.op + (" is-first" if i == diff.first else "")
        cells = _html_side(row.a, row.place("a")) + _html_side(row.b, row.place("b"))
        out.append(
            f'<tr class="{classes}" id="row-{i}"><td title="{row.op}">{e(_MARK[row.op])}</td>'
            f"{cells}</tr>"
        )
        if row.changes:
            nested = _html_changes(row)
            out.append(f'<tr class="{row.op}"><td></td><td colspan="8">{nested}</td></tr>')
    out.append("</tbody>\n</table>\n</body>\n</html>\n")
    return "\n".join(out)


def _html_side(entry: Entry | None, place: str) -> str:
    if entry is None:
        return '<td colspan="4"></td>'
    e = html.escape
    seq = e(place)
    if "+" in place:
        note = (
            f"the call a later run in append mode added after seq {place.partition('+')[0]}, "
            f"at line {entry.line} (its seq in that run: {entry.seq})"
        )
        seq = f'<span title="{e(note)}">{seq} <small>appended, line {entry.line}</small></span>'
    return (
        f"<td>{seq}</td><td>{e(entry.kind)}</td><td>{e(entry.name)}</td>"
        f"<td><code>{e(entry.key)}</code></td>"
    )


def _html_changes(row: Row) -> str:
    cells = "".join(
        f"<tr><td>{html.escape(c.path)}{_html_where(c)}</td>{_html_values(c)}</tr>"
        for c in row.changes
    )
    return f'<table class="fields"><tr><th>field</th><th>A</th><th>B</th></tr>{cells}</table>'


def _html_where(c: Change) -> str:
    if type(c.a) is not str or type(c.b) is not str:
        return ""
    at = common_ends(c.a, c.b)[0] + 1
    return (
        f"<br><small>differs at character {at:,} ({len(c.a):,} characters in A, "
        f"{len(c.b):,} in B)</small>"
    )


def _html_values(c: Change) -> str:
    """A changed field's two values; two strings with their differing middles marked
    ``<del>`` (A) and ``<ins>`` (B), the shared text around them plain."""
    e = html.escape
    if type(c.a) is not str or type(c.b) is not str:
        return f"<td>{e(preview(c.a, 400))}</td><td>{e(preview(c.b, 400))}</td>"
    cut_a, cut_b = cut_pair(c.a, c.b, _HTML_WINDOW)
    return f"<td>{_html_cut(cut_a, 'del')}</td><td>{_html_cut(cut_b, 'ins')}</td>"


def _html_cut(cut: Cut, tag: str) -> str:
    e = html.escape
    if not cut.middle:  # the other side inserted text here: nothing to mark on this one
        return f"{e(cut.before)}{e(cut.after)}"
    return f"{e(cut.before)}<{tag}>{e(cut.middle)}</{tag}>{e(cut.after)}"
