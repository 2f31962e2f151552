"""Row 1: replaying N chat completions through an ``httpx.Client``, three ways.

    faultdeck   httpx.Client(transport=fd.http.Transport(deck)), deck replaying a cassette
    agenttape   httpx.Client() under agenttape.use_cassette(path, mode="none"), which
                patches httpx.Client.send: the request is made JSON (its body parsed), its
                secret and volatile headers dropped, hashed (sorted-key JSON, sha256) and
                looked up by key; the answer is a new httpx.Response of the recorded body
    vcrpy       httpx.Client() under vcr.use_cassette(record_mode="none"), default matchers
                and with body matching
    floor       httpx.Client(transport=httpx.MockTransport(handler)) answering canned bytes
                with the headers the server sent (but the date, which no replay gives
                back): the least any in-process HTTP replay can cost

Each tool replays what it recorded itself, once beforehand, from the same local server,
which is stopped before any replay: a replay that reached for the network would fail.
vcrpy patches httpx's transports (``MockTransport`` among them) and agenttape patches
``httpx.Client.send`` while a cassette is in use, so every faultdeck and floor run first
checks that no patch is active.

vcrpy with body matching compares the i-th request with every recorded one before it,
twice (``can_play_response_for``, then ``play_response``), and a failed comparison formats
its failure report: a full run at N=2,000 takes minutes. Where the plan says so, it is
timed on an evenly spaced sample of the N requests against the whole N-call cassette. The
i-th request's cost depends only on i (the interactions before it never match its body,
played or not), so the sample's mean per call estimates the whole loop's; at the smallest
N both are timed, to show how close the estimate comes.

With its default matchers every recorded request matches every request (one URL), and
vcrpy plays the first one not played yet: the i-th request walks past the i already
played, twice. Its cost depends only on which are played, so a sample sets the cassette's
play counts (``Cassette.play_counts``) to the state after i requests in order before
sending the i-th; at one size both the full loop and a sample are timed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import agenttape
import httpx
import orjson
import vcr

import faultdeck as fd
from faultdeck.http import Transport

from ._results import Goal, at_least, at_most
from ._server import REQUEST_HEADERS, completion, request_bodies, serving
from ._timing import Body, Contender, Timing, interleave, paired

FAULTDECK = "faultdeck"
FLOOR = "floor (MockTransport)"
AGENTTAPE = "agenttape"
VCR_DEFAULT = "vcrpy, default matchers"
VCR_BODY = "vcrpy, + body matcher"
VCR_BODY_SAMPLED = "vcrpy, + body matcher, sampled"
VCR_DEFAULT_SAMPLED = "vcrpy, default matchers, sampled"
CONTENDERS = (
    FAULTDECK,
    FLOOR,
    AGENTTAPE,
    VCR_DEFAULT,
    VCR_DEFAULT_SAMPLED,
    VCR_BODY,
    VCR_BODY_SAMPLED,
)
SAMPLED = {VCR_DEFAULT: VCR_DEFAULT_SAMPLED, VCR_BODY: VCR_BODY_SAMPLED}
"""Each vcrpy contender and its sampled estimate."""

_BODY_MATCH = ["method", "scheme", "host", "port", "path", "query", "body"]
_UNPATCHED = (
    httpx.HTTPTransport.handle_request,
    httpx.MockTransport.handle_request,
    httpx.Client.send,
)


@dataclass(frozen=True, slots=True)
class Plan:
    """How each size is timed.

    Args:
        sizes: the three N, small to large (the goals speak of 100, 500 and 2,000).
        reps: timed runs per size for faultdeck and the floor.
        tape_reps: timed runs per size for agenttape (its goal leaves a wide margin; a run
            of it costs one of faultdeck's and one of the floor's together).
        default_reps: timed runs per size for vcrpy with its default matchers.
        body_reps: timed runs per size for vcrpy with body matching.
        vcr_warmup: sizes at which vcrpy gets an untimed warm-up run; at the others, the
            smaller sizes, run before them in the same process, have warmed its code.
        primed: sizes at which each timed run comes right after an untimed run of the same
            side (``interleave``'s ``primed``): the short runs, where what the side before
            left cold weighs on a few calls.
        body_full: sizes at which vcrpy with body matching replays all N calls.
        body_sample: sizes at which it is (also) timed on this many evenly spaced calls.
        default_full: sizes at which vcrpy with its default matchers replays all N calls.
        default_sample: sizes at which it is (also) timed on this many evenly spaced calls.
    """

    sizes: tuple[int, int, int]
    reps: Mapping[int, int]
    tape_reps: Mapping[int, int]
    default_reps: Mapping[int, int]
    body_reps: Mapping[int, int]
    vcr_warmup: frozenset[int]
    primed: frozenset[int]
    body_full: frozenset[int]
    body_sample: Mapping[int, int]
    default_full: frozenset[int]
    default_sample: Mapping[int, int]


@dataclass(frozen=True, slots=True)
class Recorded:
    """One size's cassettes and requests."""

    n: int
    url: str
    bodies: list[bytes]
    faultdeck: Path
    vcrpy: Path
    agenttape: Path


def run(plan: Plan, workdir: Path) -> dict[int, dict[str, Timing]]:
    """Record each size once with both tools, then time the replays; timings by size."""
    with serving() as url:
        recorded = [_record(n, url, workdir) for n in plan.sizes]
    return {
        rec.n: interleave(
            _contenders(plan, rec),
            reps=plan.reps[rec.n],
            per_run=rec.n,
            primed=rec.n in plan.primed,
        )
        for rec in recorded
    }


def _contenders(plan: Plan, rec: Recorded) -> list[Contender]:
    n = rec.n
    warm = n in plan.vcr_warmup
    reps = plan.body_reps[n]
    found = [
        Contender(FAULTDECK, lambda: _faultdeck(rec)),
        Contender(FLOOR, lambda: _floor(rec)),
        Contender(AGENTTAPE, lambda: _agenttape(rec), plan.tape_reps[n]),
    ]
    everyone = range(n)
    default_reps = plan.default_reps[n]
    if n in plan.default_full:
        found.append(
            Contender(VCR_DEFAULT, lambda: _vcrpy(rec, None, everyone), default_reps, warm)
        )
    sample = plan.default_sample.get(n)
    if sample:
        picked = _spaced(n, sample)
        found.append(
            Contender(
                VCR_DEFAULT_SAMPLED,
                lambda: _vcrpy(rec, None, picked, played=True),
                default_reps,
                warm,
                sample,
            )
        )
    if n in plan.body_full:
        found.append(Contender(VCR_BODY, lambda: _vcrpy(rec, _BODY_MATCH, everyone), reps, warm))
    sample = plan.body_sample.get(n)
    if sample:
        spaced = _spaced(n, sample)
        found.append(
            Contender(
                VCR_BODY_SAMPLED, lambda: _vcrpy(rec, _BODY_MATCH, spaced), reps, warm, sample
            )
        )
    return found


def _spaced(n: int, sample: int) -> list[int]:
    """``sample`` evenly spaced requests of ``n``: the mid-points of equal strides."""
    step = n / sample
    return [int(step * k + step / 2) for k in range(sample)]


def goals(plan: Plan, results: Mapping[int, Mapping[str, Timing]]) -> list[Goal]:
    """Rows 1.1 to 1.10."""
    small, medium, large = plan.sizes
    found: list[Goal] = []
    for row, n in (("1.1", small), ("1.2", medium), ("1.3", large)):
        ours, floor = results[n][FAULTDECK], results[n][FLOOR]
        found.append(
            at_most(
                row,
                f"HTTP replay, N={n:,}: faultdeck / floor",
                f"faultdeck {_us(ours)}, floor {_us(floor)}; "
                f"run for run {paired(ours, floor):.2f}×",
                ours.median_ns / floor.median_ns,
                1.3,
                f"{ours.reps} each",
            )
        )
    for row, matching, n, limit in (
        ("1.4", "default matchers", medium, 20),
        ("1.5", "default matchers", large, 50),
        ("1.6", "body matching", medium, 20),
        ("1.7", "body matching", large, 50),
    ):
        ours = results[n][FAULTDECK]
        peer = _full_or_sampled(results[n], VCR_DEFAULT if "default" in matching else VCR_BODY)
        theirs = results[n][peer]
        runs = f"vcrpy {theirs.reps}, faultdeck {ours.reps}"
        if peer in SAMPLED.values():
            runs += f"; vcrpy timed on {theirs.per_run:,} evenly spaced calls of {n:,}"
        found.append(
            at_least(
                row,
                f"HTTP replay, N={n:,}: vcrpy ({matching}) / faultdeck",
                f"vcrpy {_us(theirs)}, faultdeck {_us(ours)}",
                theirs.per_op_us / ours.per_op_us,
                limit,
                runs,
            )
        )
    first, last = results[small][FAULTDECK], results[large][FAULTDECK]
    found.append(
        at_most(
            "1.8",
            f"HTTP replay: faultdeck per call, N={large:,} / N={small:,}",
            f"{_us(last)} at N={large:,}, {_us(first)} at N={small:,}",
            last.per_op_us / first.per_op_us,
            1.5,
            f"{last.reps}, {first.reps}",
        )
    )
    for row, n in (("1.9", small), ("1.10", large)):
        ours, tape = results[n][FAULTDECK], results[n][AGENTTAPE]
        found.append(
            at_most(
                row,
                f"HTTP replay, N={n:,}: faultdeck / agenttape",
                f"faultdeck {_us(ours)}, agenttape {_us(tape)}",
                ours.median_ns / tape.median_ns,
                0.9,
                f"faultdeck {ours.reps}, agenttape {tape.reps}",
            )
        )
    return found


def details(results: Mapping[int, Mapping[str, Timing]]) -> tuple[list[str], list[list[str]]]:
    """Per-call medians of every contender at every size, as a table's header and rows."""
    header = ["contender", *(f"N={n:,}: µs/call (runs)" for n in results)]
    rows = []
    for name in CONTENDERS:
        cells = []
        for timings in results.values():
            timing = timings.get(name)
            if timing is None:
                cells.append("—")
            else:
                sampled = f", {timing.per_run:,} calls" if name in SAMPLED.values() else ""
                cells.append(f"{timing.per_op_us:,.1f} ({timing.reps}{sampled})")
        rows.append([name, *cells])
    return header, rows


def _full_or_sampled(timings: Mapping[str, Timing], full: str) -> str:
    """The vcrpy figure a goal uses: the full run's when there is one, else its sample's."""
    return full if full in timings else SAMPLED[full]


def _us(timing: Timing) -> str:
    return f"{timing.per_op_us:,.1f} µs/call"


# -- recording, once per size ----------------------------------------------------------------


def _record(n: int, url: str, workdir: Path) -> Recorded:
    bodies = request_bodies(n)
    ours = workdir / f"http-{n}.jsonl"
    theirs = workdir / f"http-{n}.yaml"
    tape = workdir / f"http-{n}-agenttape.json"
    _check_unpatched()
    with (
        fd.Deck(ours, mode="record") as deck,
        httpx.Client(transport=Transport(deck), trust_env=False) as client,
    ):
        for content in bodies:
            client.post(url, content=content, headers=REQUEST_HEADERS).raise_for_status()
    with (
        vcr.VCR(record_mode="all").use_cassette(str(theirs)),
        httpx.Client(trust_env=False) as client,
    ):
        for content in bodies:
            client.post(url, content=content, headers=REQUEST_HEADERS).raise_for_status()
    with (
        agenttape.use_cassette(tape, mode="record", format="json"),
        httpx.Client(trust_env=False) as client,
    ):
        for content in bodies:
            client.post(url, content=content, headers=REQUEST_HEADERS).raise_for_status()
    _check_unpatched()
    return Recorded(n, url, bodies, ours, theirs, tape)


# -- the contenders: each yields its timed loop ----------------------------------------------


def _loop(client: httpx.Client, url: str, bodies: list[bytes]) -> Body:
    post = client.post

    def replay() -> None:
        for content in bodies:
            post(url, content=content, headers=REQUEST_HEADERS)

    return replay


@contextmanager
def _faultdeck(rec: Recorded) -> Iterator[Body]:
    _check_unpatched()
    deck = fd.Deck(rec.faultdeck, mode="replay", clock=fd.VirtualClock())
    deck.open()
    with httpx.Client(transport=Transport(deck), trust_env=False) as client:
        yield _loop(client, rec.url, rec.bodies)
    deck.close()
    report = deck.report()
    if report.unused or report.misses or report.used != rec.n:
        raise AssertionError(f"faultdeck did not replay all {rec.n} calls: {report}")


@contextmanager
def _floor(rec: Recorded) -> Iterator[Body]:
    _check_unpatched()
    content = completion()
    # What a faithful replay hands back: the server's headers as recorded (a client builds
    # each one, and its cookie jar reads them all).
    headers = fd.load(rec.faultdeck).entries[0].value["headers"]

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=content, headers=headers)

    with httpx.Client(transport=httpx.MockTransport(handler), trust_env=False) as client:
        yield _loop(client, rec.url, rec.bodies)


@contextmanager
def _agenttape(rec: Recorded) -> Iterator[Body]:
    got: list[httpx.Response] = []
    with (
        agenttape.use_cassette(rec.agenttape, mode="none", format="json") as session,
        httpx.Client(trust_env=False) as client,
    ):
        post = client.post
        keep = got.append

        def replay() -> None:
            for content in rec.bodies:
                keep(post(rec.url, content=content, headers=REQUEST_HEADERS))

        yield replay
        if session.engine.executed:
            raise AssertionError("agenttape sent a request to the network")
    _check_unpatched()
    answer = orjson.loads(completion())
    if len(got) != rec.n or any(r.status_code != 200 or r.json() != answer for r in got):
        raise AssertionError(f"agenttape did not replay all {rec.n} recorded answers")


@contextmanager
def _vcrpy(
    rec: Recorded, match_on: list[str] | None, which: Sequence[int], *, played: bool = False
) -> Iterator[Body]:
    """vcrpy replaying the requests ``which`` (indices into the recorded N); ``played``: each
    goes out with the cassette's play counts as N in order would have left them before it
    (the state is made before the timed loop, put in place by one assignment in it)."""
    recorder = vcr.VCR(record_mode="none", **({"match_on": match_on} if match_on else {}))
    bodies = [rec.bodies[i] for i in which]
    with (
        httpx.Client(trust_env=False) as client,
        recorder.use_cassette(str(rec.vcrpy)) as cassette,
    ):
        if not played:
            yield _loop(client, rec.url, bodies)
            if cassette.play_count != len(bodies):
                raise AssertionError(f"vcrpy played {cassette.play_count} of {len(bodies)} calls")
        else:
            states = [Counter(dict.fromkeys(range(i), 1)) for i in which]
            url, post = rec.url, client.post

            def replay() -> None:
                for state, content in zip(states, bodies, strict=True):
                    cassette.play_counts = state
                    post(url, content=content, headers=REQUEST_HEADERS)

            yield replay
            wrong = [i for i, state in zip(which, states, strict=True) if state[i] != 1]
            if wrong or any(sum(s.values()) != i + 1 for i, s in zip(which, states, strict=True)):
                raise AssertionError(f"vcrpy did not play requests {wrong} as the i-th call")
    _check_unpatched()


def _check_unpatched() -> None:
    now = (
        httpx.HTTPTransport.handle_request,
        httpx.MockTransport.handle_request,
        httpx.Client.send,
    )
    if now != _UNPATCHED:
        raise RuntimeError("a peer's patch of httpx is active outside its own measurement")
