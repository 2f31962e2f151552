"""``fd.intercept`` and aiohttp: a plain ``aiohttp.ClientSession``, written as a user writes
one, recorded against httpbin and the fake LLM upstream on 127.0.0.1, then replayed with
both servers stopped and no connection opened.

What the program sees is compared three ways: a plain session with no deck, the session
recording through the deck, and the session replaying: statuses, headers (repeats kept; all
but the hop-by-hop ones, ``date`` and ``content-length``), redirect history, bodies, and a
stream of server-sent events read line by line as it arrives.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from http import HTTPStatus
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import aiohttp
import httpx2
import pytest

import faultdeck as fd

from ..support.children import child_env, run
from ..support.fake_upstream import Upstream
from ..support.httpbin import httpbin

KEY = "sk-proj-" + "Q7f2Kp9xWm4Rt8Lz3Vb6Nc1Hd5Gs0Aj"
VOLATILE = frozenset({"date", "connection", "keep-alive", "transfer-encoding", "content-length"})
PARAMS = {"q": "weather in Paris", "n": "2"}
ASK = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}


@dataclass(frozen=True)
class Seen:
    """What the program saw of one request."""

    status: int
    reason: str
    headers: tuple[tuple[str, str], ...]
    history: tuple[tuple[int, str], ...]
    body: bytes

    def meaning(self) -> Any:
        """The body by meaning: a cassette keeps a JSON body as its value, not its spacing."""
        kind = dict(self.headers).get("content-type", "")
        if "json" in kind:
            return json.loads(self.body)
        if "event-stream" in kind:  # the events, but for a timestamp a replay gives fixed
            data = [line[6:] for line in self.body.split(b"\n") if line.startswith(b"data: ")]
            events = [json.loads(d) for d in data if d != b"[DONE]"]
            return [{k: v for k, v in e.items() if k != "created"} for e in events], data[-1]
        return self.body


def seen(resp: aiohttp.ClientResponse, body: bytes) -> Seen:
    headers = tuple((k.lower(), v) for k, v in resp.headers.items() if k.lower() not in VOLATILE)
    history = tuple((r.status, str(r.url)) for r in resp.history)
    return Seen(resp.status, resp.reason or "", headers, history, body)


class Connections:
    """Counts the connections a session opens (aiohttp's own tracing)."""

    def __init__(self) -> None:
        self.opened = 0
        self.config = aiohttp.TraceConfig()
        self.config.on_connection_create_start.append(self._opened)

    async def _opened(self, *_: Any) -> None:
        self.opened += 1


async def program(base: str, llm: str, traced: Connections) -> dict[str, Any]:
    """The agent under test: plain aiohttp, as a user writes it."""
    out: dict[str, Any] = {}
    async with aiohttp.ClientSession(trace_configs=[traced.config]) as session:
        async with session.get(f"{base}/get", params=PARAMS) as resp:
            out["params"] = seen(resp, await resp.read())
            out["params-json"] = await resp.json()
        async with session.post(f"{base}/post", json={"q": "weather", "n": [1, 2.5]}) as resp:
            out["json"] = seen(resp, await resp.read())
        async with session.post(f"{base}/post", data={"city": "Paris"}) as resp:
            out["form"] = seen(resp, await resp.read())
        async with session.get(f"{base}/gzip") as resp:
            out["gzip"] = seen(resp, b"".join([c async for c in resp.content.iter_chunked(64)]))
        async with session.get(f"{base}/redirect/2") as resp:
            out["redirect"] = seen(resp, await resp.read())
        async with session.get(f"{base}/status/404") as resp:
            out["404"] = seen(resp, await resp.read())
            with pytest.raises(aiohttp.ClientResponseError) as raised:
                resp.raise_for_status()
            out["404-raised"] = raised.value.status
        repeated = f"{base}/response-headers?X-Shard=1&X-Shard=2"
        async with session.get(repeated) as resp:
            out["repeated"] = seen(resp, await resp.read())
            out["repeated-all"] = resp.headers.getall("X-Shard")
        secret = {"Authorization": f"Bearer {KEY}"}
        async with session.get(f"{base}/json", params={"api_key": KEY}, headers=secret) as resp:
            out["secret"] = seen(resp, await resp.read())
        out["sse"], out["sse-early"] = await sse(session, llm)
    return out


async def sse(session: aiohttp.ClientSession, llm: str) -> tuple[Seen, bool]:
    """A chat completion streamed as server-sent events, read line by line; whether the
    first event came before the stream had ended."""
    headers = {"Authorization": f"Bearer {KEY}", "Accept": "text/event-stream"}
    url = f"{llm}/v1/chat/completions"
    async with session.post(url, json={**ASK, "stream": True}, headers=headers) as resp:
        lines, early = [], None
        async for line in resp.content:
            lines.append(line)
            if early is None and line.startswith(b"data:"):
                early = not resp.content.at_eof()
        return seen(resp, b"".join(lines)), bool(early)


async def common(send: Callable[..., Awaitable[Any]], base: str, llm: str) -> None:
    """The same requests, through any client (``send(method, url, **options)``)."""
    await send("GET", f"{base}/get", params={**PARAMS, "api_key": KEY})
    await send("POST", f"{base}/post", json={"q": "weather", "n": [1, 2.5]})
    await send("POST", f"{base}/post", data={"city": "Paris", "units": "metric"})
    await send("GET", f"{base}/gzip")
    await send("GET", f"{base}/redirect/2")
    await send("GET", f"{base}/status/404")
    await send("POST", f"{llm}/v1/chat/completions", json={**ASK, "stream": True})


async def through_aiohttp(base: str, llm: str) -> None:
    async with aiohttp.ClientSession() as session:

        async def send(method: str, url: str, **options: Any) -> None:
            async with session.request(method, url, **options) as resp:
                await resp.read()

        await common(send, base, llm)


async def through_transport(deck: fd.Deck, base: str, llm: str) -> None:
    transport = fd.http.AsyncTransport(deck, httpx=httpx2)
    async with httpx2.AsyncClient(transport=transport, follow_redirects=True) as client:

        async def send(method: str, url: str, **options: Any) -> None:
            await client.request(method, url, **options)

        await common(send, base, llm)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    """Everything recorded against one httpbin and one fake upstream, both stopped before
    any replay."""
    folder = tmp_path_factory.mktemp("aiohttp")
    cassette = folder / "program.jsonl"
    with httpbin() as base, Upstream(stream_delay=0.05) as upstream:
        llm = upstream.url
        plain = asyncio.run(program(base, upstream.url, Connections()))
        with fd.Deck(cassette, mode="record") as deck, fd.intercept(deck):
            live = asyncio.run(program(base, upstream.url, Connections()))
        with fd.Deck(folder / "routed.jsonl", mode="record") as routed, fd.intercept(routed):
            asyncio.run(through_aiohttp(base, upstream.url))
        with fd.Deck(folder / "wired.jsonl", mode="record") as wired:
            asyncio.run(through_transport(wired, base, upstream.url))
    return SimpleNamespace(
        base=base,
        llm=llm,
        cassette=cassette,
        calls=deck.calls,
        plain=plain,
        live=live,
        routed=routed.calls,
        wired=wired.calls,
        folder=folder,
    )


def test_the_program_gets_what_a_plain_session_gets(recorded: SimpleNamespace) -> None:
    plain, live = recorded.plain, recorded.live
    for name in ("params", "json", "form", "gzip", "redirect", "404", "repeated", "secret"):
        assert live[name] == plain[name], name
    assert live["params-json"]["args"] == PARAMS
    assert json.loads(live["json"].body)["json"] == {"q": "weather", "n": [1, 2.5]}
    assert json.loads(live["form"].body)["form"] == {"city": "Paris"}
    assert json.loads(live["gzip"].body)["gzipped"] is True
    assert ("content-encoding", "gzip") in live["gzip"].headers
    assert [status for status, _ in live["redirect"].history] == [302, 302]
    assert live["404-raised"] == 404
    assert live["repeated-all"] == plain["repeated-all"] == ["1", "2"]
    # The events came one by one as the upstream sent them, not once the stream had ended.
    assert live["sse-early"] is True
    assert live["sse"].body.count(b"data: ") == plain["sse"].body.count(b"data: ") > 2
    assert live["sse"].body.endswith(b"data: [DONE]\n\n")


def test_each_hop_is_a_call_and_streams_are_recorded_event_by_event(
    recorded: SimpleNamespace,
) -> None:
    names = [c.name for c in recorded.calls]
    assert names[:9] == [
        "GET /get",
        "POST /post",
        "POST /post",
        "GET /gzip",
        "GET /redirect/2",
        "GET /relative-redirect/1",
        "GET /get",
        "GET /status/404",
        "GET /response-headers",
    ]
    assert [c.streamed for c in recorded.calls][-1] is True
    stream = fd.load(recorded.cassette).entries[-1]
    assert stream.result == "stream"
    assert sum(1 for e in stream.value["events"] if e.get("data") != "[DONE]") > 2


def test_replay_with_the_servers_stopped_gives_the_program_the_same_answers(
    recorded: SimpleNamespace,
) -> None:
    traced = Connections()
    with fd.Deck(recorded.cassette, mode="replay") as deck, fd.intercept(deck):
        replay = asyncio.run(program(recorded.base, recorded.llm, traced))
    assert traced.opened == 0
    report = deck.report()
    assert (report.live, report.misses, report.unused) == (0, (), ())
    for name, want in recorded.live.items():
        if isinstance(want, Seen):
            got = replay[name]
            assert (got.status, got.headers, got.history, got.meaning()) == (
                want.status,
                want.headers,
                want.history,
                want.meaning(),
            ), name
            # A recording keeps no reason phrase: the status's own is given.
            assert got.reason == HTTPStatus(got.status).phrase, name
        else:
            assert replay[name] == want, name


def test_the_calls_are_the_ones_the_explicit_transport_makes(recorded: SimpleNamespace) -> None:
    def calls(of: tuple[Any, ...]) -> list[tuple[str, str, str]]:
        return [(c.kind, c.name, c.key) for c in of]

    assert calls(recorded.routed) == calls(recorded.wired)
    assert len(recorded.routed) == 9  # the redirect's three hops are three calls


def test_no_credential_reaches_the_cassette(recorded: SimpleNamespace) -> None:
    for cassette in recorded.folder.glob("*.jsonl"):
        raw = cassette.read_bytes()
        assert KEY.encode() not in raw, cassette.name
        assert b"Bearer" not in raw, cassette.name


def test_a_fault_reaches_the_program_as_aiohttp_s_own(recorded: SimpleNamespace) -> None:
    base = recorded.base

    async def get(url: str, **options: Any) -> tuple[int, bytes]:
        async with aiohttp.ClientSession() as session, session.get(url, **options) as resp:
            return resp.status, await resp.read()

    plans: list[tuple[fd.Fault, type[BaseException] | int]] = [
        (fd.faults.transient(503).at(seq=1), 503),
        (fd.faults.quota(retry_after=2).at(seq=1), 429),
        (fd.faults.timeout().at(seq=1), aiohttp.ServerTimeoutError),
    ]
    for fault, outcome in plans:
        with fd.Deck(recorded.cassette, mode="replay", faults=[fault]) as deck:
            with fd.intercept(deck):
                if isinstance(outcome, int):
                    status, _ = asyncio.run(get(f"{base}/get", params=PARAMS))
                    assert status == outcome
                else:
                    with pytest.raises(outcome) as raised:
                        asyncio.run(get(f"{base}/get", params=PARAMS))
                    assert isinstance(raised.value, asyncio.TimeoutError)
    with fd.Deck(recorded.cassette, faults=[fd.faults.reset().at(seq=2)]) as deck:
        with fd.intercept(deck):

            async def two() -> None:
                async with aiohttp.ClientSession() as session:
                    await (await session.get(f"{base}/get", params=PARAMS)).read()
                    await session.post(f"{base}/post", json={"q": "weather", "n": [1, 2.5]})

            with pytest.raises(aiohttp.ClientOSError) as reset:
                asyncio.run(two())
    assert isinstance(reset.value, aiohttp.ClientConnectionError)
    assert [c.error for c in deck.calls] == [None, "ReadError"]


def test_a_session_that_does_not_decompress_gets_the_encoded_bytes_again(
    tmp_path: Path,
) -> None:
    async def raw(url: str) -> bytes:
        async with aiohttp.ClientSession(auto_decompress=False) as session:
            async with session.get(url) as resp:
                return await resp.read()

    with httpbin() as base:
        with fd.Deck(tmp_path / "raw.jsonl", mode="record") as deck, fd.intercept(deck):
            live = asyncio.run(raw(f"{base}/gzip"))
    with fd.Deck(tmp_path / "raw.jsonl") as deck, fd.intercept(deck):
        replayed = asyncio.run(raw(f"{base}/gzip"))
    assert json.loads(gzip.decompress(replayed)) == json.loads(gzip.decompress(live))


def test_nothing_stays_patched_after_the_block(tmp_path: Path) -> None:
    before = vars(aiohttp.ClientSession)["_request"]
    with fd.Deck(tmp_path / "none.jsonl", mode="record") as deck, fd.intercept(deck):
        assert aiohttp.ClientSession._request is not before
    assert vars(aiohttp.ClientSession)["_request"] is before


def test_a_stream_cut_reaches_the_reader_as_aiohttp_s_payload_error(
    recorded: SimpleNamespace,
) -> None:
    async def read() -> tuple[Seen, bool]:
        async with aiohttp.ClientSession() as session:
            return await sse(session, recorded.llm)

    cut = fd.faults.stream_cut(after=2).on(kind="model")
    with fd.Deck(recorded.cassette, faults=[cut]) as deck, fd.intercept(deck):
        with pytest.raises(aiohttp.ClientPayloadError, match="payload is not completed"):
            asyncio.run(read())
    assert deck.calls[0].error == "RemoteProtocolError"
    assert deck.calls[0].partial


def test_a_reset_get_is_retried_by_aiohttp_itself_each_try_a_call(
    recorded: SimpleNamespace,
) -> None:
    async def get() -> int:
        async with aiohttp.ClientSession() as session:
            async with session.get(f"{recorded.base}/get", params=PARAMS) as resp:
                return resp.status

    reset = fd.faults.reset().at(seq=1)
    with fd.Deck(recorded.cassette, faults=[reset], repeats="last") as deck, fd.intercept(deck):
        assert asyncio.run(get()) == 200
    assert [(c.name, c.error) for c in deck.calls] == [
        ("GET /get", "ReadError"),
        ("GET /get", None),
    ]


def test_aiohttp_imported_inside_the_block_is_routed_when_it_is_imported(tmp_path: Path) -> None:
    with Upstream() as upstream:
        program = f"""
import asyncio, sys
import faultdeck as fd
with fd.Deck({str(tmp_path / "late.jsonl")!r}, mode="record") as deck, fd.intercept(deck):
    eager = "aiohttp" in sys.modules
    import aiohttp

    async def models():
        async with aiohttp.ClientSession() as session:
            async with session.get({upstream.url + "/v1/models"!r}) as resp:
                return resp.status

    status = asyncio.run(models())
print(eager, status, [c.name for c in deck.calls])
"""
        done = run([sys.executable, "-c", program], env=child_env())
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().split(maxsplit=2) == ["False", "200", "['GET /v1/models']"]
