"""Rows 2.2-2.3: in-process tool-call replay against the peers, same workload, one process.

    faultdeck       deck.call("tool", "search_docs", args, fn) on a replaying deck
    contract floor  floors.ReplayFloor (see floors.py)
    agenttape       @agenttape.tool; use_cassette(path, mode="none")
    agentcassette   agentcassette.intercept(fn, kind="tool"); replay(path)
    cassette-fn     cassette_fn.tape(mode="replay").wrap(fn)

Each peer records its own cassette once, through the same tool function called with the
same five-field args (as keyword arguments, the way its decorator is used), then replays
it. A counter in the tool function shows that no replay ran it, and every replay must
return the recorded answer. What each does per call is in ``NOTE``.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import agentcassette
import agenttape
import cassette_fn  # type: ignore[import-untyped]  # no py.typed in 0.2

from . import deck_call
from ._results import Goal, at_most
from ._timing import Body, Contender, Timing, interleave

FAULTDECK = deck_call.FAULTDECK
CONTRACT = deck_call.CONTRACT
AGENTTAPE = "agenttape"
AGENTCASSETTE = "agentcassette"
CASSETTE_FN = "cassette-fn"
PEERS = (AGENTTAPE, AGENTCASSETTE, CASSETTE_FN)
CONTENDERS = (FAULTDECK, CONTRACT, *PEERS)
OUTPUT = deck_call.OUTPUT

NOTE = (
    "Tool-call peers (rows 2.2-2.3, same five-field args, N calls each recorded once "
    "through the same tool function, then replayed): agenttape 0.1 binds the call's "
    "arguments to the function's signature (inspect), makes them JSON-able, drops its "
    "volatile field names, hashes sorted-key JSON (sha256) and takes the first unconsumed "
    "recording of that key: keyed, no id or timestamp normalization, no copy of the answer "
    "(the caller gets the cassette's own object), redaction only when the cassette is "
    "written. agentcassette 0.2 is order-only: it serves the next recorded step whatever "
    "the args, compares name and JSON-able args with the recording to note a divergence, "
    "returns the recorded object (no copy), no hashing, no normalization, redaction by "
    "field name at save. cassette-fn 0.2 hashes json.dumps of the args (sha256, 16 hex, "
    "kwargs names sorted), keeps a per-key cursor, and returns copy.deepcopy of the "
    "answer: keyed, a copy, no normalization (a user hook), no redaction. faultdeck "
    "keys a call whose args are the stored args of the line it expects next (compared "
    "exactly, type for type: their JSON, once a walk has vouched for the types) as that "
    "line, since normalization leaves what "
    "it makes as it is (docs/format.md, Keying a call as stored); any other call it "
    "normalizes (ids, timestamps, paths, transport fields) and keys, and pops a per-key "
    "queue; either way it logs the call and returns a fresh copy. The cassettes here end "
    "naming faultdeck's rules, as every recording without a project path or rule does, so "
    "these replays take the first route."
)


@dataclass(frozen=True, slots=True)
class Plan:
    """The N of each comparison and the runs at each.

    Args:
        sizes: the N of each comparison.
        reps: timed runs at each N.
        tape_reps: agenttape's timed runs at each N, when fewer: a call costs it some twenty
            times what it costs the others, and no goal compares faultdeck with it here
            (the fastest peer is another); its runs are spread over the rounds.
    """

    sizes: tuple[int, ...]
    reps: Mapping[int, int]
    tape_reps: Mapping[int, int] | None = None


@dataclass(slots=True)
class _Tool:
    """The tool every side records: it counts its live runs."""

    runs: int = 0

    def __call__(
        self, q: str, top_k: int, lang: str, filters: dict[str, str], fuzzy: bool
    ) -> dict[str, Any]:
        self.runs += 1
        return copy.deepcopy(OUTPUT)


def run(plan: Plan, workdir: Path) -> dict[int, dict[str, Timing]]:
    """Record each side's cassette at each N, then time the replays; timings by N."""
    tape_reps = plan.tape_reps or {}
    return {n: _compare(n, plan.reps[n], tape_reps.get(n), workdir) for n in plan.sizes}


def _compare(n: int, reps: int, tape_reps: int | None, workdir: Path) -> dict[str, Timing]:
    args = [deck_call.small_args(i) for i in range(n)]
    folder = workdir / f"peers-{n}"
    folder.mkdir(parents=True, exist_ok=True)
    ours = folder / "faultdeck.jsonl"
    deck_call.record(args, ours)
    tool = _Tool()
    tapes = _record_peers(folder, args, tool)
    recorded = tool.runs

    def checked(side: Callable[[], Any]) -> Callable[[], Any]:
        @contextmanager
        def prepare() -> Iterator[Body]:
            with side() as body:
                yield body
            if tool.runs != recorded:
                raise AssertionError("a replay ran the live tool")

        return prepare

    contenders = [
        Contender(FAULTDECK, lambda: deck_call.replaying(ours, args)),
        Contender(CONTRACT, lambda: deck_call.contract_floor(ours, args)),
        Contender(AGENTTAPE, checked(lambda: _agenttape(tapes[AGENTTAPE], args, tool)), tape_reps),
        Contender(AGENTCASSETTE, checked(lambda: _agentcassette(tapes[AGENTCASSETTE], args, tool))),
        Contender(CASSETTE_FN, checked(lambda: _cassette_fn(tapes[CASSETTE_FN], args, tool))),
    ]
    return interleave(contenders, reps=reps, per_run=n)


def goals(results: Mapping[int, Mapping[str, Timing]]) -> list[Goal]:
    """Rows 2.2 and 2.3: faultdeck against the fastest peer, at each N."""
    found = []
    for row, (n, timings) in zip(("2.2", "2.3"), results.items(), strict=False):
        ours = timings[FAULTDECK]
        fastest = min((timings[p] for p in PEERS), key=lambda t: t.median_ns)
        found.append(
            at_most(
                row,
                f"Deck.call replay, 5-field args, N={n:,}: faultdeck / fastest peer",
                f"faultdeck {_us(ours)}, {fastest.name} {_us(fastest)}",
                ours.median_ns / fastest.median_ns,
                1.0,
                f"{ours.reps} each",
            )
        )
    return found


def details(results: Mapping[int, Mapping[str, Timing]]) -> tuple[list[str], list[list[str]]]:
    """Per-call medians of every side at every N, as a table's header and rows."""
    header = ["side", *(f"N={n:,}: µs/call (runs)" for n in results)]
    rows = []
    for name in CONTENDERS:
        cells = [f"{t[name].per_op_us:,.2f} ({t[name].reps})" for t in results.values()]
        rows.append([name, *cells])
    return header, rows


def _us(timing: Timing) -> str:
    return f"{timing.per_op_us:,.2f} µs/call"


# -- recording, once per N -------------------------------------------------------------------


def _record_peers(folder: Path, args: Sequence[dict[str, Any]], tool: _Tool) -> dict[str, Path]:
    os.environ.pop("CASSETTE_FN_MODE", None)  # it would override the mode given
    at = folder / "agenttape.json"
    search = agenttape.tool(tool, name="search_docs")
    with agenttape.use_cassette(at, mode="record", format="json"):
        for a in args:
            search(**a)
    ac = folder / "agentcassette.json"
    intercepted = agentcassette.intercept(tool, name="search_docs", kind="tool")
    with agentcassette.record(ac):
        for a in args:
            intercepted(**a)
    tape = cassette_fn.tape(dir=str(folder), name="cassette-fn", mode="record")
    wrapped = tape.wrap(tool)
    for a in args:
        wrapped(**a)
    tape.save()
    return {AGENTTAPE: at, AGENTCASSETTE: ac, CASSETTE_FN: folder / "cassette-fn.json"}


# -- the peers' replays: each yields its timed loop ------------------------------------------


def _loop(fn: Callable[..., Any], args: Sequence[dict[str, Any]], got: list[Any]) -> Body:
    def replay() -> None:
        keep = got.append
        for a in args:
            keep(fn(**a))

    return replay


def _check(name: str, got: list[Any], n: int) -> None:
    if len(got) != n or any(g != OUTPUT for g in got):
        raise AssertionError(f"{name} did not return the recorded answer to every call")


@contextmanager
def _agenttape(path: Path, args: Sequence[dict[str, Any]], tool: _Tool) -> Iterator[Body]:
    search = agenttape.tool(tool, name="search_docs")
    got: list[Any] = []
    with agenttape.use_cassette(path, mode="none", format="json") as session:
        yield _loop(search, args, got)
        if session.engine.executed:
            raise AssertionError("agenttape ran a call live")
    _check(AGENTTAPE, got, len(args))


@contextmanager
def _agentcassette(path: Path, args: Sequence[dict[str, Any]], tool: _Tool) -> Iterator[Body]:
    intercepted = agentcassette.intercept(tool, name="search_docs", kind="tool")
    got: list[Any] = []
    with agentcassette.replay(path) as player:
        yield _loop(intercepted, args, got)
        if player.divergences or player.remaining:
            raise AssertionError("agentcassette's replay diverged from its recording")
    _check(AGENTCASSETTE, got, len(args))


@contextmanager
def _cassette_fn(path: Path, args: Sequence[dict[str, Any]], tool: _Tool) -> Iterator[Body]:
    tape = cassette_fn.tape(dir=str(path.parent), name=path.stem, mode="replay")
    got: list[Any] = []
    yield _loop(tape.wrap(tool), args, got)
    if tape.stats().hits != len(args):
        raise AssertionError("cassette-fn did not replay every call")
    _check(CASSETTE_FN, got, len(args))
