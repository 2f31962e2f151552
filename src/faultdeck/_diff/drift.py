"""Drift: a recording against a live run of the same program, call by call.

Pure: the recorded ``Recording``, the live one and how each run ended in, a ``Drift`` out.
Both runs are in stored form (normalized and redacted the same way), aligned by
``diff_recordings`` with results compared. A row is sorted by what moved:

- an **answer changed** (the world moved): the same call, asked with the same args, got
  another answer;
- a **call changed** (the code moved): a key in one run only, a call whose args or schema
  changed, one the program no longer makes, or one it makes anew.

Volatile fields, wall-clock values and rate-limit headers are not compared: the format
stores a volatile field's time as a placeholder derived from the call's seq, so a call that
moved by one seq would otherwise seem to have a new answer; any other time in an answer (a
tool's clock) changes from run to run by itself, not because the world moved; and an HTTP
answer's ``x-ratelimit-*`` headers count the account's use, not what was answered.

Calls a later ``append`` run added to the recording (degraded paths recorded under faults)
that the live run did not make are listed apart, not counted as drift: a clean live run is
not expected to make them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Literal

from .._cassette.format import Entry, Recording
from .._keys.fields import preview_pair
from .._keys.outputs import EPOCH_MS, EPOCH_S, PLACEHOLDER_EPOCH, is_time_field, scrub_string
from .align import CallPathDiff, Row, diff_recordings, either, plural_s, where
from .render import diff_json

Moved = Literal["answer", "call"]


@dataclass(frozen=True, slots=True)
class Ending:
    """How one run ended.

    Attributes:
        status: the end line's status (``ok``, ``error``) or ``interrupted`` when there is
            none.
        code: the program's exit code, for the live run; ``None`` for the recorded one (the
            format does not keep it).
    """

    status: str
    code: int | None = None

    @property
    def ok(self) -> bool:
        """Whether the run succeeded: it closed cleanly (and exited 0, when that is known)."""
        return self.status == "ok" and self.code in (None, 0)

    def text(self) -> str:
        """In words: ``exited 0, ended ok``."""
        exited = f"exited {self.code}, " if self.code is not None else ""
        ended = "interrupted" if self.status == "interrupted" else f"ended {self.status}"
        return exited + ended


@dataclass(frozen=True, slots=True)
class Drift:
    """What moved between a recording and a live run.

    Attributes:
        diff: the aligned call paths (A the recording, B the live run), results compared.
        answers: rows where the world moved: the same call got another answer.
        calls: rows where the code moved: a call in one run only, or asked otherwise.
        appended: recorded calls a later ``append`` run added that the live run did not
            make (not drift).
        blocked: recorded calls the live run reached but was not let run: side effects
            without a ``dry_run`` stand-in (not drift; the live run is not a fair test).
        recorded: how the recorded run ended.
        live: how the live run ended.
    """

    diff: CallPathDiff
    answers: tuple[Row, ...]
    calls: tuple[Row, ...]
    appended: tuple[Row, ...]
    blocked: tuple[Row, ...]
    recorded: Ending
    live: Ending

    @property
    def outcome_changed(self) -> bool:
        """Whether one run succeeded and the other did not."""
        return self.recorded.ok != self.live.ok

    @property
    def drifted(self) -> bool:
        """Whether anything moved: an answer, a call or the outcome."""
        return bool(self.answers or self.calls or self.outcome_changed)


def ending(recording: Recording, code: int | None = None) -> Ending:
    """How the run that wrote ``recording`` ended (``code``: its exit code, if known)."""
    end = recording.end
    status = "interrupted" if end is None else str(end.get("status", "ok"))
    return Ending(status, code)


def compare_drift(
    recorded: Recording,
    live: Recording,
    *,
    live_code: int,
    ignore: tuple[str, ...] = (),
    blocked: frozenset[str] = frozenset(),
) -> Drift:
    """Compare a recording with a live recording of the same program.

    Args:
        recorded: the cassette as it is.
        live: what the program recorded when run again just now.
        live_code: the live program's exit code.
        ignore: more field names, at any depth, never compared (both headers' ``volatile``
            are added).
        blocked: the keys of the live run's calls that were refused (side effects with no
            stand-in): they wrote no line, so they are not calls the code stopped making.
    """
    diff = diff_recordings(_steady(recorded), _steady(live), responses=True, ignore=ignore)
    answers: list[Row] = []
    calls: list[Row] = []
    appended: list[Row] = []
    refused: list[Row] = []
    for row in diff.rows:
        moved = what_moved(row)
        if moved is None:
            continue
        if row.op == "removed" and row.a is not None and row.a.key in blocked:
            refused.append(row)
        elif row.op == "removed" and row.appended("a"):
            appended.append(row)
        elif moved == "answer":
            answers.append(row)
        else:
            calls.append(row)
    return Drift(
        diff,
        tuple(answers),
        tuple(calls),
        tuple(appended),
        tuple(refused),
        ending(recorded),
        ending(live, live_code),
    )


def what_moved(row: Row) -> Moved | None:
    """``answer`` when only the result differs, ``call`` when what was asked differs (or the
    call is in one run only), ``None`` when the two agree."""
    if row.op == "same":
        return None
    if row.op in ("removed", "added"):
        return "call"
    asked = any(
        c.path == "schema" or c.path.split(".")[0].split("[")[0] == "args" for c in row.changes
    )
    return "call" if asked else "answer"


def _steady(recording: Recording) -> Recording:
    """``recording`` with every wall-clock placeholder in its answers made the same, whatever
    the call's seq."""
    entries = tuple(_steady_entry(e) for e in recording.entries)
    return replace(recording, entries=entries)


def _steady_entry(entry: Entry) -> Entry:
    value = entry.value
    steady = _unstamp(_unmetered(value) if entry.kind == "http" else value, None)
    return entry if steady is value else entry.replace(value=steady)


def _unmetered(value: Any) -> Any:
    """An HTTP answer without its rate-limit headers."""
    headers = value.get("headers") if type(value) is dict else None
    if type(headers) is not dict or not any("ratelimit" in name for name in headers):
        return value
    kept = {k: v for k, v in headers.items() if "ratelimit" not in k}
    return {**value, "headers": kept}


def _unstamp(value: Any, field: str | None) -> Any:
    cls = type(value)
    if cls is dict:
        items = {k: _unstamp(v, k) for k, v in value.items()}
        return value if all(items[k] is value[k] for k in value) else items
    if cls is list:
        listed = [_unstamp(v, field) for v in value]
        return value if all(a is b for a, b in zip(listed, value, strict=True)) else listed
    if cls is str:
        steady = scrub_string(value, field, PLACEHOLDER_EPOCH)
        return value if steady == value else steady
    time_field = field is not None and is_time_field(field)
    if (cls is int or cls is float) and time_field and _stamp_like(value):
        return cls(0)
    return value


def _stamp_like(value: float) -> bool:
    """A wall-clock number, or the placeholder the format stores for one."""
    seconds = (PLACEHOLDER_EPOCH, EPOCH_S[1])
    millis = (PLACEHOLDER_EPOCH * 1000, EPOCH_MS[1])
    return seconds[0] <= value < seconds[1] or millis[0] <= value < millis[1]


# -- rendering ---------------------------------------------------------------------------


def row_line(row: Row, width: int = 40) -> str:
    """One row of the report: where, which call, and what differs."""
    entry = either(row)
    call = f"{entry.kind} {entry.name}"
    if row.op == "removed":
        return f"{where(row)}: {call} only in the recording (the program no longer makes it)"
    if row.op == "added":
        return f"{where(row)}: {call} only in the live run (a new call)"
    change = row.changes[0]
    more = len(row.changes) - 1
    extra = f" (+{more} more field{plural_s(more)})" if more else ""
    a, b = preview_pair(change.a, change.b, width)
    return f"{where(row)}: {call}: {change.path} {a} → {b}{extra}"


def drift_text(drift: Drift, *, cassette: str, width: int = 40) -> str:
    """The report for people: the changed answers, the changed calls, the outcomes."""
    lines = [
        f"drift of {cassette} against a live run ({len(drift.diff.rows)} aligned calls; "
        "A: the recording, B: the live run)"
    ]
    sections: tuple[tuple[str, tuple[Row, ...]], ...] = (
        ("answers changed (the world moved)", drift.answers),
        ("calls changed (the code moved)", drift.calls),
    )
    for title, rows in sections:
        lines.append(f"{title}: {len(rows)}")
        lines += [f"  {row_line(row, width)}" for row in rows]
    if drift.answers and drift.calls and _seq(drift.answers[0]) < _seq(drift.calls[0]):
        lines.append(
            f"  (calls after {where(drift.answers[0])} may have changed because its answer did)"
        )
    for row in drift.blocked:
        entry = either(row)
        lines.append(
            f"blocked live: {where(row)}: {entry.kind} {entry.name} has side effects and no "
            "dry_run stand-in, so it was not run; give it one (@deck.tool(side_effect=True, "
            "dry_run=…)) or pass --allow-side-effects"
        )
    if drift.appended:
        n = len(drift.appended)
        lines.append(
            f"not made live: {n} call{plural_s(n)} a later append run added to the recording "
            "(paths taken under faults); not drift"
        )
    changed = "changed" if drift.outcome_changed else "unchanged"
    lines.append(
        f"outcome {changed}: the recorded run {drift.recorded.text()}; "
        f"the live run {drift.live.text()}"
    )
    return "\n".join(lines)


def drift_json(drift: Drift, *, cassette: str) -> dict[str, Any]:
    """The report for machines; ``diff`` is ``faultdeck diff --format json``'s object."""

    def rows(found: tuple[Row, ...]) -> list[dict[str, Any]]:
        return [_row_json(row) for row in found]

    return {
        "cassette": cassette,
        "drifted": drift.drifted,
        "answers_changed": rows(drift.answers),
        "calls_changed": rows(drift.calls),
        "appended_not_made": rows(drift.appended),
        "blocked": rows(drift.blocked),
        "outcome": {
            "changed": drift.outcome_changed,
            "recorded": {"status": drift.recorded.status, "ok": drift.recorded.ok},
            "live": {"status": drift.live.status, "code": drift.live.code, "ok": drift.live.ok},
        },
        "diff": diff_json(drift.diff),
    }


def _row_json(row: Row) -> dict[str, Any]:
    entry = either(row)
    return {
        "op": row.op,
        "kind": entry.kind,
        "name": entry.name,
        "seq_recorded": row.place("a") or None,
        "seq_live": row.place("b") or None,
        "key_recorded": row.a.key if row.a is not None else None,
        "key_live": row.b.key if row.b is not None else None,
        "changes": [{"path": c.path, "recorded": c.a, "live": c.b} for c in row.changes],
    }


def _seq(row: Row) -> int:
    entry = row.b if row.b is not None else either(row)
    return entry.seq
