"""Row 2: ``Deck.call`` replay in-process, against the least a keyed replay must do.

    faultdeck   deck.call("tool", "search_docs", args, fn) on a replaying deck
    floor       sha256(orjson.dumps(args, OPT_SORT_KEYS)).hexdigest()[:16], a dict lookup

Small args are five fields; large args are a ~50 KB conversation (ten messages of ~5 KB).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

import faultdeck as fd

from ._results import Goal, at_most
from ._timing import Body, Contender, Timing, interleave

FAULTDECK = "faultdeck Deck.call"
FLOOR = "floor (sha256 + dict)"
OUTPUT = {"hits": ["docs/retry-budget.md", "docs/policy.md"], "total": 2}

_SENTENCE = "Retry budgets bound the total wait; backoffs and Retry-After draw on them. "


@dataclass(frozen=True, slots=True)
class Plan:
    """Calls per run and runs, for each args size."""

    small_calls: int
    large_calls: int
    reps: int


def small_args(i: int) -> dict[str, Any]:
    """Five fields, as a tool call's args."""
    return {
        "q": f"retry budget {i}",
        "top_k": 5,
        "lang": "en",
        "filters": {"repo": "faultdeck", "path": "docs/"},
        "fuzzy": False,
    }


def large_args(i: int) -> dict[str, Any]:
    """A conversation of about 50 KB, as a model call's args."""
    text = _SENTENCE * 68  # ~5 KB
    roles = ("user", "assistant")
    messages = [{"role": roles[j % 2], "content": f"[{i}.{j}] {text}"} for j in range(10)]
    return {"model": "gpt-4o-mini", "messages": messages, "temperature": 0}


def run(plan: Plan, workdir: Path) -> dict[str, dict[str, Timing]]:
    """Time both sizes; timings by size (``small``, ``large``)."""
    return {
        "small": _compare([small_args(i) for i in range(plan.small_calls)], plan.reps, workdir),
        "large": _compare([large_args(i) for i in range(plan.large_calls)], plan.reps, workdir),
    }


def _compare(args: list[dict[str, Any]], reps: int, workdir: Path) -> dict[str, Timing]:
    cassette = workdir / f"call-{len(args)}-{len(orjson.dumps(args[0]))}.jsonl"
    with fd.Deck(cassette, mode="record") as deck:
        for a in args:
            deck.call("tool", "search_docs", a, lambda: OUTPUT)
    contenders = [
        Contender(FAULTDECK, lambda: _faultdeck(cassette, args)),
        Contender(FLOOR, lambda: _floor(args)),
    ]
    return interleave(contenders, reps=reps, per_run=len(args))


def goals(results: dict[str, dict[str, Timing]]) -> list[Goal]:
    """Rows 2.1 and 2.2."""
    found = []
    for row, size, label in (("2.1", "small", "5 fields"), ("2.2", "large", "~50 KB")):
        ours, floor = results[size][FAULTDECK], results[size][FLOOR]
        found.append(
            at_most(
                row,
                f"Deck.call replay, {label} args: faultdeck / floor",
                f"faultdeck {ours.per_op_us:,.1f} µs/call, floor {floor.per_op_us:,.1f} µs/call",
                ours.median_ns / floor.median_ns,
                3,
                f"{ours.reps} each, {ours.per_run:,} calls/run",
            )
        )
    return found


def _never() -> Any:
    raise AssertionError("a replaying deck ran a live call")


@contextmanager
def _faultdeck(cassette: Path, args: list[dict[str, Any]]) -> Iterator[Body]:
    deck = fd.Deck(cassette, mode="replay", clock=fd.VirtualClock())
    deck.open()
    call = deck.call

    def replay() -> None:
        for a in args:
            call("tool", "search_docs", a, _never)

    yield replay
    deck.close()
    report = deck.report()
    if report.unused or report.misses:
        raise AssertionError(f"faultdeck did not replay every call: {report}")


@contextmanager
def _floor(args: list[dict[str, Any]]) -> Iterator[Body]:
    table = {_floor_key(a): OUTPUT for a in args}
    sha256, dumps, sort = hashlib.sha256, orjson.dumps, orjson.OPT_SORT_KEYS

    def replay() -> None:
        for a in args:
            table[sha256(dumps(a, option=sort)).hexdigest()[:16]]

    yield replay


def _floor_key(args: dict[str, Any]) -> str:
    return hashlib.sha256(orjson.dumps(args, option=orjson.OPT_SORT_KEYS)).hexdigest()[:16]
