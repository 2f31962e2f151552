"""How a replay hands out recorded answers: each key's answers in file order, then a miss
(or, with ``repeats="last"``, the last one again; with ``repeats="cycle"``, all of them
again from the first); with strict matching only at the seq it was recorded at; and
``rewind`` starting it all over. Seen as a program sees it: what each call got and the
report, against a plain model of that contract, over a cassette whose seqs are sometimes
out of file order (as threads write them).
"""

from __future__ import annotations

from collections import deque
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import faultdeck as fd
from faultdeck._keys.canonical import make_key
from tests.support.calls import never

REWIND = "«rewind»"
IDS = [f"{n}2c5e1a4-7b3d-4f6e-9a1b-5d8c3e2f7a90" for n in range(4)]
"""Ids as a program draws them (UUIDs): one an answer hands out, then one per run."""
HEADER = {"faultdeck": 1, "match": "keyed", "harness": {}, "env": {}, "volatile": []}


def key(name: str) -> str:
    return make_key("tool", name, {})


def write(path: Path, names: list[str], seqs: list[int]) -> None:
    """A cassette of calls ``names`` (no args), each answering its own seq."""
    lines: list[Any] = [HEADER]
    for seq, name in zip(seqs, names, strict=True):
        line = {"seq": seq, "kind": "tool", "name": name, "key": key(name), "args": {}}
        lines.append({**line, "out": seq, "ms": 0})
    lines.append({"end": {"calls": len(names), "status": "ok"}})
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))


def ask(path: Path, names: list[str], **options: Any) -> tuple[list[Any], fd.Report]:
    """Replay calls ``names`` (``REWIND`` rewinds the deck): the seq of the recorded call
    each got, or ``miss``."""
    got: list[Any] = []
    with fd.Deck(path, mode="replay", **options) as deck:
        for name in names:
            if name == REWIND:
                deck.rewind()
                continue
            try:
                got.append(deck.call("tool", name, {}, never))
            except fd.ReplayMiss:
                got.append("miss")
    return got, deck.report()


@pytest.fixture
def cassette(tmp_path: Path) -> Path:
    path = tmp_path / "index.jsonl"
    write(path, ["a", "b", "a", "c", "a"], [1, 2, 3, 4, 5])
    return path


def test_a_key_gives_its_answers_in_file_order_then_misses(cassette: Path) -> None:
    got, report = ask(cassette, ["a", "a", "b", "a", "a", "b", "z"])
    assert got == [1, 3, 2, 5, "miss", "miss", "miss"]
    assert [(u.seq, u.name, u.line) for u in report.unused] == [(4, "c", 5)]
    assert (report.used, report.order_changes) == (4, 1)  # b (2) came after a (3)
    assert [(r.name, r.recorded, r.asked) for r in report.repeats] == [("a", 3, 4), ("b", 1, 2)]


def test_repeats_last_gives_the_last_answer_again_and_counts_the_repeat(cassette: Path) -> None:
    got, report = ask(cassette, ["b", "b", "b", "z"], repeats="last")
    assert got == [2, 2, 2, "miss"]
    assert report.used == 3
    assert [(r.name, r.recorded, r.asked) for r in report.repeats] == [("b", 1, 3)]
    assert [u.seq for u in report.unused] == [1, 3, 4, 5]


def test_repeats_cycle_starts_each_key_over_at_its_first_answer(cassette: Path) -> None:
    got, report = ask(cassette, ["a", "a", "a", "a", "a", "b", "b", "a", "z"], repeats="cycle")
    assert got == [1, 3, 5, 1, 3, 2, 2, 5, "miss"]
    assert report.used == 8
    assert [(r.name, r.recorded, r.asked) for r in report.repeats] == [("a", 3, 6), ("b", 1, 2)]
    assert [u.seq for u in report.unused] == [4]


def test_a_run_that_asks_what_was_recorded_twice_gets_it_twice_in_order(tmp_path: Path) -> None:
    path = tmp_path / "loop.jsonl"
    write(path, ["plan", "search", "plan", "search", "answer"], [1, 2, 3, 4, 5])
    run = ["plan", "search", "plan", "search", "answer"]
    got, report = ask(path, run + run, repeats="cycle")
    assert got == [1, 2, 3, 4, 5, 1, 2, 3, 4, 5]
    assert report.misses == ()
    strict, _ = ask(path, run + run, repeats="miss")
    assert strict[5:] == ["miss"] * 5


def test_rewind_starts_every_key_and_every_count_over(cassette: Path) -> None:
    with fd.Deck(cassette, mode="replay") as deck:
        first = [deck.call("tool", name, {}, never) for name in ("a", "b", "a")]
        with pytest.raises(fd.ReplayMiss, match="asked a 2nd time"):
            deck.call("tool", "b", {}, never)
        deck.rewind()
        assert (deck.calls, deck.report().used, len(deck.report().unused)) == ((), 0, 5)
        again = [deck.call("tool", name, {}, never) for name in ("a", "b", "a", "c", "a")]
        report = deck.report()
    assert first == [1, 2, 3]
    assert again == [1, 2, 3, 4, 5]
    assert [c.seq for c in deck.calls] == [1, 2, 3, 4, 5]
    assert (report.used, report.unused, report.misses, report.repeats) == (5, (), (), ())


def test_ids_a_program_makes_up_count_on_across_runs_until_a_rewind(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"

    def run(deck: fd.Deck, session: str) -> Any:
        opened = deck.call("tool", "open", {"session_id": session}, lambda: {"id": IDS[0]})
        return deck.call("tool", "use", {"session_id": session, "id": opened["id"]}, never)

    with fd.Deck(path, mode="record") as deck:
        deck.call("tool", "open", {"session_id": IDS[1]}, lambda: {"id": IDS[0]})
        deck.call("tool", "use", {"session_id": IDS[1], "id": IDS[0]}, lambda: "used")
    with fd.Deck(path, mode="replay", repeats="cycle") as deck:
        assert run(deck, IDS[2]) == "used"
        with pytest.raises(fd.ReplayMiss, match='session_id: recorded "«id:1»", now "«id:3»"'):
            run(deck, IDS[3])  # its own id is the run's third, not its first
        deck.rewind()
        assert run(deck, IDS[3]) == "used"


def test_only_a_replaying_deck_rewinds(tmp_path: Path) -> None:
    with fd.Deck(tmp_path / "new.jsonl", mode="record") as deck:
        deck.call("tool", "a", {}, lambda: 1)
        with pytest.raises(fd.ConfigError, match="open in mode record; only a deck that replays"):
            deck.rewind()


def test_strict_matching_needs_the_seq_too(tmp_path: Path) -> None:
    path = tmp_path / "strict.jsonl"
    write(path, ["a", "b", "a"], [1, 2, 3])
    got, report = ask(path, ["a", "a", "a"], match="strict")
    assert got == [1, "miss", 3]
    assert [u.seq for u in report.unused] == [2]


# -- against a plain model ------------------------------------------------------------------


class Model:
    """The contract with nothing saved: a deque per key (per key and seq when strict)."""

    def __init__(self, names: list[str], seqs: list[int], *, strict: bool, repeats: str) -> None:
        self.strict, self.repeats = strict, repeats
        self.queues: dict[Any, deque[int]] = {}
        self.answers: dict[str, list[int]] = {}  # each name's answers in file order
        for seq, name in zip(seqs, names, strict=True):
            self.queues.setdefault(self.qkey(name, seq), deque()).append(seq)
            self.answers.setdefault(name, []).append(seq)
        self.recorded = {name: names.count(name) for name in names}
        self.last: dict[str, int] = {}
        self.asked: dict[str, int] = {}
        self.served, self.order_changes, self.last_seq = 0, 0, 0

    def fresh(self) -> Model:
        """The model of the same recording, nothing asked yet."""
        names = [name for name, seqs in self.answers.items() for _ in seqs]
        seqs = [seq for seqs in self.answers.values() for seq in seqs]
        return Model(names, seqs, strict=self.strict, repeats=self.repeats)

    def qkey(self, name: str, seq: int) -> Any:
        return (name, seq) if self.strict else name

    def take(self, name: str, seq: int) -> Any:
        self.asked[name] = self.asked.get(name, 0) + 1
        queue = self.queues.get(self.qkey(name, seq))
        recorded = self.recorded.get(name, 0)
        if queue:
            answer = queue.popleft()
            if self.repeats == "last":
                self.last[name] = answer
        elif self.repeats == "cycle" and 0 < recorded < self.asked[name]:
            answer = self.answers[name][(self.asked[name] - 1) % recorded]
        elif name in self.last:
            answer = self.last[name]
        else:
            return "miss"
        self.served += 1
        self.order_changes += answer < self.last_seq
        self.last_seq = answer
        return answer

    def report(self) -> tuple[Any, ...]:
        unused = sorted(seq for queue in self.queues.values() for seq in queue)
        repeats = sorted(
            (name, self.recorded[name], asked)
            for name, asked in self.asked.items()
            if 0 < self.recorded.get(name, 0) < asked
        )
        return self.served, self.order_changes, unused, repeats


def reported(report: fd.Report) -> tuple[Any, ...]:
    repeats = sorted((r.name, r.recorded, r.asked) for r in report.repeats)
    return report.used, report.order_changes, sorted(u.seq for u in report.unused), repeats


NAMES = ("a", "b", "c")


def modelled(model: Model, asks: list[str]) -> tuple[list[Any], Model]:
    """What the model answers ``asks``, a rewind starting a fresh model (and seqs) over."""
    got: list[Any] = []
    seq = 0
    for name in asks:
        if name == REWIND:
            model, seq = model.fresh(), 0
            continue
        seq += 1
        got.append(model.take(name, seq))
    return got, model


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    names=st.lists(st.sampled_from(NAMES), min_size=1, max_size=10),
    swap=st.none() | st.tuples(st.integers(0, 9), st.integers(0, 9)),
    asks=st.lists(st.sampled_from((*NAMES, REWIND)), max_size=14),
    strict=st.booleans(),
    repeats=st.sampled_from(["miss", "last", "cycle"]),
)
def test_any_replay_answers_and_counts_as_the_plain_model(
    tmp_path_factory: pytest.TempPathFactory,
    names: list[str],
    swap: tuple[int, int] | None,
    asks: list[str],
    strict: bool,
    repeats: str,
) -> None:
    seqs = list(range(1, len(names) + 1))
    if swap is not None:
        i, j = swap[0] % len(seqs), swap[1] % len(seqs)
        seqs[i], seqs[j] = seqs[j], seqs[i]
    path = tmp_path_factory.mktemp("index") / "any.jsonl"
    write(path, names, seqs)
    model = Model(names, seqs, strict=strict, repeats=repeats)
    got, report = ask(path, asks, match="strict" if strict else "keyed", repeats=repeats)
    answered, model = modelled(model, asks)
    assert got == answered
    assert reported(report) == model.report()
