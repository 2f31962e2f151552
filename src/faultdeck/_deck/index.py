"""The replay index: a recording's calls by key, queued in file order, and the counts around
them.

Keyed matching queues entries by key; strict matching by ``(key, seq)``. A key recorded once
(most of them) holds its entry directly; only a key recorded again gets a ``deque``, so a
100,000-call cassette does not pay for 100,000 deques. Taking an answer is one dict lookup
(and a ``popleft`` for a repeated key), so a lookup costs the same however long the
cassette is. The index counts what the report needs (asked, served, order changes) as it
goes; how often each key was recorded is counted from the entries when first asked for. It
has no lock of its own: the deck calls it under its lock.

It also follows the recording in file order (``expected``): the first entry still queued
after the last one taken, the entry an in-order replay asks for next, whose stored args
``Run.begin`` compares a call's with before it keys the call. While every answer so far was
taken that way (``take_expected``), from the first line on, the entries before the cursor
are exactly the ones taken: such a take only moves the cursor, and the queues and counts
catch up (in one pass) when anything else reads or takes. A long in-order replay then never
touches a dict per call. A take by key of the very entry ``expected`` gives keeps that
order; any other take ends it.

A key asked more often than it was recorded gets what the repeat policy says: nothing (a
miss), its last answer again (``last``), or its answers again from the first (``cycle``: a
server answering one program run after another). ``rewind`` starts every key over.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from .._base.config import Repeats
from .._cassette.format import Entry
from .report import CallRecord, CallRef, Repeat

# How far ahead of its guess ``ReplayIndex`` looks for an entry taken elsewhere.
_LOOK_AHEAD = 8


class Counts(dict[str, int]):
    """How often each key was seen: a plain dict that reads 0 for a key never seen.

    Not a ``Counter``: the index adds with ``get`` (``Counter.__missing__`` is a Python call
    on every new key), and reading a missing key gives 0 as a ``Counter`` would.
    """

    __slots__ = ()

    def __missing__(self, key: str) -> int:
        return 0


class ReplayIndex:
    """The recorded calls still to serve, and what the run has asked of them.

    Args:
        strict: queue by ``(key, seq)``, so that a call's seq must agree too.
        repeats: what a call asked more often than it was recorded gets: ``miss`` (nothing),
            ``last`` (the last recorded answer again) or ``cycle`` (its recorded answers
            again from the first: asked a k-th time, k past the r times it was recorded,
            a key gets its ((k - 1) mod r + 1)-th answer).
    """

    __slots__ = (
        "_asked",
        "_by_key",
        "_cursor",
        "_cycle",
        "_entries",
        "_in_order",
        "_last",
        "_last_served_seq",
        "_order_changes",
        "_queues",
        "_recorded",
        "_remaining",
        "_repeat_last",
        "_served",
        "_settled",
        "_strict",
    )

    def __init__(self, *, strict: bool, repeats: Repeats = "miss") -> None:
        self._strict = strict
        self._repeat_last = repeats == "last"
        self._cycle = repeats == "cycle"
        # A key's entry, or a deque of them when the key was recorded more than once.
        self._queues: dict[Any, Entry | deque[Entry]] = {}
        self._entries: Sequence[Entry] = ()
        self._cursor = 0
        # Every answer so far taken in file order (by ``take_expected``, or by key where it
        # would have); the ones before ``_cursor`` from ``_settled`` on are not yet out of
        # the queues and counts.
        self._in_order = True
        self._settled = 0
        self._recorded: Counts | None = Counts()
        # Cycling: each key's entries in file order, gathered when a key first starts over.
        self._by_key: dict[str, list[Entry]] | None = None
        self._last: dict[str, Entry] = {}
        self._last_served_seq = 0
        self._remaining = 0
        self._asked = Counts()
        self._served = 0
        self._order_changes = 0

    def load(self, entries: Sequence[Entry]) -> None:
        """Queue ``entries`` (in file order) in place of whatever was queued before."""
        queues: dict[Any, Entry | deque[Entry]] = {}
        get = queues.get
        if self._strict:
            for entry in entries:
                qkey: Any = (entry.key, entry.seq)
                held = get(qkey)
                if held is None:
                    queues[qkey] = entry
                elif isinstance(held, deque):
                    held.append(entry)
                else:
                    queues[qkey] = deque((held, entry))
        else:
            setdefault = queues.setdefault
            for entry in entries:
                held = setdefault(entry.key, entry)
                if held is not entry:
                    if isinstance(held, deque):
                        held.append(entry)
                    else:
                        queues[entry.key] = deque((held, entry))
        self._queues = queues
        self._entries = entries
        self._cursor = self._settled = 0
        self._in_order = True
        self._recorded = None  # counted from the entries when first read
        self._by_key = None
        self._remaining = len(entries)

    def rewind(self) -> None:
        """Start over, as a new run of the program: every key's answers queued again from
        the first, nothing asked, served or taken out of order."""
        self.load(self._entries)
        self._last = {}
        self._last_served_seq = 0
        self._asked = Counts()
        self._served = 0
        self._order_changes = 0

    # -- what the report reads -------------------------------------------------------------

    @property
    def remaining(self) -> int:
        """Recorded calls not served yet."""
        self._settle()
        return self._remaining

    @property
    def served(self) -> int:
        """Answers taken from the recording and served."""
        self._settle()
        return self._served

    @property
    def order_changes(self) -> int:
        """Answers that came from earlier in the recording than the answer served just
        before them."""
        self._settle()
        return self._order_changes

    @property
    def asked(self) -> Counts:
        """How often each key was asked (0 for a key never asked)."""
        self._settle()
        return self._asked

    @property
    def recorded(self) -> Counts:
        """How often each key was recorded (0 for a key not in the recording)."""
        if self._recorded is None:
            self._recorded = Counts(Counter(e.key for e in self._entries))
        return self._recorded

    # -- taking answers --------------------------------------------------------------------

    def take(self, key: str, seq: int) -> Entry | None:
        """The answer for the call ``key`` at ``seq``, taken and served, or ``None``; the
        ask is counted."""
        self._settle()
        qkey = (key, seq) if self._strict else key
        held = self._queues.get(qkey)
        if held is not None and (type(held) is not deque or held):
            entry: Entry = held[0] if type(held) is deque else held  # type: ignore[assignment]
            self._taken(key, qkey, entry)
            self._passed(entry)
            return entry
        asked = self._asked
        times = asked[key] = asked.get(key, 0) + 1
        # Asked more often than recorded (a retry after an injected fault, the program run
        # again): with repeat_last the same request gets the same answer again, cycling its
        # answers start over; repeats() still counts it.
        again = self._again(key, times) if self._cycle else self._last.get(key)
        if again is not None:
            self._serve(again)
        return again

    def has(self, key: str, seq: int) -> bool:
        """Whether ``take(key, seq)`` would give an answer (without counting the ask)."""
        self._settle()
        if self._queues.get((key, seq) if self._strict else key):
            return True
        if self._cycle:
            return 0 < self.recorded[key] <= self._asked[key]
        return key in self._last

    def queued(self, entry: Entry) -> bool:
        """Whether ``entry`` is still queued: not taken yet."""
        self._settle()
        held = self._queues.get((entry.key, entry.seq) if self._strict else entry.key)
        if type(held) is deque:
            return any(e is entry for e in held)
        return held is entry

    def peek(self, key: str, seq: int) -> Entry | None:
        """The answer ``take(key, seq)`` would give from its queue, not taken."""
        self._settle()
        held = self._queues.get((key, seq) if self._strict else key)
        if type(held) is deque:
            return held[0] if held else None
        return held  # type: ignore[return-value]  # an entry or None

    def take_expected(self, entry: Entry) -> None:
        """Take and serve ``entry``, which ``expected`` just gave: while every answer so far
        came this way, only the cursor moves."""
        if self._in_order:
            self._cursor += 1
        else:
            self._settle()
            key = entry.key
            self._taken(key, (key, entry.seq) if self._strict else key, entry)
            self._passed(entry)

    def expected(self, seq: int) -> Entry | None:
        """The first entry, in file order from the last one taken, that is still the next of
        its queue: the answer an in-order replay asks for next at ``seq`` (a guess; ``None``
        past the end, or when matching is strict and that entry's seq is another). Entries
        passed over stay queued for ``take``."""
        entries, i, strict = self._entries, self._cursor, self._strict
        n = len(entries)
        if self._in_order:  # the entries from the cursor on are all still queued, in order
            entry = entries[i] if i < n else None
            return None if entry is None or (strict and entry.seq != seq) else entry
        queues = self._queues
        while i < n:
            entry = entries[i]
            held = queues.get((entry.key, entry.seq) if strict else entry.key)
            if held is entry or (type(held) is deque and held and held[0] is entry):
                self._cursor = i
                return None if strict and entry.seq != seq else entry
            i += 1
        self._cursor = n
        return None

    def _again(self, key: str, times: int) -> Entry | None:
        """Cycling, the answer the ``times``-th ask of ``key`` gets once it was asked as
        often as recorded: its recorded answers start over from the first."""
        recorded = self.recorded[key]
        if times <= recorded or not recorded:
            return None
        by_key = self._by_key
        if by_key is None:
            by_key = self._by_key = {}
            for entry in self._entries:
                by_key.setdefault(entry.key, []).append(entry)
        return by_key[key][(times - 1) % recorded]

    def _serve(self, entry: Entry) -> None:
        """Count ``entry`` as served, and as an order change when it was recorded earlier."""
        self._served += 1
        if entry.seq < self._last_served_seq:
            self._order_changes += 1
        self._last_served_seq = entry.seq

    def _taken(self, key: str, qkey: Any, entry: Entry) -> None:
        """``entry``, the next of its queue ``qkey``, is taken and served."""
        queues = self._queues
        held = queues[qkey]
        if held is entry:
            del queues[qkey]
        else:
            held.popleft()  # type: ignore[union-attr]  # not the entry: its deque
        asked = self._asked
        asked[key] = asked.get(key, 0) + 1
        self._remaining -= 1
        if self._repeat_last:
            self._last[key] = entry
        self._serve(entry)

    def _settle(self) -> None:
        """Take the entries ``take_expected`` passed over, as ``take`` would have."""
        start, end = self._settled, self._cursor
        if not self._in_order or start == end:
            return
        self._settled = end
        # ``_taken`` for each, inlined: a rehearsal's fault settles every call before it.
        queues, asked, strict = self._queues, self._asked, self._strict
        last = self._last if self._repeat_last else None
        last_seq, changes = self._last_served_seq, 0
        for entry in self._entries[start:end]:
            key = entry.key
            qkey = (key, entry.seq) if strict else key
            held = queues[qkey]
            if held is entry:
                del queues[qkey]
            else:
                held.popleft()  # type: ignore[union-attr]  # not the entry: its deque
            asked[key] = asked.get(key, 0) + 1
            if last is not None:
                last[key] = entry
            if entry.seq < last_seq:
                changes += 1
            last_seq = entry.seq
        self._remaining -= end - start
        self._served += end - start
        self._order_changes += changes
        self._last_served_seq = last_seq

    def _passed(self, entry: Entry) -> None:
        """``entry`` was taken: an in-order replay asks for the one after it next (looked for
        a few entries ahead, past calls a loop skipped; else the guess stays). Taken from
        anywhere but the cursor, it ends the in-order run (``take_expected`` then takes by key)."""
        entries, i = self._entries, self._cursor
        n = len(entries)
        if i < n and entries[i] is entry:  # the guess was right
            self._cursor = i + 1
            if self._in_order:  # taken, after settling, where take_expected would have
                self._settled = i + 1
            return
        self._in_order = False
        for j in range(i + 1, min(i + _LOOK_AHEAD, n)):
            if entries[j] is entry:
                self._cursor = j + 1
                return

    def forget_after(self, seq: int) -> None:
        """Forget the recorded calls after ``seq`` not taken yet: a fork that left its
        parent's path there runs every later call live, so none of them is unused."""
        self._settle()
        self._in_order = False  # what is left is taken by key
        for qkey, held in list(self._queues.items()):
            queued: Sequence[Entry] = held if isinstance(held, deque) else (held,)
            kept = [e for e in queued if e.seq <= seq]
            self._remaining -= len(queued) - len(kept)
            if not kept:
                del self._queues[qkey]
            elif len(kept) < len(queued):
                self._queues[qkey] = kept[0] if len(kept) == 1 else deque(kept)

    # -- what is left ----------------------------------------------------------------------

    def unused(self) -> Iterator[Entry]:
        """The recorded calls not taken, queue by queue."""
        self._settle()
        for held in self._queues.values():
            if type(held) is deque:
                yield from held
            else:
                yield held  # type: ignore[misc]  # not a deque: an entry

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
