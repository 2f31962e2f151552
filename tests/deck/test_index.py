"""The replay index: per-key FIFO answers, an entry held directly until its key repeats.

Driven through its own interface with entries as the reader builds them; every answer and
count checked against what the recording says.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from faultdeck._cassette.format import Entry
from faultdeck._deck.index import ReplayIndex
from faultdeck._deck.report import CallRecord, CallRef, Repeat


def entry(seq: int, key: str) -> Entry:
    return Entry(seq, "tool", key.split(":")[1], key, {}, "out", f"answer {seq}", line=seq + 1)


# a, b, a, c, a: "tool:a" repeats, the others are recorded once
ENTRIES = (
    entry(1, "tool:a"),
    entry(2, "tool:b"),
    entry(3, "tool:a"),
    entry(4, "tool:c"),
    entry(5, "tool:a"),
)


def keyed(*, repeat_last: bool = False) -> ReplayIndex:
    index = ReplayIndex(strict=False, repeat_last=repeat_last)
    index.load(ENTRIES)
    return index


def test_a_key_gives_its_answers_in_file_order_then_none() -> None:
    index = keyed()
    assert [index.take("tool:a", 0) for _ in range(4)] == [ENTRIES[0], ENTRIES[2], ENTRIES[4], None]
    assert index.take("tool:b", 0) is ENTRIES[1]
    assert index.take("tool:b", 0) is None
    assert index.take("tool:zzz", 0) is None
    assert index.remaining == 1
    assert list(index.unused()) == [ENTRIES[3]]


def test_has_and_peek_do_not_take() -> None:
    index = keyed()
    assert index.has("tool:c", 0)
    assert index.peek("tool:c", 0) is ENTRIES[3]
    assert index.peek("tool:a", 0) is ENTRIES[0]
    assert index.asked == {}
    assert index.remaining == len(ENTRIES)
    assert index.take("tool:c", 0) is ENTRIES[3]
    assert not index.has("tool:c", 0)
    assert index.peek("tool:c", 0) is None
    assert not index.has("tool:nope", 0)
    for _ in range(3):
        index.take("tool:a", 0)
    assert not index.has("tool:a", 0)
    assert index.peek("tool:a", 0) is None


def test_counts_read_zero_for_keys_never_seen() -> None:
    index = keyed()
    index.take("tool:a", 0)
    index.take("tool:a", 0)
    index.take("tool:new", 0)
    assert index.asked == {"tool:a": 2, "tool:new": 1}
    assert index.asked["tool:b"] == 0
    assert index.recorded == {"tool:a": 3, "tool:b": 1, "tool:c": 1}
    assert index.recorded["tool:new"] == 0
    assert index.recorded.get("tool:new", 0) == 0


def test_unused_refs_are_in_file_order() -> None:
    index = keyed()
    index.take("tool:a", 0)
    index.take("tool:c", 0)
    refs = index.unused_refs()
    left = (ENTRIES[1], ENTRIES[2], ENTRIES[4])
    assert refs == tuple(CallRef(e.seq, e.kind, e.name, e.key, e.line) for e in left)
    assert sorted(e.seq for e in index.unused()) == [2, 3, 5]


def test_repeat_last_gives_the_last_answer_again_and_counts_the_repeat() -> None:
    index = keyed(repeat_last=True)
    served = [index.take("tool:b", 0) for _ in range(3)]
    assert served == [ENTRIES[1]] * 3
    assert index.has("tool:b", 0)
    assert index.remaining == len(ENTRIES) - 1
    calls = [CallRecord(1, "tool", "b", "tool:b", "replay")]
    assert index.repeats(calls) == (Repeat("tool:b", "tool", "b", 1, 3),)


def test_without_repeat_last_an_answer_is_served_once() -> None:
    index = keyed()
    assert index.take("tool:c", 0) is ENTRIES[3]
    assert index.take("tool:c", 0) is None
    assert not index.has("tool:c", 0)


def test_strict_matching_needs_the_seq_too() -> None:
    index = ReplayIndex(strict=True, repeat_last=False)
    twice = (*ENTRIES, entry(3, "tool:a"))  # the same (key, seq) recorded twice
    index.load(twice)
    assert index.take("tool:a", 2) is None
    assert not index.has("tool:b", 1)
    assert index.peek("tool:a", 3) is ENTRIES[2]
    assert index.take("tool:a", 3) is ENTRIES[2]
    assert index.take("tool:a", 3) is twice[-1]
    assert index.take("tool:a", 3) is None
    assert index.take("tool:b", 2) is ENTRIES[1]
    assert index.recorded["tool:a"] == 4
    assert index.remaining == 3


def test_serve_counts_order_changes() -> None:
    index = keyed()
    for seq in (1, 2, 4, 3, 5):
        index.serve(ENTRIES[seq - 1])
    assert index.served == 5
    assert index.order_changes == 1


def test_load_replaces_what_was_queued() -> None:
    index = keyed()
    index.take("tool:a", 0)
    index.load(ENTRIES[3:])
    assert index.remaining == 2
    assert index.recorded == {"tool:c": 1, "tool:a": 1}
    assert index.take("tool:a", 0) is ENTRIES[4]
    assert index.take("tool:b", 0) is None


def test_taking_what_peek_gave_counts_as_take_and_serve_do() -> None:
    for strict, repeat_last in ((False, False), (False, True), (True, False)):
        peeked = ReplayIndex(strict=strict, repeat_last=repeat_last)
        taken = ReplayIndex(strict=strict, repeat_last=repeat_last)
        peeked.load(ENTRIES)
        taken.load(ENTRIES)
        for key, seq in (("tool:a", 3), ("tool:a", 1), ("tool:c", 4), ("tool:a", 5), ("tool:b", 2)):
            head = peeked.peek(key, seq)
            assert head is not None
            peeked.take_peeked(key, seq, head)
            answer = taken.take(key, seq)
            assert answer is head
            taken.serve(answer)
        state = ("remaining", "served", "order_changes")
        assert [getattr(peeked, s) for s in state] == [getattr(taken, s) for s in state]
        assert peeked.asked == taken.asked
        assert list(peeked.unused()) == list(taken.unused())
        assert peeked.take("tool:a", 6) == taken.take("tool:a", 6)


def in_order(index: ReplayIndex, count: int) -> list[Entry]:
    """Take ``count`` answers as an in-order replay does: the expected one each time."""
    taken = []
    for seq in range(1, count + 1):
        expected = index.expected(seq)
        assert expected is not None
        index.take_next(expected)
        taken.append(expected)
    return taken


def test_in_order_takes_are_counted_as_the_keyed_takes_would_count_them() -> None:
    fast, keyed_index = keyed(repeat_last=True), keyed(repeat_last=True)
    taken = in_order(fast, 4)
    assert taken == list(ENTRIES[:4])
    for e in ENTRIES[:4]:
        keyed_index.take_peeked(e.key, e.seq, keyed_index.peek(e.key, e.seq) or e)
    for index in (fast, keyed_index):
        assert index.remaining == 1
        assert index.served == 4
        assert index.order_changes == 0
        assert index.asked == {"tool:a": 2, "tool:b": 1, "tool:c": 1}
        assert list(index.unused()) == [ENTRIES[4]]
    # The last answer of each key is remembered for a repeat, as by any take.
    assert fast.take("tool:b", 5) is ENTRIES[1]
    assert fast.take("tool:a", 6) is ENTRIES[4]  # still queued: the next of its key
    assert fast.take("tool:a", 7) is ENTRIES[4]  # then repeated


def test_a_keyed_take_after_in_order_ones_sees_them_taken() -> None:
    index = keyed()
    in_order(index, 2)
    assert index.take("tool:a", 3) is ENTRIES[2]  # entries 1 and 2 are gone from the queues
    assert index.expected(4) is ENTRIES[3]
    index.take_next(ENTRIES[3])
    assert index.take("tool:a", 5) is ENTRIES[4]
    assert index.remaining == 0
    assert index.asked == {"tool:a": 3, "tool:b": 1, "tool:c": 1}
    assert index.expected(6) is None


def test_strict_matching_expects_an_entry_only_at_its_own_seq() -> None:
    index = ReplayIndex(strict=True, repeat_last=False)
    index.load(ENTRIES)
    assert index.expected(2) is None  # the next line was recorded at seq 1
    assert index.expected(1) is ENTRIES[0]
    index.take_next(ENTRIES[0])
    assert index.expected(2) is ENTRIES[1]
    assert index.peek("tool:a", 1) is None
    assert index.peek("tool:a", 3) is ENTRIES[2]


# -- against a plain model ------------------------------------------------------------------


class Model:
    """The index's contract with nothing saved: a deque per key, every count kept at once."""

    def __init__(self, entries: list[Entry], *, strict: bool, repeat_last: bool) -> None:
        self.strict, self.repeat_last = strict, repeat_last
        self.queues: dict[Any, deque[Entry]] = {}
        for e in entries:
            self.queues.setdefault(self.qkey(e.key, e.seq), deque()).append(e)
        self.last: dict[str, Entry] = {}
        self.asked: dict[str, int] = {}
        self.remaining, self.served, self.order_changes, self.last_seq = len(entries), 0, 0, 0

    def qkey(self, key: str, seq: int) -> Any:
        return (key, seq) if self.strict else key

    def take(self, key: str, seq: int) -> Entry | None:
        self.asked[key] = self.asked.get(key, 0) + 1
        queue = self.queues.get(self.qkey(key, seq))
        if not queue:
            return self.last.get(key)
        entry = queue.popleft()
        self.remaining -= 1
        if self.repeat_last:
            self.last[key] = entry
        return entry

    def head(self, key: str, seq: int) -> Entry | None:
        queue = self.queues.get(self.qkey(key, seq))
        return queue[0] if queue else None

    def has(self, key: str, seq: int) -> bool:
        return self.head(key, seq) is not None or key in self.last

    def serve(self, entry: Entry) -> None:
        self.served += 1
        self.order_changes += entry.seq < self.last_seq
        self.last_seq = entry.seq

    def state(self) -> tuple[Any, ...]:
        unused = sorted(e.line for q in self.queues.values() for e in q)
        return self.remaining, self.served, self.order_changes, self.asked, unused


def state(index: ReplayIndex) -> tuple[Any, ...]:
    unused = sorted(e.line for e in index.unused())
    return index.remaining, index.served, index.order_changes, dict(index.asked), unused


KEYS = ("tool:a", "tool:b", "tool:c")
OPS = st.lists(
    st.tuples(
        st.sampled_from(("next", "take", "peek_take", "has", "peek", "look")),
        st.sampled_from(KEYS),
        st.integers(1, 14),
    ),
    max_size=30,
)


@settings(max_examples=400, deadline=None)
@given(
    keys=st.lists(st.sampled_from(KEYS), min_size=1, max_size=12),
    shuffled=st.randoms(use_true_random=False),
    ops=OPS,
    strict=st.booleans(),
    repeat_last=st.booleans(),
)
def test_any_mix_of_takes_answers_and_counts_as_the_plain_model(
    keys: list[str], shuffled: Any, ops: list[tuple[str, str, int]], strict: bool, repeat_last: bool
) -> None:
    # Seqs mostly in file order, some swapped (as threads write them).
    seqs = list(range(1, len(keys) + 1))
    if shuffled.random() < 0.3:
        i = shuffled.randrange(len(seqs))
        j = shuffled.randrange(len(seqs))
        seqs[i], seqs[j] = seqs[j], seqs[i]
    entries = [entry(seq, key) for seq, key in zip(seqs, keys, strict=True)]
    index = ReplayIndex(strict=strict, repeat_last=repeat_last)
    index.load(entries)
    model = Model(entries, strict=strict, repeat_last=repeat_last)
    for op, key, seq in ops:
        if op == "next":  # the as-stored route: the expected entry, taken in place
            expected = index.expected(seq)
            if expected is None:
                continue
            assert model.head(expected.key, expected.seq) is expected
            assert not strict or expected.seq == seq
            index.take_next(expected)
            assert model.take(expected.key, expected.seq) is expected
            model.serve(expected)
        elif op == "take":  # begin: take, then serve what it gave
            got = index.take(key, seq)
            assert got is model.take(key, seq)
            if got is not None:
                index.serve(got)
                model.serve(got)
        elif op == "peek_take":  # the keyed short route
            head = index.peek(key, seq)
            assert head is model.head(key, seq)
            if head is not None:
                index.take_peeked(key, seq, head)
                model.take(key, seq)
                model.serve(head)
        elif op == "has":
            assert index.has(key, seq) == model.has(key, seq)
        elif op == "peek":
            assert index.peek(key, seq) is model.head(key, seq)
        else:  # a report read in the middle of the run
            assert state(index) == model.state()
    assert state(index) == model.state()
