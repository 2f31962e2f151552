"""Rows 3: loading a 100,000-call cassette, against orjson parsing the same lines, and
the memory a replaying deck keeps once it has opened it.

    faultdeck   faultdeck.load(path): read, parse, validate, build the entries
    floor       read the bytes, then [orjson.loads(l) for l in data.split(b"\\n") if l]
    memory      in a fresh Python: Deck(path, mode="replay").open(), then tracemalloc's
                current size after gc.collect(), over the file's size

The cassette is written directly in format v1, as a recording leaves it: a recording's
header, the call lines (checked to equal that recording's of the first calls but for ``ms``),
the recording's end line.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

import faultdeck as fd

from . import deck_call
from ._results import Goal, at_most
from ._timing import Body, Contender, Timing, interleave

FAULTDECK = "faultdeck.load"
FLOOR = "floor (read + orjson per line)"
OUTPUT = {"hits": ["docs/retry-budget.md"], "total": 1}


def write_cassette(path: Path, calls: int) -> None:
    """A cassette of ``calls`` small tool calls, line for line as a recording leaves it
    (checked against faultdeck's recording of the first three)."""
    like = path.with_suffix(".like.jsonl")
    deck_call.record([_args(seq) for seq in range(1, 4)], like, OUTPUT)
    args = (_args(seq) for seq in range(1, calls + 1))
    deck_call.write_cassette(path, args, like, OUTPUT)


def _args(seq: int) -> dict[str, Any]:
    return {"q": f"retry budget {seq}", "top_k": 5}


# Run in a fresh interpreter, so that only what opening the cassette keeps is counted: a
# tiny cassette is opened first (untimed, uncounted) to import and warm what opening needs.
_MEASURE = """
import gc, sys, tracemalloc
import faultdeck as fd
warm = fd.Deck(sys.argv[2], mode="replay")
warm.open()
warm.close()
del warm
gc.collect()
tracemalloc.start()
deck = fd.Deck(sys.argv[1], mode="replay")
deck.open()
gc.collect()
print(tracemalloc.get_traced_memory()[0], len(deck._run.index.unused_refs()))
"""


@dataclass(frozen=True, slots=True)
class Loaded:
    """Both readers' timings, and the memory a replaying deck keeps."""

    timings: dict[str, Timing]
    kept_bytes: int
    file_bytes: int


def run(calls: int, reps: int, workdir: Path) -> Loaded:
    """Write the cassette, time both readers, then measure what opening it keeps."""
    path = workdir / f"load-{calls}.jsonl"
    write_cassette(path, calls)
    contenders = [
        Contender(FAULTDECK, lambda: _faultdeck(path, calls)),
        Contender(FLOOR, lambda: _floor(path)),
    ]
    timings = interleave(contenders, reps=reps, per_run=calls)
    return Loaded(timings, kept(path, calls, workdir), path.stat().st_size)


def kept(path: Path, calls: int, workdir: Path) -> int:
    """Bytes a replaying deck keeps after opening ``path``, measured in a fresh Python."""
    warm = workdir / "load-warm.jsonl"
    write_cassette(warm, 3)
    done = subprocess.run(
        [sys.executable, "-c", _MEASURE, str(path), str(warm)],
        capture_output=True,
        text=True,
        check=False,
        cwd=workdir,
        timeout=300,
    )
    if done.returncode != 0:
        raise RuntimeError(f"measuring the memory failed: {done.stderr.strip()[-500:]}")
    size, queued = (int(x) for x in done.stdout.split())
    if queued != calls:
        raise AssertionError(f"the deck queued {queued} of {calls} calls")
    return size


def goals(loaded: Loaded) -> list[Goal]:
    """Rows 3.1 and 3.2."""
    results = loaded.timings
    ours, floor = results[FAULTDECK], results[FLOOR]
    mb = 1024 * 1024
    return [
        at_most(
            "3.1",
            f"load a {ours.per_run:,}-call cassette: faultdeck.load / orjson",
            f"faultdeck {ours.median_ns / 1e6:,.0f} ms, orjson {floor.median_ns / 1e6:,.0f} ms",
            ours.median_ns / floor.median_ns,
            1.5,
            f"{ours.reps} each",
        ),
        at_most(
            "3.2",
            f"memory kept after opening a {ours.per_run:,}-call cassette / file size",
            f"{loaded.kept_bytes / mb:,.1f} MB kept, file {loaded.file_bytes / mb:,.1f} MB",
            loaded.kept_bytes / loaded.file_bytes,
            4,
            "1, a fresh process",
        ),
    ]


@contextmanager
def _faultdeck(path: Path, calls: int) -> Iterator[Body]:
    loaded: list[fd.types.Recording] = []

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
