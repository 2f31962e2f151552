"""Rendering a rehearsal's ``Matrix``: a rich table, plain summary lines, a JSON-ready dict;
for a rehearsal of several cassettes, one summary row per cassette.

Nothing here prints: the command line decides where each goes. The table has one row per
fault (or plan) and one column per call position of the clean run; a whole-run column
holds the cells that have no position (the clean replay's row, named plans). A fault row
shows ``·`` at a call its kind cannot happen at: that cell was not run.
"""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, get_args

from .._judge.policy import Outcome
from .matrix import REPLAY_ROW, Cell, Matrix, Status

if TYPE_CHECKING:
    from rich.table import Table

SYMBOLS: dict[str, str] = {
    "held": "✓",
    "broke": "✗",
    "miss": "~",
    "raised": "!",
    "killed": "↻",
    "not fired": "○",
}
"""One character per cell status."""

NOT_APPLICABLE = "·"
"""A fault row's mark at a call its kind does not apply to (not run, not counted)."""

LEGEND = (
    "✓ held, ✗ broke, ~ off the recorded path, ! raised, ↻ killed by a crash and restarted "
    "fine, ○ not fired (the loop never reached its call, or it held nothing to change), · does "
    "not apply at that call (not run); ✗ ~ ! are findings"
)
"""The symbols in a line, for the table's caption and the command's help."""

STYLES: dict[str, str] = {
    "held": "green",
    "broke": "bold red",
    "miss": "yellow",
    "raised": "magenta",
    "killed": "cyan",
    "not fired": "dim",
}
"""The rich style of each status's symbol."""

STATUSES: tuple[str, ...] = get_args(Status)
_NAME_WIDTH = 12


def matrix_table(matrix: Matrix) -> Table:
    """A rich ``Table``: a row per fault label, a column per call position, symbols in cells.

    Cells without a position (the clean replay's row, named plans) go in a ``run`` column.
    A fault row shows ``NOT_APPLICABLE`` at the calls its kind does not apply to. A legend
    of the symbols is the caller's to add (``LEGEND``).
    """
    from rich.table import Table  # (rich only where a table is drawn)
    from rich.text import Text

    table = Table(show_lines=False)
    table.add_column("fault", no_wrap=True)
    whole_run = any(c.seq is None for c in matrix.cells)
    if whole_run:
        table.add_column("run", justify="center")
    for seq, call in matrix.positions:
        table.add_column(f"{seq}\n{_shorten(call)}", justify="center")
    by_place = {(c.label, c.seq): c for c in matrix.cells}
    places: list[int | None] = [None] if whole_run else []
    places += [seq for seq, _ in matrix.positions]
    positional = _positional(matrix)
    for label in matrix.rows:
        row: list[Text | str] = [label]
        for place in places:
            cell = by_place.get((label, place))
            if cell is not None:
                row.append(Text(SYMBOLS[cell.status], style=STYLES[cell.status]))
            elif label in positional and place is not None:
                row.append(Text(NOT_APPLICABLE, style="dim"))
            else:
                row.append("")
        table.add_row(*row)
    return table


def not_applicable(matrix: Matrix) -> list[tuple[str, int]]:
    """``(row, seq)`` of each fault row's call its kind does not apply to (not run)."""
    ran = {(c.label, c.seq) for c in matrix.cells}
    positional = _positional(matrix)
    return [
        (label, seq)
        for label in matrix.rows
        if label in positional
        for seq, _ in matrix.positions
        if (label, seq) not in ran
    ]


def _positional(matrix: Matrix) -> set[str]:
    """The rows placed call by call (a fault at each position), not run as a whole."""
    whole = {c.label for c in matrix.cells if c.seq is None}
    return {label for label in matrix.rows if label not in whole and label != REPLAY_ROW}


def matrix_summary(matrix: Matrix) -> list[str]:
    """Plain lines: the counts per status, each broken cell with its violations, then the
    exceptions and the misses in brief."""
    counts = _counts(matrix)
    total = len(matrix.cells)
    parts = ", ".join(f"{counts[s]} {s}" for s in STATUSES if s != "not fired")
    lines = [f"{total} cell{'s' if total != 1 else ''}: {parts}"]
    skipped = len(not_applicable(matrix))
    if skipped:
        lines[0] += f" ({skipped} not applicable, not run)"
    unfired = [c for c in matrix.cells if c.status == "not fired"]
    if unfired:
        lines[0] += f"; {len(unfired)} not fired"
    calls = dict(matrix.positions)
    for cell in matrix.broken:
        lines.append(f"{SYMBOLS['broke']} {_where(cell, calls)}:")
        lines += [f"    {v}" for v in cell.violations] or [f"    {cell.detail}"]
    for cell in matrix.cells:
        if cell.status == "raised":
            lines.append(f"{SYMBOLS['raised']} {_where(cell, calls)}: {cell.detail}")
    if unfired:
        lines.append(
            f"{SYMBOLS['not fired']} {len(unfired)} not fired (the loop never reached the "
            "fault's call, or the call held nothing it changes, so it judged nothing): "
            f"{', '.join(_place(c) for c in unfired)}"
        )
    misses = [c for c in matrix.cells if c.status == "miss"]
    if misses:
        lines.append(
            f"{SYMBOLS['miss']} {len(misses)} off the recorded path (the cassette has no "
            f"answer there to judge the loop by): {', '.join(_place(c) for c in misses)}"
        )
        lines.append(
            "  record where they lead once, the upstream reachable, and judge them offline "
            "from then on: rehearse again with --branches record"
        )
    return lines


def matrix_json(matrix: Matrix) -> dict[str, Any]:
    """The matrix as JSON-ready data (see the shape below); ``json.dumps`` takes it as is.

    ``{"cassette", "entrypoint", "policy", "ok", "positions": [{"seq", "call"}], "rows",
    "counts": {status: n}, "not_applicable": [{"label", "seq"}] (cells not run: the fault
    does not apply at that call), "cells": [{"label", "seq", "call", "status", "detail",
    "violations": [{"invariant", "op", "bound", "observed"}], "outcomes": [outcome]}],
    "baseline": [outcome]}``; an outcome is ``{"op", "status", "value", "reason",
    "attempts", "retry_after", "elapsed_ms", "concurrency"}``. An ``op`` or ``value`` that
    is not JSON is given as its ``repr``; tuples become lists.
    """
    calls = dict(matrix.positions)
    return {
        "cassette": matrix.cassette,
        "entrypoint": matrix.entrypoint,
        "policy": matrix.policy,
        "ok": matrix.ok,
        "positions": [{"seq": seq, "call": call} for seq, call in matrix.positions],
        "rows": list(matrix.rows),
        "counts": dict(_counts(matrix)),
        "not_applicable": [{"label": label, "seq": seq} for label, seq in not_applicable(matrix)],
        "cells": [_cell_json(c, calls) for c in matrix.cells],
        "baseline": [_outcome_json(o) for o in matrix.baseline],
    }


SUMMARY_COLUMNS: tuple[str, ...] = ("cassette", "cells", "held", "broken", "errors", "killed")
"""The columns of a summary row, in order; ``errors`` is raised + off the recorded path."""


def summary_row(cassette: str, matrix: Matrix) -> dict[str, Any]:
    """One cassette's row in a rehearsal of several, JSON-ready: ``{"cassette", "cells",
    "held", "broken", "errors", "killed", "ok"}``; ``errors`` counts the cells that raised or
    went off the recorded path, ``cassette`` is named as the caller named it."""
    counts = _counts(matrix)
    return {
        "cassette": cassette,
        "cells": len(matrix.cells),
        "held": counts["held"],
        "broken": counts["broke"],
        "errors": counts["raised"] + counts["miss"],
        "killed": counts["killed"],
        "ok": matrix.ok,
    }


def summary_table(rows: Sequence[dict[str, Any]]) -> Table:
    """The summary rows as a rich ``Table``, a row per cassette; a count that is a finding
    (broken, errors) is red when it is not 0."""
    from rich.table import Table  # (rich only where a table is drawn)
    from rich.text import Text

    table = Table(show_lines=False)
    for column in SUMMARY_COLUMNS:
        table.add_column(column, justify="left" if column == "cassette" else "right")
    for row in rows:
        cells: list[Text | str] = [Text(row["cassette"])]
        for column in SUMMARY_COLUMNS[1:]:
            bad = column in ("broken", "errors") and row[column]
            cells.append(Text(str(row[column]), style="bold red" if bad else ""))
        table.add_row(*cells)
    return table


def _cell_json(cell: Cell, calls: dict[int, str]) -> dict[str, Any]:
    return {
        "label": cell.label,
        "seq": cell.seq,
        "call": calls.get(cell.seq) if cell.seq is not None else None,
        "status": cell.status,
        "detail": cell.detail,
        "violations": [
            {
                "invariant": v.invariant,
                "op": _json_value(v.op),
                "bound": v.bound,
                "observed": v.observed,
            }
            for v in cell.violations
        ],
        "outcomes": [_outcome_json(o) for o in cell.outcomes],
    }


def _outcome_json(outcome: Outcome) -> dict[str, Any]:
    return {f.name: _json_value(getattr(outcome, f.name)) for f in dataclasses.fields(outcome)}


def _json_value(value: Any) -> Any:
    try:
        # Through text and back, so that tuples come out as lists and the dict equals
        # what a reader of the JSON gets.
        return json.loads(json.dumps(value, allow_nan=False))
    except (TypeError, ValueError):
        return repr(value)


def _counts(matrix: Matrix) -> dict[str, int]:
    found: Counter[str] = Counter(c.status for c in matrix.cells)
    return {status: found[status] for status in STATUSES}


def _where(cell: Cell, calls: dict[int, str]) -> str:
    if cell.seq is None:
        return cell.label
    return f"{cell.label} at seq {cell.seq} ({calls.get(cell.seq, '?')})"


def _place(cell: Cell) -> str:
    return cell.label if cell.seq is None else f"{cell.label} at seq {cell.seq}"


def _shorten(call: str) -> str:
    kind, _, name = call.partition(" ")
    if len(name) > _NAME_WIDTH:
        name = name[: _NAME_WIDTH - 1] + "…"
    return f"{kind} {name}" if name else kind
