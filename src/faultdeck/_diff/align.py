"""Call-path diff of two cassettes: aligned calls, the first divergence, field-level changes.

Pure: two ``Recording`` objects in, a ``CallPathDiff`` out; ``render`` makes text for
terminals, a JSON-ready dict for machines and one self-contained HTML page for people.

Each side's calls are put in call order (``order``: start order, so concurrent runs align
by the order calls began, not finished; calls a later ``append`` run added go where it made
them) and aligned by ``(kind, name, key)`` with ``difflib``. Between equal stretches, calls
of the same kind and name are paired in order as "changed" rows with a field-level diff;
the rest are "removed" (only in A) or "added" (only in B). Ignored fields (``ignore=`` plus
both headers' ``volatile``) are dropped at any depth before comparing.

When one side forked from the other (``fork.forked``), the calls they share, up to the
fork point, are left out of the rows and counted in ``shared``: the diff starts there.
"""

from __future__ import annotations

import contextlib
import difflib
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import orjson

from .._cassette.reader import Entry, Recording
from .._keys.canonical import make_key
from .._keys.fields import field_diff, preview_pair
from .._keys.ids import IdMap
from .._keys.normalize import Normalizer
from .fork import Forked
from .order import Placed, run_order

Op = Literal["same", "changed", "removed", "added"]
OPS: tuple[Op, ...] = ("same", "changed", "removed", "added")


@dataclass(frozen=True, slots=True)
class Change:
    """One field that differs between two paired calls.

    Attributes:
        path: where, e.g. ``args.top_k`` or ``out.choices[0].message.content``; ``schema``
            for the tool's schema version, ``result`` when one call returned and the other
            raised or streamed.
        a: the value in A, or ``"<absent>"`` (``_fields.ABSENT``) when A lacks the field.
        b: the value in B, likewise.
    """

    path: str
    a: Any
    b: Any


@dataclass(frozen=True, slots=True)
class Row:
    """One aligned position of the call path.

    Attributes:
        op: ``same``; ``changed`` (same kind and name, different args or, with responses,
            different result); ``removed`` (only in A); ``added`` (only in B).
        a: the call in A (``None`` when added).
        b: the call in B (``None`` when removed).
        changes: what differs, for ``changed`` rows.
        place_a: where the call in A stands in its run: its seq (``"7"``), or ``"5+1"``
            for the first call a later ``append`` run added after seq 5; ``""`` when added.
        place_b: likewise in B.
    """

    op: Op
    a: Entry | None
    b: Entry | None
    changes: tuple[Change, ...] = ()
    place_a: str = ""
    place_b: str = ""

    def place(self, side: Literal["a", "b"]) -> str:
        """Where the call on ``side`` stands (``place_a``/``place_b``), its seq when the row
        was built without places; ``""`` when that side has no call."""
        entry, place = (self.a, self.place_a) if side == "a" else (self.b, self.place_b)
        if entry is None:
            return ""
        return place or str(entry.seq)

    def appended(self, side: Literal["a", "b"]) -> bool:
        """Whether the call on ``side`` was added by a later ``append`` run."""
        return "+" in self.place(side)


@dataclass(frozen=True, slots=True)
class CallPathDiff:
    """The aligned call paths of two cassettes.

    Attributes:
        a: the path of A.
        b: the path of B.
        rows: every aligned position, in call order.
        first: the index in ``rows`` of the first row that is not ``same``; ``None`` when
            the two agree.
        responses: whether results were compared.
        ignored: the field names that were never compared, sorted.
        forked: how one side forked from the other, if it did.
        shared: the fork's calls up to the fork point, shared with its parent and left out
            of ``rows`` (0 unless ``forked.intact``).
    """

    a: str
    b: str
    rows: tuple[Row, ...]
    first: int | None
    responses: bool = False
    ignored: tuple[str, ...] = ()
    forked: Forked | None = None
    shared: int = 0

    @property
    def identical(self) -> bool:
        """Whether every call agrees."""
        return self.first is None

    @property
    def counts(self) -> dict[str, int]:
        """How many rows of each op, every op present."""
        return {op: sum(1 for row in self.rows if row.op == op) for op in OPS}

    def first_divergence(self, width: int = 40) -> str:
        """One line: where the runs first part and how, or that they agree.

        Args:
            width: the longest preview of each side's value; ``0`` names the differing
                field without its values.
        """
        since = self._since()
        if self.first is None:
            n = len(self.rows)
            agree = f"{n} call{plural_s(n)} agree{'s' if n == 1 else ''}"
            if since:
                return f"no divergence after the fork at seq {since}: {agree}{self._shared()}"
            return f"no divergence: {agree}"
        row = self.rows[self.first]
        # Every row before the first divergence is "same", so its index counts them.
        agreed = self.first
        if since:
            after = f"{agreed} agreeing call{plural_s(agreed)} after" if agreed else "right after"
            return (
                f"first divergence at {where(row)} ({after} the fork at seq {since}"
                f"{self._shared()}): {what(row, width)}"
            )
        return (
            f"first divergence at {where(row)} (after {agreed} agreeing call{plural_s(agreed)}): "
            f"{what(row, width)}"
        )

    def _since(self) -> int | None:
        return self.forked.at if self.forked is not None and self.forked.intact else None

    def _shared(self) -> str:
        return f", {self.shared} shared before it" if self.shared else ""


def diff_recordings(
    a: Recording,
    b: Recording,
    *,
    responses: bool = False,
    ignore: Iterable[str] = (),
    forked: Forked | None = None,
) -> CallPathDiff:
    """Align the calls of two recordings and say where and how they differ.

    Args:
        a: the first recording (the baseline).
        b: the second recording.
        responses: compare results (outputs, errors, streams) too, not just what was asked.
        ignore: field names, at any depth, whose values are never compared; both headers'
            ``volatile`` lists are added.
        forked: one side forked from the other (``fork.forked``): when its parent is
            intact, the calls up to the fork point are shared and left out.
    """
    ignored = frozenset(ignore) | frozenset(a.header.volatile) | frozenset(b.header.volatile)
    placed_a, placed_b = run_order(a.entries), run_order(b.entries)
    shared = 0
    if forked is not None and forked.intact:
        before = len(placed_b if forked.fork == "b" else placed_a)
        placed_a, placed_b = _after(placed_a, forked.at), _after(placed_b, forked.at)
        shared = before - len(placed_b if forked.fork == "b" else placed_a)
    side_a = [entry for entry, _ in placed_a]
    side_b = [entry for entry, _ in placed_b]
    pairer = _Pairer(placed_a, placed_b, ignored, responses)
    matcher = difflib.SequenceMatcher(
        None,
        [_token(e, ignored) for e in side_a],
        [_token(e, ignored) for e in side_b],
        autojunk=False,
    )
    rows: list[Row] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            rows.extend(
                pairer.pair(i, j) for i, j in zip(range(i1, i2), range(j1, j2), strict=True)
            )
        else:
            rows.extend(pairer.replace(i1, i2, j1, j2))
    first = next((i for i, row in enumerate(rows) if row.op != "same"), None)
    return CallPathDiff(
        a.path, b.path, tuple(rows), first, responses, tuple(sorted(ignored)), forked, shared
    )


def _after(placed: list[Placed], at: int) -> list[Placed]:
    """The calls after the fork point: the ones a later run appended, and seqs past ``at``."""
    return [(entry, place) for entry, place in placed if "+" in place or entry.seq > at]


class _Pairer:
    """Turns aligned positions into rows; holds each side's comparable results."""

    __slots__ = ("_a", "_b", "_ignored", "_out_a", "_out_b", "_place_a", "_place_b")

    def __init__(
        self, a: Sequence[Placed], b: Sequence[Placed], ignored: frozenset[str], responses: bool
    ) -> None:
        self._a = [entry for entry, _ in a]
        self._b = [entry for entry, _ in b]
        self._place_a = [place for _, place in a]
        self._place_b = [place for _, place in b]
        self._ignored = ignored
        self._out_a = _comparable_results(self._a, ignored) if responses else None
        self._out_b = _comparable_results(self._b, ignored) if responses else None

    def pair(self, i: int, j: int) -> Row:
        ea, eb = self._a[i], self._b[j]
        changes: list[Change] = []
        if ea.schema != eb.schema:
            changes.append(Change("schema", ea.schema, eb.schema))
        args_a, args_b = _strip(ea.args, self._ignored), _strip(eb.args, self._ignored)
        changes.extend(Change(*c) for c in field_diff(args_a, args_b, "args"))
        if self._out_a is not None and self._out_b is not None:
            if ea.result != eb.result:
                changes.append(Change("result", ea.result, eb.result))
            else:
                diff = field_diff(self._out_a[i], self._out_b[j], ea.result)
                changes.extend(Change(*c) for c in diff)
        # Keys that differ only through ignored fields leave nothing to show: the calls agree.
        op: Op = "changed" if changes else "same"
        return Row(op, ea, eb, tuple(changes), self._place_a[i], self._place_b[j])

    def replace(self, i1: int, i2: int, j1: int, j2: int) -> list[Row]:
        """Pair A[i1:i2] with B[j1:j2] by kind and name, greedily and in order."""
        # Positions in B per (kind, name): a queue per name keeps pairing linear.
        slots: dict[tuple[str, str], deque[int]] = {}
        for k in range(j1, j2):
            slots.setdefault((self._b[k].kind, self._b[k].name), deque()).append(k)
        rows: list[Row] = []
        j = j1
        for i in range(i1, i2):
            entry = self._a[i]
            queue = slots.get((entry.kind, entry.name))
            while queue and queue[0] < j:
                queue.popleft()
            if not queue:
                rows.append(Row("removed", entry, None, place_a=self._place_a[i]))
                continue
            k = queue.popleft()
            rows.extend(self._added(m) for m in range(j, k))
            rows.append(self.pair(i, k))
            j = k + 1
        rows.extend(self._added(m) for m in range(j, j2))
        return rows

    def _added(self, j: int) -> Row:
        return Row("added", None, self._b[j], place_b=self._place_b[j])


def _token(entry: Entry, ignored: frozenset[str]) -> tuple[str, str, str]:
    if not ignored:
        return (entry.kind, entry.name, entry.key)
    # The recorded key may have hashed an ignored field; recompute it from the stored args
    # without them, on both sides alike.
    args = _strip(entry.args, ignored)
    return (entry.kind, entry.name, make_key(entry.kind, entry.name, args, entry.schema))


def _strip(value: Any, ignored: frozenset[str]) -> Any:
    """``value`` without the ignored dict keys, at any depth."""
    if not ignored:
        return value
    cls = type(value)
    if cls is dict:
        return {k: _strip(v, ignored) for k, v in value.items() if k not in ignored}
    if cls is list:
        return [_strip(v, ignored) for v in value]
    return value


def _comparable_results(entries: Sequence[Entry], ignored: frozenset[str]) -> list[Any]:
    """Each call's result as compared: ignored fields dropped, stream noise dropped, and
    provider ids renamed to ``«id:N»`` by first appearance over this side's run."""
    values = [_strip(_denoise(e), ignored) for e in entries]
    normalizer = Normalizer()
    ids = IdMap()
    for value in values:
        ids.learn(normalizer.output_ids(value))
    return [_rename(value, ids) for value in values]


def _denoise(entry: Entry) -> Any:
    value = entry.value
    if entry.result == "stream" and type(value) is dict and type(value.get("events")) is list:
        return {**value, "events": [_event(ev) for ev in value["events"]]}
    return value


def _event(event: Any) -> Any:
    if type(event) is not dict:
        return event
    # An event's ms is a timing, not content.
    result = {k: v for k, v in event.items() if k != "ms"}
    data = result.get("data")
    if type(data) is str and data[:1] in ("{", "["):
        # SSE data is JSON text: parsed, its ids can be renamed and its fields diffed.
        with contextlib.suppress(orjson.JSONDecodeError):
            result["data"] = orjson.loads(data)
    return result


def _rename(value: Any, ids: IdMap) -> Any:
    cls = type(value)
    if cls is str:
        return ids.get(value) or value
    if cls is dict:
        return {k: _rename(v, ids) for k, v in value.items()}
    if cls is list:
        return [_rename(v, ids) for v in value]
    return value


def plural_s(n: int) -> str:
    return "" if n == 1 else "s"


def either(row: Row) -> Entry:
    if row.a is not None:
        return row.a
    if row.b is not None:
        return row.b
    raise ValueError("a row holds at least one call")


def where(row: Row) -> str:
    """Where a row stands: ``seq 5``, ``seq 5 of A / 6 of B``, ``seq 5+1 of B``."""
    a, b = row.place("a"), row.place("b")
    if a and b:
        return f"seq {a}" if a == b else f"seq {a} of A / {b} of B"
    return f"seq {a} of A" if a else f"seq {b} of B"


def appended_note(row: Row) -> str:
    """`` (appended to B at line 12)`` for a call a later ``append`` run added; else ``""``."""
    sides: tuple[tuple[Literal["a", "b"], Entry | None], ...] = (("a", row.a), ("b", row.b))
    notes = [
        f"appended to {side.upper()} at line {entry.line}"
        for side, entry in sides
        if entry is not None and row.appended(side)
    ]
    return f" ({', '.join(notes)})" if notes else ""


def what(row: Row, width: int) -> str:
    entry = either(row)
    call = f"{entry.kind} {entry.name}"
    if row.op == "removed":
        return f"{call} only in A{appended_note(row)}"
    if row.op == "added":
        return f"{call} only in B{appended_note(row)}"
    c = row.changes[0]
    more = len(row.changes) - 1
    extra = f" (+{more} more field{plural_s(more)})" if more else ""
    extra += appended_note(row)
    if width <= 0:
        return f"{call}: {c.path}{extra}"
    a, b = preview_pair(c.a, c.b, width)
    return f"{call}: {c.path} {a} → {b}{extra}"
