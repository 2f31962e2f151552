"""Row 8: replaying one large binary HTTP answer, from reading the cassette to the bytes.

    faultdeck   a fresh fd.Deck(path, mode="replay") opened on a cassette this process has
                not read, one GET through httpx.Client(transport=faultdeck.http.Transport(
                deck)), response.content read, the client and the deck closed
    floor       the cassette file read, its call line parsed (orjson.loads), the body
                decoded from base64 (binascii.a2b_base64), one GET through
                httpx.Client(transport=httpx.MockTransport(handler)) whose handler answers
                the stored status and headers with the decoded bytes, response.content read
    shared      faultdeck again on the file the faultdeck run before it read, unchanged (no
                goal: what a rehearsal's later replays cost)

The cassette holds one call: a GET whose answer is ``size`` seeded random bytes, stored as
faultdeck stores a body that is not text (``"body": "<base64>"`` beside ``"binary":
{"encoding", "size", "sha256"}``). It is recorded once beforehand through faultdeck's
Transport in record mode, its live transport an ``httpx.MockTransport`` handing over the
body at once: a body read from a socket in pieces more than a millisecond apart (a local
server in this process, on a busy machine) is stored with its chunks and replayed chunk by
chunk, which is not what this row measures. With one call, reading the cassette is the
job, so each timed run starts before the file is read and ends when the client has the
bytes.

A deck shares what it read with the process's later decks on the same unchanged file
(``load_shared``: the file is read and hashed, its recording reused), so a faultdeck run
would decode the body once and reuse it ever after, as a rehearsal does. The goal's
faultdeck side reads the cassette afresh, as a new process would: before each of its runs
(untimed) the file's mtime moves on, which makes it a file the process has not read.

The floor keeps the httpx client, as the HTTP rows' floor does: the contract ends when the
program's client holds the bytes, and faultdeck is measured through that client, so a floor
without it would count httpx's own work against faultdeck. faultdeck's reader also checks
the decoded body's size and sha256 as the line is read; the floor checks neither.
"""

from __future__ import annotations

import binascii
import os
import random
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import orjson

import faultdeck as fd
from faultdeck.http import Transport

from ._results import Goal, at_most
from ._timing import Body, Contender, Timing, interleave, paired

FAULTDECK = "faultdeck"
SHARED = "faultdeck, cassette read before"
FLOOR = "floor (orjson + base64, MockTransport)"
# Nothing listens on port 9 of the loopback: a replay that went live would fail.
URL = "http://127.0.0.1:9/v1/files/file-bench/content"
UPSTREAM_HEADERS = {"content-type": "application/octet-stream", "x-request-id": "req_bench_1"}
SEED = 20_240_517
GOAL = 2.0

NOTE = (
    "Binary answer row: a cassette holding one GET whose answer is seeded random bytes "
    "(application/octet-stream), recorded through faultdeck's Transport in record mode from "
    "an httpx.MockTransport handing over the body at once (read from a local socket in "
    "pieces more than 1 ms apart, it would be stored with its chunks and replayed chunk by "
    "chunk); faultdeck stores it as base64 with its size and sha256. Each timed run is a "
    "whole replay, the cassette read included. faultdeck opens a fresh "
    "Deck(path, mode='replay'), whose reader decodes the body and checks its size and "
    "sha256, sends the GET through httpx.Client on faultdeck.http.Transport, reads "
    "response.content and closes both; before each run (untimed) the file's mtime moves on, "
    "so that the process reads it afresh instead of reusing what the deck before read. The "
    "floor reads the file, parses the call line with orjson.loads, decodes the body with "
    "binascii.a2b_base64 and sends the GET through httpx.Client on httpx.MockTransport "
    "answering the stored status, headers and the decoded bytes: it keeps the client round "
    "trip, as the HTTP rows' floor does, because the contract ends when the client holds "
    "the bytes and faultdeck is measured through that client. Every run checks the client "
    "got the recorded bytes. The figure for the cassette read before is faultdeck on the "
    "file the faultdeck run before it read, unchanged: its reader reads the file, hashes it "
    "(blake2b) and reuses that recording, as a rehearsal's later replays do."
)


@dataclass(frozen=True, slots=True)
class Plan:
    """How the row is run.

    Args:
        size: the answer's length in bytes (the goal speaks of 5 MB, 5 * 1024 * 1024).
        reps: timed runs per side.
    """

    size: int
    reps: int


@dataclass(frozen=True, slots=True)
class Recorded:
    """The cassette, the URL it was recorded from and the body it holds."""

    path: Path
    url: str
    body: bytes


def answer(size: int) -> bytes:
    """The answer's body: ``size`` random bytes, the same every run."""
    return random.Random(SEED).randbytes(size)


def run(plan: Plan, workdir: Path) -> dict[str, Timing]:
    """Record the cassette once, then time both sides taking turns."""
    rec = record(workdir / "binary.jsonl", answer(plan.size))
    last: list[object] = []  # the recording the last faultdeck run read
    contenders = [
        Contender(FAULTDECK, lambda: _faultdeck(rec, last, fresh=True)),
        Contender(FLOOR, lambda: _floor(rec)),
        Contender(SHARED, lambda: _faultdeck(rec, last, fresh=False)),
    ]
    return interleave(contenders, reps=plan.reps, per_run=1)


def goals(plan: Plan, results: dict[str, Timing]) -> list[Goal]:
    """Row 8.1."""
    ours, floor, shared = results[FAULTDECK], results[FLOOR], results[SHARED]
    return [
        at_most(
            "8.1",
            f"HTTP replay of a {_size(plan.size)} binary answer, cassette read included: "
            "faultdeck / floor",
            f"faultdeck {_ms(ours)}, floor {_ms(floor)}; run for run "
            f"{paired(ours, floor):.2f}×; the cassette read before: faultdeck {_ms(shared)}",
            ours.median_ns / floor.median_ns,
            GOAL,
            f"{ours.reps} each",
        )
    ]


def _size(size: int) -> str:
    if size >= 1 << 20:
        return f"{size / (1 << 20):g} MB"
    return f"{size / (1 << 10):g} KB"


def _ms(timing: Timing) -> str:
    return f"{timing.median_ns / 1e6:,.1f} ms"


# -- recording, once -------------------------------------------------------------------------


def record(path: Path, body: bytes) -> Recorded:
    """Record one GET of ``body`` through faultdeck's Transport, its upstream an
    ``httpx.MockTransport`` answering it at once, and check the cassette holds it as one
    binary body (no chunks) on its second line, where the floor reads it."""

    def upstream(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers=UPSTREAM_HEADERS, content=body)

    live = httpx.MockTransport(upstream)
    with (
        fd.Deck(path, mode="record") as deck,
        httpx.Client(transport=Transport(deck, transport=live), trust_env=False) as client,
    ):
        got = client.get(URL)
        got.raise_for_status()
        if got.content != body:
            raise AssertionError("the recording client did not get the upstream's bytes")
    stored = orjson.loads(path.read_bytes().split(b"\n")[1]).get("out", {})
    if stored.get("binary", {}).get("size") != len(body) or "chunks" in stored:
        raise AssertionError(f"{path}: line 2 is not one binary answer of {len(body)} bytes")
    return Recorded(path, URL, body)


# -- the contenders: each yields its timed run -----------------------------------------------


@contextmanager
def _faultdeck(rec: Recorded, last: list[object], *, fresh: bool) -> Iterator[Body]:
    """A replay; ``fresh``: of a file this process has not read (its mtime moved on), else
    of the file the faultdeck run before read, unchanged (``last``: what that run read)."""
    if fresh:
        st = rec.path.stat()
        os.utime(rec.path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    got: list[bytes] = []
    decks: list[fd.Deck] = []

    def replay() -> None:
        with (
            fd.Deck(rec.path, mode="replay") as deck,
            httpx.Client(transport=Transport(deck), trust_env=False) as client,
        ):
            got.append(client.get(rec.url).content)
        decks.append(deck)

    yield replay
    report = decks[0].report()
    if got != [rec.body] or report.used != 1 or report.misses or report.unused:
        raise AssertionError(f"faultdeck did not replay the recorded bytes: {report}")
    recording = decks[0].recording
    reused = bool(last) and recording is last[0]
    if fresh and reused:
        raise AssertionError("a fresh faultdeck run reused the recording read before it")
    if not fresh and not reused:
        raise AssertionError("faultdeck did not reuse the recording it read before")
    last[:] = [recording]


@contextmanager
def _floor(rec: Recorded) -> Iterator[Body]:
    got: list[bytes] = []

    def replay() -> None:
        data = rec.path.read_bytes()
        start = data.index(b"\n") + 1
        stored = orjson.loads(memoryview(data)[start : data.index(b"\n", start)])["out"]
        content = binascii.a2b_base64(stored["body"])

        def handler(request: httpx.Request) -> httpx.Response:
            return httpx.Response(stored["status"], headers=stored["headers"], content=content)

        with httpx.Client(transport=httpx.MockTransport(handler), trust_env=False) as client:
            got.append(client.get(rec.url).content)

    yield replay
    if got != [rec.body]:
        raise AssertionError("the floor did not hand the client the recorded bytes")
