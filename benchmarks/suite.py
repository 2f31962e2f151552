"""The whole benchmark: every row at the full sizes, or at tiny ones to check the code runs.

http_replay   1.1-1.10 HTTP replay through httpx: faultdeck, MockTransport floor, agenttape,
                       vcrpy
deck_call     2.1,2.4-6 Deck.call replay against the contract floor (floors.py) and a bare
                       sha256 + dict floor; per call at N=100,000 against N=100
peers         2.2-2.3  Deck.call replay against agenttape, agentcassette, cassette-fn
loading       3.1-3.4  faultdeck.load of 100,000 small calls, and of 2,000 ~8 KB chat
                       completions recorded through the HTTP transport, against orjson per
                       line; the memory a replaying deck keeps after opening each, over the
                       file's size
recording     4.1-4.3  recording against the record contract floor and bare writes
rehearsal     5.1      fresh one-fault replays per second
serve         6.1      faultdeck serve replay throughput against a bare Starlette app
scale         7.1-7.3  rehearse --jobs 2 and on Ray against --jobs 1; replay --repeat --jobs 2
binary        8.1      HTTP replay of a 5 MB binary answer, the cassette read included, against
                       a floor that reads the line and decodes the body (orjson + base64)
pytest_suite  9.1-9.3  a 300-test pytest suite (3 openai calls a test) recorded and replayed:
                       faultdeck against pytest-recording, cassetter and a no-cassette floor
startup       10.1-10.4 import faultdeck (and a deck) against import vcr; faultdeck --help and
                       --version against python -c pass; CPU time
attach        11.1-11.2 a child's start under the bootstrap against without it; replay through
                       an intercepted client against fd.http.Transport

The full run is sized to finish in under five minutes on two cores: vcrpy, quadratic in N,
runs once per size past N=100 and on evenly spaced samples with body matching; the scale
rows, each tens of seconds, run once per side.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from . import (
    attach,
    binary,
    deck_call,
    http_replay,
    loading,
    peers,
    pytest_suite,
    recording,
    rehearsal,
    scale,
    serve,
    startup,
)
from ._results import Goal, machine, table
from ._timing import Timing


@dataclass(frozen=True, slots=True)
class Sizes:
    """How large each row's runs are and how often each is timed."""

    http: http_replay.Plan
    calls: deck_call.Plan
    peers: peers.Plan
    load_calls: int
    load_reps: int
    record: recording.Plan
    replays: int
    replay_reps: int
    serve: serve.Plan
    scale: scale.Plan
    binary: binary.Plan
    pytest_suite: pytest_suite.Plan
    startup: startup.Plan
    attach: attach.Plan


FULL = Sizes(
    http=http_replay.Plan(
        sizes=(100, 500, 2000),
        reps={100: 81, 500: 25, 2000: 15},
        tape_reps={100: 21, 500: 5, 2000: 5},
        default_reps={100: 3, 500: 1, 2000: 1},
        body_reps={100: 1, 500: 1, 2000: 1},
        vcr_warmup=frozenset({100}),
        primed=frozenset({100, 500}),
        body_full=frozenset({100}),
        body_sample={100: 20, 500: 50, 2000: 25},
        default_full=frozenset({100, 500}),
        default_sample={500: 50, 2000: 50},
    ),
    calls=deck_call.Plan(small_calls=5000, large_calls=500, reps=11),
    peers=peers.Plan(sizes=(100, 2000), reps={100: 161, 2000: 61}, tape_reps={100: 41, 2000: 15}),
    load_calls=100_000,
    load_reps=9,
    record=recording.Plan(flush_calls=5000, fsync_calls=500, reps=9),
    replays=300,
    replay_reps=7,
    serve=serve.Plan(calls=200, reps=7),
    scale=scale.Plan(calls=3, repeat=6, reps=3),
    binary=binary.Plan(size=5 * 1024 * 1024, reps=25),
    pytest_suite=pytest_suite.FULL,
    startup=startup.Plan(reps=21),
    attach=attach.Plan(starts=15, calls=500, reps=25),
)
"""The sizes the goals speak of."""

QUICK = Sizes(
    http=http_replay.Plan(
        sizes=(5, 8, 10),
        reps={5: 1, 8: 1, 10: 1},
        tape_reps={5: 1, 8: 1, 10: 1},
        default_reps={5: 1, 8: 1, 10: 1},
        body_reps={5: 1, 8: 1, 10: 1},
        vcr_warmup=frozenset({5}),
        primed=frozenset({5, 8}),
        body_full=frozenset({5}),
        body_sample={5: 2, 8: 4, 10: 5},
        default_full=frozenset({5, 8}),
        default_sample={8: 4, 10: 5},
    ),
    calls=deck_call.Plan(
        small_calls=10, large_calls=5, reps=1, big_calls=50, big_reps=1, base_calls=5, base_reps=1
    ),
    peers=peers.Plan(sizes=(5, 8), reps={5: 2, 8: 2}, tape_reps={5: 1, 8: 1}),
    load_calls=200,
    load_reps=1,
    record=recording.Plan(flush_calls=10, fsync_calls=5, reps=1),
    replays=6,
    replay_reps=1,
    serve=serve.Plan(calls=5, reps=1),
    scale=scale.Plan(calls=1, repeat=2, reps=1, ray=False, few=True, heavy=False),
    binary=binary.Plan(size=64 * 1024, reps=1),
    pytest_suite=pytest_suite.QUICK,
    startup=startup.Plan(reps=1),
    attach=attach.Plan(starts=1, calls=5, reps=1),
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
    started = time.perf_counter()

    def tell(message: str) -> None:
        (say or _stderr)(f"[{time.perf_counter() - started:5.0f} s] {message}")

    # Before anything is imported lazily or timed: the commit is the code this run measures.
    found_on = machine()
    with tempfile.TemporaryDirectory(prefix="faultdeck-bench-") as tmp:
        workdir = Path(tmp)
        tell("1/12 HTTP replay: faultdeck, floor, agenttape and vcrpy (vcrpy is slow)")
        http = http_replay.run(sizes.http, workdir)
        tell("2/12 Deck.call replay: contract floor, bare floor, N=100,000")
        calls = deck_call.run(sizes.calls, workdir)
        tell("3/12 Deck.call replay: agenttape, agentcassette, cassette-fn")
        peered = peers.run(sizes.peers, workdir)
        tell(
            f"4/12 loading a {sizes.load_calls:,}-call cassette and one of ~8 KB answers, "
            "and the memory they keep"
        )
        loaded = loading.run(sizes.load_calls, sizes.load_reps, workdir)
        tell("5/12 recording: contract floor, bare writes")
        recorded = recording.run(sizes.record, workdir)
        tell("6/12 rehearsal throughput")
        rehearsed = rehearsal.run(sizes.replays, sizes.replay_reps, workdir)
        tell("7/12 faultdeck serve replay throughput")
        served = serve.run(sizes.serve, workdir)
        tell(f"8/12 replaying a {sizes.binary.size:,}-byte binary answer: faultdeck, floor")
        downloaded = binary.run(sizes.binary, workdir)
        tell("9/12 parallel rehearsals and replays: --jobs 1, --jobs 2, Ray")
        scaled = scale.run(sizes.scale, workdir)
        tell("10/12 a pytest suite recorded and replayed: faultdeck, pytest-recording, cassetter")
        suite = pytest_suite.run(sizes.pytest_suite, workdir)
        tell("11/12 start-up: import faultdeck, import vcr, faultdeck --help and --version")
        started_up = startup.run(sizes.startup)
        tell("12/12 attaching: a child's start under the bootstrap, an intercepted replay")
        attached = attach.run(sizes.attach, workdir)
        where = f"{tempfile.gettempdir()} ({_filesystem(workdir)})"
    goals = [
        *http_replay.goals(sizes.http, http),
        *deck_call.goals(calls)[:1],
        *peers.goals(peered),
        *deck_call.goals(calls)[1:],
        *loading.goals(loaded),
        *recording.goals(recorded),
        *rehearsal.goals(rehearsed),
        *serve.goals(sizes.serve, served),
        *scale.goals(scaled),
        *binary.goals(sizes.binary, downloaded),
        *pytest_suite.goals(suite),
        *startup.goals(started_up),
        *attach.goals(attached),
    ]
    header, rows = http_replay.details(http)
    details = [
        ("HTTP replay, per call", table(header, rows)),
        ("Deck.call replay against the peers, per call", table(*peers.details(peered))),
        ("faultdeck serve replay, per request", table(*serve.details(served))),
        ("A pytest suite recorded and replayed", table(*pytest_suite.details(suite))),
    ]
    notes = [
        *_notes(sizes, where, http),
        peers.NOTE,
        serve.NOTE,
        scale.note(sizes.scale),
        binary.NOTE,
        pytest_suite.NOTE,
        startup.NOTE,
        attach.NOTE,
    ]
    return Results(goals, details, notes, found_on, time.perf_counter() - started)


def _notes(sizes: Sizes, where: str, http_results: dict[int, dict[str, Timing]]) -> list[str]:
    http = sizes.http
    small, _, large = http.sizes
    sample = http.body_sample.get(large)
    checked = min(http.body_full & set(http.body_sample), default=None)
    primed = " and ".join(f"{n:,}" for n in sorted(http.primed)) or "no size"
    notes = [
        "Each comparison's sides run in one process and take turns, A, B, A, B …, one "
        "repetition after another, after one untimed warm-up run each; a side that runs "
        "fewer times (a slow peer, the N=100,000 side) runs in rounds spread evenly among "
        "the others'. Each run is timed "
        "with time.perf_counter_ns with the garbage collector collected before and disabled "
        "during the timed section. Figures are medians; a ratio is the ratio of medians. "
        "The HTTP rows against the floor also give the ratio run for run: the median of "
        "each round's faultdeck run over the floor's run that followed it. This machine's "
        "speed drifts within a minute (the floor of the HTTP rows ran at 104-160 µs a call "
        "from one pass to the next), and the medians of the two sides each take in the "
        "whole drift, while two runs tens of milliseconds apart ran at about the same speed.",
        "Only the loop is timed: opening a cassette (faultdeck's Deck.open, a peer's "
        "loading of its file), making the client and closing are outside it.",
        "HTTP rows: POST http://127.0.0.1:PORT/v1/chat/completions, a distinct ~0.3 KB "
        "request body per call, an ~8 KB chat-completion answer. faultdeck, agenttape and "
        "vcrpy each recorded their cassettes once beforehand through the same client code "
        "from a local ThreadingHTTPServer, which is stopped before any replay (a replay "
        "that reached for the network would fail). The floor is the same httpx.Client on "
        "httpx.MockTransport returning the canned bytes.",
        "agenttape patches httpx.Client.send and vcrpy httpx's transports (MockTransport "
        "too) while a cassette is in use; every faultdeck and floor run checks that no patch "
        "is left before it starts. agenttape's replay turns the request into JSON (its body "
        "parsed, secret and volatile headers dropped), hashes it (sorted-key JSON, sha256), "
        "takes the first unconsumed recording of that key and builds a new httpx.Response "
        "from the recorded body: keyed, no id or timestamp normalization, redaction only "
        "when it writes the cassette. Each run checks it answered every request with the "
        "recorded body and executed nothing.",
        f"HTTP rows at N={primed} are primed: each timed run comes right after an untimed "
        "run of the same side, prepared anew (a fresh deck, a fresh client; vcrpy only where "
        "it has a warm-up). agenttape and vcrpy patch httpx's classes while they run, and a "
        "change to a class makes Python drop the code it had specialized for it: the side "
        "that runs next pays to specialize it again. Measured at N=100 with a patch of "
        "httpx.Client.send that does nothing, made before each round, three times: "
        "faultdeck / floor was 1.22-1.33x with faultdeck first after the patch, 1.15-1.19x "
        "with the floor first, 1.20-1.23x primed, and 1.19-1.25x with no patch at all. "
        "Unprimed, faultdeck, the first side of each round, paid for it. The cost is one "
        "run's, not a call's: in longer runs it is spread over more calls, and they are not "
        "primed.",
        f"vcrpy is quadratic in N, so it runs fewer times (see the runs column and the HTTP "
        f"table) and gets its warm-up only at N={small:,}; its code is warm by the time the "
        "larger sizes run in the same process.",
    ]
    if sample:
        notes.append(
            f"vcrpy with body matching past N={small:,} is timed on evenly spaced requests "
            f"({sample:,} at N={large:,}, mid-points of {large // sample:,}-call strides) "
            "against the whole cassette, not on all N: at N=2,000 a full run takes "
            "minutes. The i-th request's cost depends only on i (the interactions recorded "
            "before it never match its body, played or not, and each is compared twice), so "
            "the sample's mean per call estimates the full loop's."
            + (
                f" At N={checked:,} both the full loop and a sample are timed, to show how "
                "close the estimate comes"
                + _closeness(http_results.get(checked, {}), http_replay.VCR_BODY)
                if checked is not None
                else ""
            )
        )
    sampled = sorted(http.default_sample)
    if sampled:
        both = min(http.default_full & set(sampled), default=None)
        notes.append(
            "vcrpy with its default matchers at N="
            + ", ".join(f"{n:,}" for n in sampled if n not in http.default_full)
            + f" is timed on {http.default_sample[sampled[-1]]:,} evenly spaced requests too. "
            "With those matchers every recorded request matches every request (one URL) and "
            "vcrpy plays the first one not yet played, so the i-th request's cost depends only "
            "on which are played: before each sampled request the cassette's play counts "
            "(Cassette.play_counts) are set to the state the i requests before it leave, "
            "prepared outside the timed loop and put in place by one assignment inside it."
            + (
                f" At N={both:,} both the full loop and a sample are timed"
                + _closeness(http_results.get(both, {}), http_replay.VCR_DEFAULT)
                if both is not None
                else ""
            )
        )
    big = sizes.calls.big_calls
    notes += [
        "Deck.call rows: a replaying deck on a VirtualClock, which keys each call as the "
        "line it expects next (its args are that line's stored args; see the peers' note). "
        "The contract floor "
        "(benchmarks/floors.py) does per call what keyed replay must under faultdeck's "
        "rules: one walk of the args (transport fields stripped, known ids renamed through "
        "a dict, UUID, provider and id-field ids named with faultdeck's regexes, date-times "
        "made «ts», project paths made relative; only strings of 8+ characters without "
        "spaces are looked at for ids), canonical JSON of {v, kind, name, args} with "
        "orjson OPT_SORT_KEYS + sha256 (16 hex), a deque.popleft from a dict of per-key "
        "deques, a tuple appended to a log and orjson.loads(orjson.dumps(answer)) as the "
        "fresh copy; no redaction (faultdeck keys args unredacted first). Before timing, "
        "it is checked to give the very keys faultdeck wrote in the cassette. The bare floor "
        "is hashlib.sha256(orjson.dumps(args, option=OPT_SORT_KEYS)).hexdigest()[:16] and "
        "a dict lookup, returning the stored output with no copy.",
        f"Deck.call at N={big:,}: the cassette is written directly, with a recording's "
        f"header and end line and in lines checked to equal that recording's of the first "
        f"calls but for ms; each side opens a fresh deck per run.",
        "Memory: a fresh Python opens a tiny cassette first (imports, caches), then starts "
        "tracemalloc, opens the 100,000-call cassette with Deck(path, mode='replay').open() "
        "and reads tracemalloc's current size after gc.collect(); divided by the file's size.",
        "Recording rows: the record contract floor does, per call, one fused walk of the "
        "args (normalize + redact with faultdeck's Redactor.redact_leaf, as its walk does), "
        "the key, the live call with a clock read either side, one fused walk of the answer "
        "(JSON checked, wall-clock values scrubbed, redacted, ids learned), orjson.dumps of "
        "the entry and a buffered file's write + flush; it is checked to write faultdeck's "
        "lines but for ms. faultdeck also writes each live call's intent line first (for "
        "resume after a kill); the floor does not. The bare floor writes the lines faultdeck "
        "wrote, with write + flush per line (+ os.fsync per line for the fsync row); files "
        f"are written under {where}.",
        "Rehearsal: per replay a fresh VirtualClock and Deck(repeats='last') with one "
        "fault, the 50 steps run through fd.run_steps; deck construction and opening "
        "included.",
    ]
    return notes


def _closeness(timings: dict[str, Timing], name: str) -> str:
    full = timings.get(name)
    sample = timings.get(http_replay.SAMPLED[name])
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
