"""Many threads and many coroutines share one deck: whole lines, unique seqs, exact replay."""

from __future__ import annotations

import asyncio
import json
import threading
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import faultdeck as fd
from faultdeck._keys.canonical import make_key
from tests.support.calls import returns, rules

THREADS = 8
PER_THREAD = 500
TOTAL = THREADS * PER_THREAD
ASYNC_CALLS = 500


def read_lines(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any]]:
    """Parse the cassette's bytes ourselves: every line must be whole JSON."""
    data = path.read_bytes()
    assert data.endswith(b"\n"), "the file must end with a newline"
    raw_lines = data.split(b"\n")[:-1]
    objs = [json.loads(raw) for raw in raw_lines]  # raises on any torn or merged line
    assert all(type(obj) is dict for obj in objs)
    header, *calls, end = objs
    assert header["faultdeck"] == 1
    assert "end" in end
    assert all("seq" in call for call in calls)
    return header, calls, end


def run_threads(worker: Callable[[int], None], count: int) -> None:
    errors: list[BaseException] = []

    def guarded(t: int) -> None:
        try:
            worker(t)
        except BaseException as exc:  # surfaced below; a thread's failure must fail the test
            errors.append(exc)

    threads = [threading.Thread(target=guarded, args=(t,)) for t in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
        assert not thread.is_alive(), "a worker thread hung"
    if errors:
        raise errors[0]


def test_threads_record_whole_lines_and_replay_exactly(tmp_path: Path) -> None:
    path = tmp_path / "threads.jsonl"
    barrier = threading.Barrier(THREADS)
    recorded: dict[int, list[Any]] = {}

    with fd.Deck(path, mode="record", on_harness_change="ignore") as deck:

        def record(t: int) -> None:
            barrier.wait()
            outs = []
            for i in range(PER_THREAD):
                v = t * 1000 + i
                outs.append(deck.call("tool", "work", {"thread": t, "i": i}, returns({"v": v})))
            recorded[t] = outs

        run_threads(record, THREADS)
        report = deck.report()
        assert report.live == TOTAL
        assert sorted(c.seq for c in report.calls) == list(range(1, TOTAL + 1))

    for t in range(THREADS):
        assert recorded[t] == [{"v": t * 1000 + i} for i in range(PER_THREAD)]

    _, calls, end = read_lines(path)
    assert len(calls) == TOTAL
    seqs = [call["seq"] for call in calls]
    assert len(set(seqs)) == TOTAL, "duplicate seqs"
    assert sorted(seqs) == list(range(1, TOTAL + 1)), "seqs have gaps"
    for call in calls:
        # A line is one call's whole record, never pieces of two calls.
        assert call["kind"] == "tool"
        assert call["name"] == "work"
        args = call["args"]
        assert call["out"] == {"v": args["thread"] * 1000 + args["i"]}
        assert call["key"] == make_key("tool", "work", args)
    assert Counter((c["args"]["thread"], c["args"]["i"]) for c in calls) == Counter(
        (t, i) for t in range(THREADS) for i in range(PER_THREAD)
    )
    assert end == {"end": {"calls": TOTAL, "status": "ok", "rules": rules()}}

    replayed: dict[int, list[Any]] = {}
    barrier = threading.Barrier(THREADS)

    def must_not_run() -> Any:
        raise AssertionError("a live call ran during replay")

    with fd.Deck(path, mode="replay", on_harness_change="ignore") as replay:

        def play(t: int) -> None:
            barrier.wait()
            replayed[t] = [
                replay.call("tool", "work", {"thread": t, "i": i}, must_not_run)
                for i in range(PER_THREAD)
            ]

        run_threads(play, THREADS)
        report = replay.report()

    assert report.misses == ()
    assert report.used == TOTAL
    assert report.unused == ()
    assert report.live == 0
    assert report.repeats == ()
    for t in range(THREADS):
        assert replayed[t] == [{"v": t * 1000 + i} for i in range(PER_THREAD)]


def test_asyncio_gather_records_and_replays_exactly(tmp_path: Path) -> None:
    path = tmp_path / "async.jsonl"
    inflight = 0
    max_inflight = 0

    def live(i: int) -> Callable[[], Any]:
        async def run() -> dict[str, int]:
            nonlocal inflight, max_inflight
            inflight += 1
            max_inflight = max(max_inflight, inflight)
            await asyncio.sleep(0)
            inflight -= 1
            return {"v": i * 7}

        return run

    async def record_all(deck: fd.Deck) -> list[Any]:
        return await asyncio.gather(
            *(deck.acall("model", "think", {"i": i}, live(i)) for i in range(ASYNC_CALLS))
        )

    with fd.Deck(path, mode="record", on_harness_change="ignore") as deck:
        outs = asyncio.run(record_all(deck))
    assert outs == [{"v": i * 7} for i in range(ASYNC_CALLS)]
    assert max_inflight > 1, "the calls did not actually overlap"

    _, calls, end = read_lines(path)
    assert len(calls) == ASYNC_CALLS
    assert sorted(call["seq"] for call in calls) == list(range(1, ASYNC_CALLS + 1))
    for call in calls:
        assert call["kind"] == "model"
        assert call["name"] == "think"
        assert call["out"] == {"v": call["args"]["i"] * 7}
    assert sorted(call["args"]["i"] for call in calls) == list(range(ASYNC_CALLS))
    assert end == {"end": {"calls": ASYNC_CALLS, "status": "ok", "rules": rules()}}

    async def must_not_run() -> Any:
        raise AssertionError("a live call ran during replay")

    async def replay_all(deck: fd.Deck) -> list[Any]:
        return await asyncio.gather(
            *(deck.acall("model", "think", {"i": i}, must_not_run) for i in range(ASYNC_CALLS))
        )

    with fd.Deck(path, mode="replay", on_harness_change="ignore") as replay:
        replayed = asyncio.run(replay_all(replay))
        report = replay.report()
    assert replayed == [{"v": i * 7} for i in range(ASYNC_CALLS)]
    assert report.misses == ()
    assert report.used == ASYNC_CALLS
    assert report.unused == ()
    assert report.live == 0


def test_repeated_identical_calls_replay_each_recorded_output_once(tmp_path: Path) -> None:
    path = tmp_path / "same.jsonl"
    workers, per_worker = 4, 50
    total = workers * per_worker
    counter_lock = threading.Lock()
    counter = 0

    def numbered() -> dict[str, int]:
        nonlocal counter
        with counter_lock:
            counter += 1
            return {"n": counter}

    seen_record: list[int] = []
    seen_lock = threading.Lock()
    barrier = threading.Barrier(workers)

    with fd.Deck(path, mode="record", on_harness_change="ignore") as deck:

        def record(_: int) -> None:
            barrier.wait()
            for _i in range(per_worker):
                out = deck.call("model", "poll", {"q": "same"}, numbered)
                with seen_lock:
                    seen_record.append(out["n"])

        run_threads(record, workers)

    assert sorted(seen_record) == list(range(1, total + 1))
    _, calls, end = read_lines(path)
    assert end == {"end": {"calls": total, "status": "ok", "rules": rules()}}
    assert len({call["key"] for call in calls}) == 1
    assert sorted(call["seq"] for call in calls) == list(range(1, total + 1))
    recorded_outputs = Counter(call["out"]["n"] for call in calls)
    assert recorded_outputs == Counter(range(1, total + 1))

    seen_replay: list[int] = []
    barrier = threading.Barrier(workers)

    def must_not_run() -> Any:
        raise AssertionError("a live call ran during replay")

    with fd.Deck(path, mode="replay", on_harness_change="ignore") as replay:

        def play(_: int) -> None:
            barrier.wait()
            for _i in range(per_worker):
                out = replay.call("model", "poll", {"q": "same"}, must_not_run)
                with seen_lock:
                    seen_replay.append(out["n"])

        run_threads(play, workers)
        report = replay.report()

        # The queue is drained: one more identical call has no answer left.
        with pytest.raises(fd.ReplayMiss, match=f"recorded {total} times"):
            replay.call("model", "poll", {"q": "same"}, must_not_run)

    assert Counter(seen_replay) == recorded_outputs
    assert report.misses == ()
    assert report.used == total
    assert report.unused == ()
    assert report.repeats == ()
    # FIFO per key: taken in call-start order, the answers come in the file's order.
    file_order = [entry.seq for entry in fd.load(path).entries]
    served_order = [c.recorded_seq for c in sorted(report.calls, key=lambda c: c.seq)]
    assert served_order == file_order
