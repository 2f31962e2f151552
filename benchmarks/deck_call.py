"""Rows 2: ``Deck.call`` replay in-process, against the contract floor and a bare floor.

    faultdeck   deck.call("tool", "search_docs", args, fn) on a replaying deck
    contract    floors.ReplayFloor: what a keyed replay must do per call under faultdeck's
                rules (normalize, canonical JSON + sha256, queue pop, log, fresh copy)
    bare        sha256(orjson.dumps(args, OPT_SORT_KEYS)).hexdigest()[:16], a dict lookup:
                no normalization, no copy (an extra row, kept from the first goals)

Small args are five fields; large args are a ~50 KB conversation (ten messages of ~5 KB).
The scale row replays N = 100 and N = 100,000 small calls: what a call costs should not
grow with the cassette. The 100,000-call cassette is written directly, since recording it
would take seconds: with a recording's header, in lines checked to equal the recording's of
the first calls but for ``ms``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

import faultdeck as fd
from faultdeck._keys.canonical import make_key

from . import floors
from ._results import Goal, at_most
from ._timing import Body, Contender, Timing, interleave

FAULTDECK = "faultdeck Deck.call"
CONTRACT = "contract floor"
BARE = "bare floor (sha256 + dict)"
SMALL_N = "faultdeck, N=100"
OUTPUT = {"hits": ["docs/retry-budget.md", "docs/policy.md"], "total": 2}

_SENTENCE = "Retry budgets bound the total wait; backoffs and Retry-After draw on them. "


@dataclass(frozen=True, slots=True)
class Plan:
    """Calls per run and runs, for each args size and for the scale row."""

    small_calls: int
    large_calls: int
    reps: int
    big_calls: int = 100_000
    big_reps: int = 5
    base_calls: int = 100
    base_reps: int = 25


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


def record(args: list[dict[str, Any]], path: Path, output: Any = OUTPUT) -> None:
    """Record ``args`` as search_docs calls answering ``output``."""
    with fd.Deck(path, mode="record") as deck:
        for a in args:
            deck.call("tool", "search_docs", a, lambda: output)


def run(plan: Plan, workdir: Path) -> dict[str, dict[str, Timing]]:
    """Time both sizes and the scale row; timings by row (``small``, ``large``, ``scale``)."""
    small = [small_args(i) for i in range(plan.small_calls)]
    large = [large_args(i) for i in range(plan.large_calls)]
    return {
        "small": _compare(small, plan.reps, workdir, contract=True),
        "large": _compare(large, plan.reps, workdir, contract=False),
        "scale": _scale(plan, workdir),
    }


def _compare(
    args: list[dict[str, Any]], reps: int, workdir: Path, *, contract: bool
) -> dict[str, Timing]:
    cassette = workdir / f"call-{len(args)}-{len(orjson.dumps(args[0]))}.jsonl"
    record(args, cassette)
    contenders = [Contender(FAULTDECK, lambda: replaying(cassette, args))]
    if contract:
        contenders.append(Contender(CONTRACT, lambda: contract_floor(cassette, args)))
    contenders.append(Contender(BARE, lambda: _bare(args)))
    return interleave(contenders, reps=reps, per_run=len(args))


def _scale(plan: Plan, workdir: Path) -> dict[str, Timing]:
    base = [small_args(i) for i in range(plan.base_calls)]
    base_cassette = workdir / f"scale-{plan.base_calls}.jsonl"
    record(base, base_cassette)
    big = [small_args(i) for i in range(plan.big_calls)]
    big_cassette = workdir / f"scale-{plan.big_calls}.jsonl"
    write_cassette(big_cassette, big, like=base_cassette)
    big_name = f"faultdeck, N={plan.big_calls:,}"
    contenders = [
        Contender(SMALL_N, lambda: replaying(base_cassette, base), per_run=len(base)),
        Contender(
            big_name, lambda: replaying(big_cassette, big), reps=plan.big_reps, per_run=len(big)
        ),
    ]
    timings = interleave(contenders, reps=max(plan.base_reps, plan.big_reps), per_run=len(base))
    return {SMALL_N: timings[SMALL_N], "big": timings[big_name]}


def write_cassette(
    path: Path, args: Iterable[dict[str, Any]], like: Path, output: Any = OUTPUT
) -> None:
    """A cassette of search_docs calls on ``args`` answering ``output``, written line for
    line as faultdeck writes one: ``like`` is faultdeck's recording of the first calls, whose
    header and end line it takes and whose lines it must equal but for ``ms``."""
    recorded = like.read_bytes().splitlines()
    lines = [recorded[0]]
    for seq, a in enumerate(args, start=1):
        key = make_key("tool", "search_docs", a)
        line = {"seq": seq, "kind": "tool", "name": "search_docs", "key": key, "args": a}
        line.update(out=output, ms=0.003, ids=[])
        lines.append(orjson.dumps(line))
    end = orjson.loads(recorded[-1])["end"]  # its status and rules, with this many calls
    lines.append(orjson.dumps({"end": {**end, "calls": len(lines) - 1}}))
    for ours, theirs in zip(lines[1:], recorded[1:-1], strict=False):
        if {**orjson.loads(ours), "ms": 0} != {**orjson.loads(theirs), "ms": 0}:
            raise AssertionError(f"the written cassette differs from faultdeck's: {theirs!r}")
    path.write_bytes(b"\n".join(lines) + b"\n")


def goals(results: dict[str, dict[str, Timing]]) -> list[Goal]:
    """Rows 2.1 (contract floor), 2.4-2.5 (bare floor) and 2.6 (scale)."""
    small, large = results["small"], results["large"]
    ours, contract = small[FAULTDECK], small[CONTRACT]
    runs = f"{ours.reps} each, {ours.per_run:,} calls/run"
    found = [
        at_most(
            "2.1",
            "Deck.call replay, 5-field args: faultdeck / contract floor",
            f"faultdeck {_us(ours)}, contract floor {_us(contract)}",
            ours.median_ns / contract.median_ns,
            1.5,
            runs,
        )
    ]
    for row, timings, label in (("2.4", small, "5-field"), ("2.5", large, "~50 KB")):
        ours, bare = timings[FAULTDECK], timings[BARE]
        found.append(
            at_most(
                row,
                f"Deck.call replay, {label} args: faultdeck / bare floor (sha256 + dict)",
                f"faultdeck {_us(ours)}, bare {_us(bare)}",
                ours.median_ns / bare.median_ns,
                3,
                f"{ours.reps} each, {ours.per_run:,} calls/run",
            )
        )
    base, big = results["scale"][SMALL_N], results["scale"]["big"]
    found.append(
        at_most(
            "2.6",
            f"Deck.call replay per call, N={big.per_run:,} / N={base.per_run:,}",
            f"{_us(big)} at N={big.per_run:,}, {_us(base)} at N={base.per_run:,}",
            big.per_op_us / base.per_op_us,
            1.3,
            f"{big.reps}, {base.reps}",
        )
    )
    return found


def _us(timing: Timing) -> str:
    return f"{timing.per_op_us:,.1f} µs/call"


def _never() -> Any:
    raise AssertionError("a replaying deck ran a live call")


@contextmanager
def replaying(cassette: Path, args: list[dict[str, Any]]) -> Iterator[Body]:
    """faultdeck replaying ``args`` from ``cassette``; checks every call was served."""
    deck = fd.Deck(cassette, mode="replay", clock=fd.VirtualClock())
    deck.open()
    call = deck.call
    got: list[Any] = []

    def replay() -> None:
        keep = got.append
        for a in args:
            keep(call("tool", "search_docs", a, _never))

    yield replay
    deck.close()
    report = deck.report()
    if report.unused or report.misses or (got and got[-1] != OUTPUT):
        raise AssertionError(f"faultdeck did not replay every call: {report}")


@contextmanager
def contract_floor(cassette: Path, args: list[dict[str, Any]]) -> Iterator[Body]:
    """The replay contract floor on ``cassette``'s answers; checks it keys as faultdeck."""
    root, strip = floors.rules_of(fd.Deck(cassette, mode="replay"))
    floor = floors.ReplayFloor(((e.key, e.value) for e in fd.load(cassette).entries), root, strip)
    floors.check_keys(floor, "tool", "search_docs", args, cassette)
    call = floor.caller()
    got: list[Any] = []

    def replay() -> None:
        keep = got.append
        for a in args:
            keep(call("tool", "search_docs", a))

    yield replay
    if got and got[-1] != OUTPUT:
        raise AssertionError("the contract floor did not return the recorded answer")


@contextmanager
def _bare(args: list[dict[str, Any]]) -> Iterator[Body]:
    table = {_bare_key(a): OUTPUT for a in args}
    sha256, dumps, sort = hashlib.sha256, orjson.dumps, orjson.OPT_SORT_KEYS

    def replay() -> None:
        for a in args:
            table[sha256(dumps(a, option=sort)).hexdigest()[:16]]

    yield replay


def _bare_key(args: dict[str, Any]) -> str:
    return hashlib.sha256(orjson.dumps(args, option=orjson.OPT_SORT_KEYS)).hexdigest()[:16]
