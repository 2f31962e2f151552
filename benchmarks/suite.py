"""The whole benchmark: every row at the full sizes, or at tiny ones to check the code runs.

http_replay   1.1-1.8  HTTP replay through httpx: faultdeck, vcrpy, MockTransport floor
deck_call     2.1-2.2  Deck.call replay against sha256 + a dict lookup
loading       3.1      faultdeck.load of 100,000 calls against orjson per line
recording     4.1-4.2  recording against bare writes (flush; fsync)
rehearsal     5.1      fresh one-fault replays per second
serve         6.1      faultdeck serve replay throughput against a bare Starlette app
scale         7.1-7.3  rehearse --jobs 2 and on Ray against --jobs 1; replay --repeat --jobs 2
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from . import deck_call, http_replay, loading, recording, rehearsal, scale, serve
from ._results import Goal, machine, table
from ._timing import Timing


@dataclass(frozen=True, slots=True)
class Sizes:
    """How large each row's runs are and how often each is timed."""

    http: http_replay.Plan
    calls: deck_call.Plan
    load_calls: int
    load_reps: int
    record: recording.Plan
    replays: int
    replay_reps: int
    serve: serve.Plan
    scale: scale.Plan


FULL = Sizes(
    http=http_replay.Plan(
        sizes=(100, 500, 2000),
        reps={100: 21, 500: 11, 2000: 7},
        default_reps={100: 7, 500: 3, 2000: 1},
        body_reps={100: 3, 500: 1, 2000: 1},
        vcr_warmup=frozenset({100}),
        body_full=frozenset({100, 500}),
        body_sample={500: 100, 2000: 100},
    ),
    calls=deck_call.Plan(small_calls=5000, large_calls=500, reps=11),
    load_calls=100_000,
    load_reps=7,
    record=recording.Plan(flush_calls=5000, fsync_calls=500, reps=11),
    replays=300,
    replay_reps=7,
    serve=serve.Plan(calls=200, reps=9),
    scale=scale.Plan(calls=4, repeat=20),
)
"""The sizes the goals speak of."""

QUICK = Sizes(
    http=http_replay.Plan(
        sizes=(5, 8, 10),
        reps={5: 1, 8: 1, 10: 1},
        default_reps={5: 1, 8: 1, 10: 1},
        body_reps={5: 1, 8: 1, 10: 1},
        vcr_warmup=frozenset({5}),
        body_full=frozenset({5, 8}),
        body_sample={8: 4, 10: 5},
    ),
    calls=deck_call.Plan(small_calls=10, large_calls=5, reps=1),
    load_calls=200,
    load_reps=1,
    record=recording.Plan(flush_calls=10, fsync_calls=5, reps=1),
    replays=6,
    replay_reps=1,
    serve=serve.Plan(calls=5, reps=1),
    scale=scale.Plan(calls=1, repeat=2, reps=1, ray=False),
)
"""Tiny sizes: every row runs, in seconds; the figures mean nothing."""


@dataclass(frozen=True, slots=True)
class Results:
    """What a run found.

    Attributes:
        goals: every row, judged.
        details: (title, Markdown table) sections with the figures behind the rows.
        notes: how it was measured.
        machine: the machine and the code measured, as found when the run started.
        seconds: how long the whole run took.
    """

    goals: list[Goal]
    details: list[tuple[str, str]]
    notes: list[str]
    machine: list[tuple[str, str]]
    seconds: float


def run(sizes: Sizes, *, say: Callable[[str], None] | None = None) -> Results:
    """Run every row at ``sizes``; ``say`` hears what is running."""
    tell = say or _stderr
    started = time.perf_counter()
    # Before anything is imported lazily or timed: the commit is the code this run measures.
    found_on = machine()
    with tempfile.TemporaryDirectory(prefix="faultdeck-bench-") as tmp:
        workdir = Path(tmp)
        tell("1/7 HTTP replay: recording, then faultdeck, floor and vcrpy (vcrpy is slow)")
        http = http_replay.run(sizes.http, workdir)
        tell("2/7 Deck.call replay")
        calls = deck_call.run(sizes.calls, workdir)
        tell(f"3/7 loading a {sizes.load_calls:,}-call cassette")
        loaded = loading.run(sizes.load_calls, sizes.load_reps, workdir)
        tell("4/7 recording overhead")
        recorded = recording.run(sizes.record, workdir)
        tell("5/7 rehearsal throughput")
        rehearsed = rehearsal.run(sizes.replays, sizes.replay_reps, workdir)
        tell("6/7 faultdeck serve replay throughput")
        served = serve.run(sizes.serve, workdir)
        tell("7/7 parallel rehearsals and replays: --jobs 1, --jobs 2, Ray")
        scaled = scale.run(sizes.scale, workdir)
        where = f"{tempfile.gettempdir()} ({_filesystem(workdir)})"
    goals = [
        *http_replay.goals(sizes.http, http),
        *deck_call.goals(calls),
        *loading.goals(loaded),
        *recording.goals(recorded),
        *rehearsal.goals(rehearsed),
        *serve.goals(sizes.serve, served),
        *scale.goals(scaled),
    ]
    header, rows = http_replay.details(http)
    details = [
        ("HTTP replay, per call", table(header, rows)),
        ("faultdeck serve replay, per request", table(*serve.details(served))),
    ]
    notes = [*_notes(sizes, where, http), serve.NOTE, scale.NOTE]
    return Results(goals, details, notes, found_on, time.perf_counter() - started)


def _notes(sizes: Sizes, where: str, http_results: dict[int, dict[str, Timing]]) -> list[str]:
    http = sizes.http
    small, medium, large = http.sizes
    sample = http.body_sample.get(large)
    notes = [
        "Each comparison's sides run in one process and take turns, A, B, A, B …, one "
        "repetition after another, after one untimed warm-up run each. Each run is timed "
        "with time.perf_counter_ns with the garbage collector collected before and disabled "
        "during the timed section. Figures are medians; a ratio is the ratio of medians.",
        "Only the loop is timed: opening a cassette (faultdeck's Deck.open, vcrpy's "
        "use_cassette loading its YAML), making the client and closing are outside it.",
        "HTTP rows: POST http://127.0.0.1:PORT/v1/chat/completions, a distinct ~0.3 KB "
        "request body per call, an ~8 KB chat-completion answer. Both tools recorded their "
        "cassettes once beforehand through the same client code from a local "
        "ThreadingHTTPServer; nothing else touches the network. The floor is the same "
        "httpx.Client on httpx.MockTransport returning the canned bytes.",
        "vcrpy patches httpx's transports (MockTransport too) while a cassette is in use; "
        "every faultdeck and floor run checks that the patch is gone before it starts.",
        f"vcrpy is quadratic in N, so it runs fewer times (see the runs column and the HTTP "
        f"table) and gets its warm-up only at N={small:,}; its code is warm by the time the "
        "larger sizes run in the same process.",
    ]
    if sample:
        notes.append(
            f"vcrpy with body matching at N={large:,} is timed on {sample:,} evenly spaced "
            f"requests (mid-points of {large // sample:,}-call strides) against the whole "
            f"{large:,}-call cassette, not on all {large:,}: at N=2,000 a full run takes "
            "minutes. The i-th request's cost depends only on i (the interactions recorded "
            "before it never match its body, played or not, and each is compared twice), so "
            f"the sample's mean per call estimates the full loop's. At N={medium:,} both the "
            "full loop and a sample are timed, to show how close the estimate comes"
            + _closeness(http_results.get(medium, {}))
        )
    notes += [
        "Deck.call rows: a replaying deck on a VirtualClock; the floor is "
        "hashlib.sha256(orjson.dumps(args, option=OPT_SORT_KEYS)).hexdigest()[:16] and a "
        "dict lookup, returning the stored output (faultdeck returns a fresh copy).",
        "Recording rows: the floor writes the lines faultdeck wrote, with a buffered "
        "file's write + flush per line (+ os.fsync per line for the fsync row); files are "
        f"written under {where}.",
        "Rehearsal: per replay a fresh VirtualClock and Deck(repeats='last') with one "
        "fault, the 50 steps run through fd.run_steps; deck construction and opening "
        "included.",
    ]
    return notes


def _closeness(timings: dict[str, Timing]) -> str:
    full = timings.get(http_replay.VCR_BODY)
    sample = timings.get(http_replay.VCR_BODY_SAMPLED)
    if full is None or sample is None:
        return "."
    off = sample.per_op_us / full.per_op_us - 1
    direction = "below" if off < 0 else "above"
    return (
        f": the sample gave {sample.per_op_us:,.0f} µs/call, the full loop "
        f"{full.per_op_us:,.0f} µs/call ({abs(off):.0%} {direction})"
        + (", so the sampled figure is if anything kind to vcrpy." if off < 0 else ".")
    )


def _filesystem(path: Path) -> str:
    """The type of the filesystem ``path`` is on, from /proc/mounts; ``unknown`` elsewhere."""
    try:
        mounts = Path("/proc/mounts").read_text(encoding="utf-8").splitlines()
    except OSError:
        return "unknown filesystem"
    best, kind = "", "unknown filesystem"
    target = os.path.realpath(path)
    for mount in mounts:
        fields = mount.split()
        if len(fields) < 3:
            continue
        point = fields[1]
        inside = target == point or target.startswith(point.rstrip("/") + "/")
        if inside and len(point) > len(best):
            best, kind = point, fields[2]
    return kind


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
