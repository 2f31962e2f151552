"""Each side's calls in the order its run made them, and the place a reader sees for each.

A cassette is usually one run, its calls numbered by ``seq`` in start order. A run in
``append`` mode adds only the calls the cassette could not answer, after an end line, and
numbers them in its own run: a call it made after replaying the recorded seq 1 to 5 gets
seq 6, the seq a recorded call already has. So the lines a later run wrote are told apart
by their seq being met again in the file, and each is put back where that run made it:
after the recorded calls it replayed before it. Its place reads ``5+1``, ``5+2``…: the
first, second… call added after seq 5.

Pure: entries in, ``(entry, place)`` pairs out.
"""

from __future__ import annotations

from collections.abc import Sequence

from .._cassette.format import Entry

Placed = tuple[Entry, str]


def run_order(entries: Sequence[Entry]) -> list[Placed]:
    """``entries`` (in file order) in call order, each with its place: ``"7"`` for a call
    of the run that wrote the cassette, ``"5+1"`` for the first call a later run added
    after seq 5.
    """
    runs = _runs(entries)
    # Start order, not file order: concurrent calls finish (and are written) out of seq.
    order = sorted(runs[0], key=lambda e: (e.seq, e.line))
    for later in runs[1:]:
        order = _merge(order, sorted(later, key=lambda e: (e.seq, e.line)))
    first_run = {id(e) for e in runs[0]}
    placed: list[Placed] = []
    anchor, added = 0, 0
    for entry in order:
        if id(entry) in first_run:
            anchor, added = entry.seq, 0
            placed.append((entry, str(entry.seq)))
        else:
            added += 1
            placed.append((entry, f"{anchor}+{added}"))
    return placed


def _runs(entries: Sequence[Entry]) -> list[list[Entry]]:
    """The entries split by the run that wrote them: a seq met again starts the next run.

    A run numbers its calls once each, so within one run no seq repeats; lines out of seq
    order (concurrent calls) stay in their run.
    """
    runs: list[list[Entry]] = [[]]
    seen: set[int] = set()
    for entry in entries:
        if entry.seq in seen:
            runs.append([])
            seen = set()
        seen.add(entry.seq)
        runs[-1].append(entry)
    return runs


def _merge(order: list[Entry], added: list[Entry]) -> list[Entry]:
    """``added`` (one later run's lines, by seq) put into ``order``.

    That run's call with seq ``s``, its ``i``-th new call, came after ``s - 1 - i``
    replayed calls: taken to be the first ones of ``order``, as a run that replays the
    cassette's calls in order has it.
    """
    after: dict[int, list[Entry]] = {}
    for i, entry in enumerate(added):
        replayed = min(max(entry.seq - 1 - i, 0), len(order))
        after.setdefault(replayed, []).append(entry)
    merged: list[Entry] = list(after.get(0, ()))
    for k, entry in enumerate(order, 1):
        merged.append(entry)
        merged.extend(after.get(k, ()))
    return merged
