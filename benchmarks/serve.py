"""Row 6: ``faultdeck serve`` replaying N chat completions to one keep-alive client.

    faultdeck   make_app(ServerConfig(cassettes=DIR)) answering POST /c/NAME/v1/chat/completions
                from DIR/NAME.jsonl
    bare        a Starlette app whose one route reads the request and answers the bytes the
                replay answers it (status, content-type, body), found by a dict lookup

Both run under the same uvicorn settings on 127.0.0.1 (port 0) in a thread of this
process; the client is one ``httpx.Client`` sending the N requests one after another on
one connection. Every pass starts a fresh server (each recorded answer is used once per
deck), sends one untimed request (it opens the deck and the connection), then times the N
requests, each timed on its own too for the latency figures. Every answer must be a 200
with the recorded body, or the run stops.

The cassette is recorded once beforehand through the faultdeck server itself in record
mode, from the local chat-completions server the HTTP rows use.
"""

from __future__ import annotations

import socket
import statistics
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from faultdeck.server._config import ServerConfig
from faultdeck.server.app import make_app

from ._results import Goal, at_least
from ._server import PATH, REQUEST_HEADERS, request_bodies, serving
from ._timing import Body, Contender, Timing, interleave

FAULTDECK = "faultdeck serve"
BARE = "bare Starlette"
CONTENDERS = (FAULTDECK, BARE)
NAME = "serve"
GOAL = 0.5

NOTE = (
    "Server row: faultdeck serve (make_app, replay mode) and a bare Starlette app under the "
    "same uvicorn settings (h11, asyncio loop, lifespan on, access log off), each started "
    "fresh on 127.0.0.1 port 0 in a thread of the benchmark's process for every run, so "
    "client and server share one interpreter. The client is one httpx.Client (keep-alive) "
    "posting the N distinct requests in turn; one untimed request first opens the "
    "connection (and faultdeck's deck). The bare app reads the request and answers the "
    "status, content-type and body the replay answers it, found by a dict lookup on the "
    "request body. Latency percentiles pool every timed request of a side."
)

_START_TIMEOUT = 10.0
_STOP_TIMEOUT = 10.0


@dataclass(frozen=True, slots=True)
class Plan:
    """How the row is run.

    Args:
        calls: the N requests timed per run (one more is recorded, for the untimed first).
        reps: timed runs per side.
    """

    calls: int
    reps: int


@dataclass(frozen=True, slots=True)
class Answer:
    """What the replay answers: the bare app answers the same."""

    status: int
    content_type: str
    body: bytes


@dataclass(slots=True)
class Side:
    """One side's timing and the latency of every timed request, in nanoseconds."""

    timing: Timing
    latencies_ns: list[int] = field(default_factory=list)

    @property
    def p50_us(self) -> float:
        """The median request's latency, in microseconds."""
        return statistics.median(self.latencies_ns) / 1000

    @property
    def p99_us(self) -> float:
        """The 99th percentile of the latencies, in microseconds."""
        return statistics.quantiles(self.latencies_ns, n=100)[98] / 1000


def run(plan: Plan, workdir: Path) -> dict[str, Side]:
    """Record the cassette, then time both servers taking turns; each side's figures."""
    folder = workdir / "serve"
    bodies = request_bodies(plan.calls + 1)
    with serving() as url:
        upstream = url.removesuffix(PATH)
        _record(ServerConfig(cassettes=folder, mode="record", upstream=upstream), bodies)
    config = ServerConfig(cassettes=folder)  # replay, as `faultdeck serve` starts
    answers = _probe(config, bodies)
    runs: dict[str, list[list[int]]] = {name: [] for name in CONTENDERS}
    contenders = [
        Contender(FAULTDECK, lambda: _passing(make_app(config), bodies, answers, runs[FAULTDECK])),
        Contender(BARE, lambda: _passing(_bare(answers), bodies, answers, runs[BARE])),
    ]
    timings = interleave(contenders, reps=plan.reps, per_run=plan.calls)
    # The first run of each side is its untimed warm-up.
    return {
        name: Side(timings[name], [ns for one in runs[name][1:] for ns in one])
        for name in CONTENDERS
    }


def goals(plan: Plan, results: dict[str, Side]) -> list[Goal]:
    """Row 6.1."""
    ours, bare = results[FAULTDECK], results[BARE]
    return [
        at_least(
            "6.1",
            f"faultdeck serve replay, N={plan.calls:,}, one keep-alive client: "
            "faultdeck / bare Starlette (req/s)",
            f"faultdeck {_rate(ours)}, bare {_rate(bare)}",
            ours.timing.per_second / bare.timing.per_second,
            GOAL,
            f"{ours.timing.reps} each",
        )
    ]


def details(results: dict[str, Side]) -> tuple[list[str], list[list[str]]]:
    """Each side's throughput and per-request latency, as a table's header and rows."""
    header = ["server", "requests/s", "p50 µs/request", "p99 µs/request", "runs"]
    rows = [
        [
            name,
            f"{side.timing.per_second:,.0f}",
            f"{side.p50_us:,.0f}",
            f"{side.p99_us:,.0f}",
            str(side.timing.reps),
        ]
        for name, side in results.items()
    ]
    return header, rows


def _rate(side: Side) -> str:
    rate = f"{side.timing.per_second:,.0f} req/s"
    return f"{rate} (p50 {side.p50_us:,.0f} µs, p99 {side.p99_us:,.0f} µs)"


# -- the servers -----------------------------------------------------------------------------


class _ThreadedServer(uvicorn.Server):
    """A uvicorn server that leaves signal handlers alone (it runs off the main thread)."""

    @contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


@contextmanager
def _served(app: Any) -> Iterator[str]:
    """Serve ``app`` under uvicorn on a free port of 127.0.0.1 in a thread; yield the
    replay URL."""
    # IPPROTO_TCP named: asyncio sets TCP_NODELAY only on sockets whose proto says TCP, and
    # without it a keep-alive answer waits on the client's delayed ACK (~40 ms).
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        lifespan="on",
        loop="asyncio",
        http="h11",
        ws="none",
    )
    server = _ThreadedServer(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + _START_TIMEOUT
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"uvicorn did not start on 127.0.0.1:{port}")
            time.sleep(0.005)
        yield f"http://127.0.0.1:{port}/c/{NAME}{PATH}"
    finally:
        server.should_exit = True
        thread.join(_STOP_TIMEOUT)
        sock.close()
        if thread.is_alive():
            raise RuntimeError(f"uvicorn on 127.0.0.1:{port} did not stop")


def _client() -> httpx.Client:
    """One keep-alive client, with TCP_NODELAY: without it a request's body now and then
    waits on the server's delayed ACK of its headers (~40 ms)."""
    nodelay = [(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)]
    return httpx.Client(transport=httpx.HTTPTransport(socket_options=nodelay), trust_env=False)


def _bare(answers: dict[bytes, Answer]) -> Starlette:
    async def replay(request: Request) -> Response:
        answer = answers[await request.body()]
        return Response(
            answer.body, status_code=answer.status, headers={"content-type": answer.content_type}
        )

    return Starlette(routes=[Route("/c/{name:path}", replay, methods=["POST"])])


def _record(config: ServerConfig, bodies: list[bytes]) -> None:
    with _served(make_app(config)) as url, _client() as client:
        for content in bodies:
            client.post(url, content=content, headers=REQUEST_HEADERS).raise_for_status()


def _probe(config: ServerConfig, bodies: list[bytes]) -> dict[bytes, Answer]:
    """What the replay answers each request (the recorded ids and timestamps differ)."""
    answers: dict[bytes, Answer] = {}
    with _served(make_app(config)) as url, _client() as client:
        for content in bodies:
            got = client.post(url, content=content, headers=REQUEST_HEADERS)
            if got.status_code != 200:
                raise AssertionError(f"the replay missed: {got.status_code} {got.text[:200]}")
            answers[content] = Answer(got.status_code, got.headers["content-type"], got.content)
    return answers


@contextmanager
def _passing(
    app: Any, bodies: list[bytes], answers: dict[bytes, Answer], runs: list[list[int]]
) -> Iterator[Body]:
    """One run: a fresh server, one untimed request, then the timed loop over the rest."""
    first, timed = bodies[0], bodies[1:]
    latencies: list[int] = []
    got: list[httpx.Response] = []
    with _served(app) as url, _client() as client:
        got.append(client.post(url, content=first, headers=REQUEST_HEADERS))
        post = client.post
        clock = time.perf_counter_ns
        keep, note = got.append, latencies.append

        def replay() -> None:
            for content in timed:
                started = clock()
                keep(post(url, content=content, headers=REQUEST_HEADERS))
                note(clock() - started)

        yield replay
    wrong = [
        r
        for content, r in zip(bodies, got, strict=False)
        if r.status_code != 200 or r.content != answers[content].body
    ]
    if wrong or len(got) != len(bodies):
        raise AssertionError(
            f"{len(wrong)} of {len(got)} answers were not the recorded 200 "
            f"(first: {wrong[0].status_code if wrong else '-'})"
        )
    runs.append(latencies)
