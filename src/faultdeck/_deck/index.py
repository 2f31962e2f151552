"""The replay index: a recording's calls in per-key FIFO queues, and the counts around them.

Keyed matching queues entries by key; strict matching by ``(key, seq)``. Taking an answer
is one dict lookup and a ``popleft``, so a lookup costs the same however long the cassette
is. The index counts what the report needs (asked, recorded, served, order changes) as it
goes. It has no lock of its own: the deck calls it under its lock.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from .._cassette.format import Entry
from .report import CallRecord, CallRef, Repeat


class ReplayIndex:
    """The recorded calls still to serve, and what the run has asked of them.

    Args:
        strict: queue by ``(key, seq)``, so that a call's seq must agree too.
        repeat_last: a call asked more often than it was recorded gets the last recorded
            answer again instead of nothing.

    Attributes:
        remaining: recorded calls not served yet.
        asked: how often each key was asked.
        recorded: how often each key was recorded.
        served: answers taken from the recording and served.
        order_changes: answers that came from earlier in the recording than the answer
            served just before them.
    """

    __slots__ = (
        "_last",
        "_last_served_seq",
        "_queues",
        "_repeat_last",
        "_strict",
        "asked",
        "order_changes",
        "recorded",
        "remaining",
        "served",
    )

    def __init__(self, *, strict: bool, repeat_last: bool) -> None:
        self._strict = strict
        self._repeat_last = repeat_last
        self._queues: dict[Any, deque[Entry]] = {}
        self._last: dict[str, Entry] = {}
        self._last_served_seq = 0
        self.remaining = 0
        self.asked: Counter[str] = Counter()
        self.recorded: Counter[str] = Counter()
        self.served = 0
        self.order_changes = 0

    def load(self, entries: Sequence[Entry]) -> None:
        """Queue ``entries`` (in file order) in place of whatever was queued before."""
        strict = self._strict
        queues: dict[Any, deque[Entry]] = {}
        for entry in entries:
            qkey: Any = (entry.key, entry.seq) if strict else entry.key
            queue = queues.get(qkey)
            if queue is None:
                queues[qkey] = deque((entry,))
            else:
                queue.append(entry)
        self._queues = queues
        self.remaining = len(entries)
        self.recorded = Counter(e.key for e in entries)

    def take(self, key: str, seq: int) -> Entry | None:
        """The answer for the call ``key`` at ``seq``, or ``None``; the ask is counted."""
        self.asked[key] += 1
        queue = self._queues.get((key, seq) if self._strict else key)
        if queue:
            entry = queue.popleft()
            self.remaining -= 1
            if self._repeat_last:
                self._last[key] = entry
            return entry
        # Asked more often than recorded (a retry after an injected fault): with
        # repeat_last the same request gets the same answer again; repeats() still counts it.
        return self._last.get(key)

    def has(self, key: str, seq: int) -> bool:
        """Whether ``take(key, seq)`` would give an answer (without counting the ask)."""
        if self._queues.get((key, seq) if self._strict else key):
            return True
        return key in self._last

    def peek(self, key: str, seq: int) -> Entry | None:
        """The answer ``take(key, seq)`` would give from its queue, not taken."""
        queue = self._queues.get((key, seq) if self._strict else key)
        return queue[0] if queue else None

    def serve(self, entry: Entry) -> None:
        """Count ``entry`` as served, and as an order change when it was recorded earlier."""
        self.served += 1
        if entry.seq < self._last_served_seq:
            self.order_changes += 1
        self._last_served_seq = entry.seq

    def unused(self) -> Iterator[Entry]:
        """The recorded calls not taken, queue by queue."""
        for queue in self._queues.values():
            yield from queue

    def unused_refs(self) -> tuple[CallRef, ...]:
        """The recorded calls not taken, in file order, as the report names them."""
        refs = (CallRef(e.seq, e.kind, e.name, e.key, e.line) for e in self.unused())
        return tuple(sorted(refs, key=lambda r: r.line))

    def repeats(self, calls: Iterable[CallRecord]) -> tuple[Repeat, ...]:
        """Keys asked more often than recorded; ``calls`` give each key's kind and name."""
        names = {c.key: (c.kind, c.name) for c in calls}
        recorded = self.recorded
        return tuple(
            Repeat(key, *names[key], recorded[key], asked)
            for key, asked in self.asked.items()
            if 0 < recorded[key] < asked
        )
