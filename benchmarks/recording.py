"""Rows 4: what recording costs per call, against the contract floor and bare writes.

    faultdeck   Deck(mode="record") + deck.call(...): normalize, key, check, redact, one
                unbuffered write per line (durability "flush", or "fsync" as its own row)
    contract    floors.RecordFloor: one fused walk per value (args: normalize + redact;
                answer: check JSON, store volatile fields as placeholders, redact, learn
                ids), the key, the line, one write + flush; checked to write faultdeck's
                lines (but ms)
    bare        open(path, "wb"); per line f.write(line); f.flush() (+ os.fsync for fsync)

The bare floor writes the very lines faultdeck wrote (read back from a first recording).
Opening and closing the cassette (header, lock, end line) are not timed, on any side.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import faultdeck as fd

from . import floors
from ._results import Goal, at_most
from ._timing import Body, Contender, Timing, interleave

Durability = Literal["flush", "fsync"]
OUTPUT = {"hits": ["docs/retry-budget.md"], "total": 1}


@dataclass(frozen=True, slots=True)
class Plan:
    """Calls per run and runs, for each durability."""

    flush_calls: int
    fsync_calls: int
    reps: int


def args_for(i: int) -> dict[str, Any]:
    """Small args, different per call."""
    return {"q": f"retry budget {i}", "top_k": 5, "lang": "en"}


def run(plan: Plan, workdir: Path) -> dict[str, dict[str, Timing]]:
    """Time both durabilities; timings by durability, then by contender name."""
    return {
        "flush": _compare("flush", plan.flush_calls, plan.reps, workdir),
        "fsync": _compare("fsync", plan.fsync_calls, plan.reps, workdir),
    }


def _compare(durability: Durability, calls: int, reps: int, workdir: Path) -> dict[str, Timing]:
    calls_args = [args_for(i) for i in range(calls)]
    fns: list[Callable[[], Any]] = [lambda: OUTPUT for _ in range(calls)]
    first = workdir / f"record-{durability}-lines.jsonl"
    with fd.Deck(first, mode="record", durability=durability) as deck:
        for a, fn in zip(calls_args, fns, strict=True):
            deck.call("tool", "search_docs", a, fn)
    lines = first.read_bytes().splitlines(keepends=True)[1:-1]  # the calls' lines
    ours = workdir / f"record-{durability}.jsonl"
    bare = workdir / f"bare-{durability}.jsonl"
    contenders = [
        Contender(
            _name("faultdeck", durability), lambda: _faultdeck(ours, durability, calls_args, fns)
        ),
        Contender(_name("floor", durability), lambda: _floor(bare, lines, durability == "fsync")),
    ]
    if durability == "flush":
        floor = workdir / "record-contract.jsonl"
        contenders.insert(
            1, Contender(CONTRACT, lambda: _contract(floor, first, lines, calls_args, fns))
        )
    return interleave(contenders, reps=reps, per_run=calls)


def goals(results: dict[str, dict[str, Timing]]) -> list[Goal]:
    """Rows 4.1 (contract floor), 4.2 and 4.3 (bare writes)."""
    ours, contract = results["flush"][_name("faultdeck", "flush")], results["flush"][CONTRACT]
    found = [
        at_most(
            "4.1",
            'record, durability="flush": faultdeck / record contract floor',
            f"faultdeck {ours.per_op_us:,.1f} µs/call, contract {contract.per_op_us:,.1f} µs/call",
            ours.median_ns / contract.median_ns,
            2,
            f"{ours.reps} each, {ours.per_run:,} calls/run",
        )
    ]
    for row, durability, floor_does in (
        ("4.2", "flush", "write + flush"),
        ("4.3", "fsync", "write + flush + os.fsync"),
    ):
        timings = results[durability]
        ours = timings[_name("faultdeck", durability)]
        floor = timings[_name("floor", durability)]
        found.append(
            at_most(
                row,
                f'record, durability="{durability}": faultdeck / {floor_does} per line',
                f"faultdeck {ours.per_op_us:,.1f} µs/call, bare {floor.per_op_us:,.1f} µs/line",
                ours.median_ns / floor.median_ns,
                2,
                f"{ours.reps} each, {ours.per_run:,} calls/run",
            )
        )
    return found


CONTRACT = "record contract floor (flush)"


def _name(side: str, durability: str) -> str:
    return f"{side} ({durability})"


@contextmanager
def _faultdeck(
    path: Path,
    durability: Durability,
    calls_args: list[dict[str, Any]],
    fns: list[Callable[[], Any]],
) -> Iterator[Body]:
    deck = fd.Deck(path, mode="record", durability=durability)
    deck.open()
    call = deck.call

    def record() -> None:
        for a, fn in zip(calls_args, fns, strict=True):
            call("tool", "search_docs", a, fn)

    yield record
    deck.close()


@contextmanager
def _contract(
    path: Path,
    recorded: Path,
    lines: list[bytes],
    calls_args: list[dict[str, Any]],
    fns: list[Callable[[], Any]],
) -> Iterator[Body]:
    root, strip = floors.rules_of(fd.Deck(recorded, mode="record"))
    with open(path, "wb") as fh:
        floor = floors.RecordFloor(fh, root, strip, ids_field=b'"ids":' in lines[0])
        call = floor.caller()

        def record() -> None:
            for a, fn in zip(calls_args, fns, strict=True):
                call("tool", "search_docs", a, fn)

        yield record
    written = path.read_bytes().splitlines(keepends=True)
    if [floors.without_ms(x) for x in written] != [floors.without_ms(x) for x in lines]:
        raise AssertionError("the record contract floor wrote other lines than faultdeck")


@contextmanager
def _floor(path: Path, lines: list[bytes], sync: bool) -> Iterator[Body]:
    with open(path, "wb") as fh:
        write, flush, fileno = fh.write, fh.flush, fh.fileno()

        def record() -> None:
            for line in lines:
                write(line)
                flush()

        def record_synced() -> None:
            for line in lines:
                write(line)
                flush()
                os.fsync(fileno)

        yield record_synced if sync else record
