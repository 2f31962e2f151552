"""Rows 3: loading a cassette against orjson parsing the same lines, and the memory a
replaying deck keeps once it has opened it, for two shapes of cassette.

    faultdeck   faultdeck.load(path): read, parse, validate, build the entries
    floor       read the bytes, then [orjson.loads(l) for l in data.split(b"\\n") if l]
    memory      in a fresh Python: Deck(path, mode="replay").open(), then tracemalloc's
                current size after gc.collect(), over the file's size

Rows 3.1-3.2 load 100,000 small tool calls; rows 3.3-3.4 2,000 chat completions of about
8 KB each, as the HTTP transport records them (the answer's JSON body stored parsed).
Either cassette is written directly in format v1, as a recording leaves it: a recording's
header, the call lines (checked to equal that recording's of the first calls but for
``ms``), the recording's end line.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import orjson

import faultdeck as fd
from faultdeck._keys.canonical import make_key
from faultdeck.http import Transport

from . import deck_call
from ._results import Goal, at_most
from ._server import PATH, REQUEST_HEADERS, completion, request_bodies
from ._timing import Body, Contender, Timing, interleave

FAULTDECK = "faultdeck.load"
FLOOR = "floor (read + orjson per line)"
OUTPUT = {"hits": ["docs/retry-budget.md"], "total": 1}
ANSWER_CALLS = 2000
"""How many ~8 KB answers rows 3.3-3.4 load (fewer when the small row loads fewer calls)."""


@dataclass(frozen=True, slots=True)
class Answers:
    """Rows 3.3-3.4: ``calls`` chat completions of ~8 KB, loaded ``reps`` times."""

    calls: int = ANSWER_CALLS
    reps: int = 9


def write_cassette(path: Path, calls: int) -> None:
    """A cassette of ``calls`` small tool calls, line for line as a recording leaves it
    (checked against faultdeck's recording of the first three)."""
    like = path.with_suffix(".like.jsonl")
    deck_call.record([_args(seq) for seq in range(1, 4)], like, OUTPUT)
    args = (_args(seq) for seq in range(1, calls + 1))
    deck_call.write_cassette(path, args, like, OUTPUT)


def _args(seq: int) -> dict[str, Any]:
    return {"q": f"retry budget {seq}", "top_k": 5}


# -- the ~8 KB answers -----------------------------------------------------------------------

# Nothing listens on port 9 of the loopback: the recording's upstream is a MockTransport.
_URL = f"http://127.0.0.1:9{PATH}"
_NAME = "openai.chat.completions"
_EPOCH = 946_684_800  # where a recording puts an answer's "created": this plus its seq
_RECORDED = 3  # calls recorded for real, which the written lines are checked against


def _hex(i: int, kind: str, size: int) -> str:
    return hashlib.sha256(f"{kind}{i}".encode()).hexdigest()[:size]


def _upstream_headers(i: int) -> dict[str, str]:
    """An OpenAI answer's headers (but the ones a recording drops: date, content-length…)."""
    return {
        "content-type": "application/json",
        "openai-processing-ms": str(1800 + i % 400),
        "openai-version": "2020-10-01",
        "x-ratelimit-limit-requests": "10000",
        "x-ratelimit-remaining-requests": "9999",
        "x-ratelimit-reset-requests": "6ms",
        "x-request-id": f"req_{_hex(i, 'req', 32)}",
    }


def _answer(i: int) -> dict[str, Any]:
    """The i-th call's chat completion (``_server.completion``, with ids of its own)."""
    body: dict[str, Any] = orjson.loads(completion())
    body["id"] = f"chatcmpl-{_hex(i, 'chat', 29)}"
    body["choices"][0]["message"]["tool_calls"][0]["id"] = f"call_{_hex(i, 'call', 24)}"
    return body


def write_answers(path: Path, calls: int) -> None:
    """A cassette of ``calls`` chat completions of ~8 KB sent through an httpx client on
    ``faultdeck.http.Transport``, line for line as a recording leaves it: checked against
    faultdeck's recording of the first three, made through that Transport with an
    ``httpx.MockTransport`` handing over each answer at once."""
    like = path.with_suffix(".like.jsonl")
    _record_answers(like, _RECORDED)
    recorded = like.read_bytes().splitlines()
    if len(recorded) != _RECORDED + 2:
        raise AssertionError(f"{like}: not {_RECORDED} calls between a header and an end line")
    lines = [recorded[0]]
    for seq, sent in enumerate(request_bodies(calls), start=1):
        args = {"method": "POST", "path": PATH, "body": orjson.loads(sent)}
        body = _answer(seq - 1)
        body["created"] = _EPOCH + seq
        out = {"status": 200, "headers": _upstream_headers(seq - 1), "body": body}
        line = {"seq": seq, "kind": "model", "name": _NAME, "key": make_key("model", _NAME, args)}
        ids = [body["id"], body["choices"][0]["message"]["tool_calls"][0]["id"]]
        line.update(args=args, out=out, ms=2.5, ids=ids)
        lines.append(orjson.dumps(line))
    end = orjson.loads(recorded[-1])["end"]
    lines.append(orjson.dumps({"end": {**end, "calls": calls}}))
    for ours, theirs in zip(lines[1:], recorded[1:-1], strict=False):
        if {**orjson.loads(ours), "ms": 0} != {**orjson.loads(theirs), "ms": 0}:
            raise AssertionError(f"the written cassette differs from faultdeck's: {theirs!r}")
    path.write_bytes(b"\n".join(lines) + b"\n")


def _record_answers(path: Path, calls: int) -> None:
    answered = iter(range(calls))

    def upstream(request: httpx.Request) -> httpx.Response:
        i = next(answered)
        content = orjson.dumps(_answer(i))
        return httpx.Response(200, headers=_upstream_headers(i), content=content)

    live = httpx.MockTransport(upstream)
    with (
        fd.Deck(path, mode="record") as deck,
        httpx.Client(transport=Transport(deck, transport=live), trust_env=False) as client,
    ):
        for sent in request_bodies(calls):
            client.post(_URL, content=sent, headers=REQUEST_HEADERS).raise_for_status()


# -- the rows --------------------------------------------------------------------------------

# Run in a fresh interpreter, so that only what opening the cassette keeps is counted: a
# tiny cassette of the same shape is opened first (untimed, uncounted) to import and warm
# what opening needs.
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
class Opened:
    """One cassette's load timings (faultdeck's and the floor's), and the memory a
    replaying deck keeps once it has opened it."""

    timings: dict[str, Timing]
    kept_bytes: int
    file_bytes: int


@dataclass(frozen=True, slots=True)
class Loaded:
    """Both cassettes: the small calls (rows 3.1-3.2) and the ~8 KB answers (3.3-3.4)."""

    small: Opened
    answers: Opened


def run(calls: int, reps: int, workdir: Path, *, answers: Answers | None = None) -> Loaded:
    """Write each cassette, time both readers, then measure what opening it keeps.

    Args:
        calls: small calls in rows 3.1-3.2's cassette.
        reps: timed runs per side for rows 3.1-3.2.
        workdir: where the cassettes are written.
        answers: rows 3.3-3.4's plan; by default ``ANSWER_CALLS`` answers (no more than
            ``calls``, so that a tiny run stays tiny), timed ``reps`` times.
    """
    if answers is None:
        answers = Answers(min(ANSWER_CALLS, calls), reps)
    small = workdir / f"load-{calls}.jsonl"
    write_cassette(small, calls)
    warm = workdir / "load-warm.jsonl"
    write_cassette(warm, 3)
    large = workdir / f"load-answers-{answers.calls}.jsonl"
    write_answers(large, answers.calls)
    return Loaded(
        _opened(small, calls, reps, warm, workdir),
        _opened(large, answers.calls, answers.reps, large.with_suffix(".like.jsonl"), workdir),
    )


def _opened(path: Path, calls: int, reps: int, warm: Path, workdir: Path) -> Opened:
    contenders = [
        Contender(FAULTDECK, lambda: _faultdeck(path, calls)),
        Contender(FLOOR, lambda: _floor(path)),
    ]
    timings = interleave(contenders, reps=reps, per_run=calls)
    return Opened(timings, kept(path, calls, warm, workdir), path.stat().st_size)


def kept(path: Path, calls: int, warm: Path, workdir: Path) -> int:
    """Bytes a replaying deck keeps after opening ``path``, measured in a fresh Python that
    opened ``warm`` first."""
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
    """Rows 3.1-3.4."""
    return [
        *_goals(("3.1", "3.2"), loaded.small, ""),
        *_goals(("3.3", "3.4"), loaded.answers, " of ~8 KB answers"),
    ]


def _goals(rows: tuple[str, str], opened: Opened, shape: str) -> list[Goal]:
    ours, floor = opened.timings[FAULTDECK], opened.timings[FLOOR]
    mb = 1024 * 1024
    return [
        at_most(
            rows[0],
            f"load a {ours.per_run:,}-call cassette{shape}: faultdeck.load / orjson",
            f"faultdeck {ours.median_ns / 1e6:,.0f} ms, orjson {floor.median_ns / 1e6:,.0f} ms",
            ours.median_ns / floor.median_ns,
            1.5,
            f"{ours.reps} each",
        ),
        at_most(
            rows[1],
            f"memory kept after opening a {ours.per_run:,}-call cassette{shape} / file size",
            f"{opened.kept_bytes / mb:,.1f} MB kept, file {opened.file_bytes / mb:,.1f} MB",
            opened.kept_bytes / opened.file_bytes,
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
