"""Row 3: loading a 100,000-call cassette, against orjson parsing the same lines.

    faultdeck   faultdeck.load(path): read, parse, validate, build the entries
    floor       read the bytes, then [orjson.loads(l) for l in data.split(b"\\n") if l]

The cassette is written directly in format v1: a header, the call lines, an end line.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import orjson

import faultdeck as fd

from ._results import Goal, at_most
from ._timing import Body, Contender, Timing, interleave

FAULTDECK = "faultdeck.load"
FLOOR = "floor (read + orjson per line)"


def write_cassette(path: Path, calls: int) -> None:
    """A cassette of ``calls`` small tool calls with valid keys, as a recording leaves it."""
    header = {"faultdeck": 1, "match": "keyed", "harness": {}, "env": {}, "volatile": []}
    lines = [orjson.dumps(header)]
    for seq in range(1, calls + 1):
        args = {"q": f"retry budget {seq}", "top_k": 5}
        line = {
            "seq": seq,
            "kind": "tool",
            "name": "search_docs",
            "key": fd.make_key("tool", "search_docs", args),
            "args": args,
            "out": {"hits": ["docs/retry-budget.md"], "total": 1},
            "ms": 0.003,
        }
        lines.append(orjson.dumps(line))
    lines.append(orjson.dumps({"end": {"calls": calls, "status": "ok"}}))
    path.write_bytes(b"\n".join(lines) + b"\n")


def run(calls: int, reps: int, workdir: Path) -> dict[str, Timing]:
    """Write the cassette, then time both readers."""
    path = workdir / f"load-{calls}.jsonl"
    write_cassette(path, calls)
    contenders = [
        Contender(FAULTDECK, lambda: _faultdeck(path, calls)),
        Contender(FLOOR, lambda: _floor(path)),
    ]
    return interleave(contenders, reps=reps, per_run=calls)


def goals(results: dict[str, Timing]) -> list[Goal]:
    """Row 3.1."""
    ours, floor = results[FAULTDECK], results[FLOOR]
    return [
        at_most(
            "3.1",
            f"load a {ours.per_run:,}-call cassette: faultdeck.load / orjson",
            f"faultdeck {ours.median_ns / 1e6:,.0f} ms, orjson {floor.median_ns / 1e6:,.0f} ms",
            ours.median_ns / floor.median_ns,
            2,
            f"{ours.reps} each",
        )
    ]


@contextmanager
def _faultdeck(path: Path, calls: int) -> Iterator[Body]:
    loaded: list[fd.Recording] = []

    def load() -> None:
        loaded.append(fd.load(path))

    yield load
    if len(loaded[0].entries) != calls:
        raise AssertionError(f"faultdeck.load read {len(loaded[0].entries)} of {calls} calls")


@contextmanager
def _floor(path: Path) -> Iterator[Body]:
    loads = orjson.loads
    # Kept, as faultdeck's recording is, so that neither side frees its objects while timed.
    parsed: list[list[object]] = []

    def load() -> None:
        data = path.read_bytes()
        parsed.append([loads(line) for line in data.split(b"\n") if line])

    yield load
