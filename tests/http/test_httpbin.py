"""httpbin (from PyPI, served by waitress on 127.0.0.1) recorded through faultdeck's
transport and replayed with the server stopped, through httpx and httpx2, sync and async.

Each request's replayed answer is compared with what a plain client got from the live
server, and with what the recording client got live: status, headers (all but the
hop-by-hop ones, ``date`` and ``content-length``), redirect history, cookies, and the body
(bytes; JSON by meaning). No credential sent reaches the cassette.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import httpx2
import orjson
import pytest

import faultdeck as fd
from faultdeck.http import AsyncTransport, Transport

from ..support.httpbin import httpbin
from ..support.sdk import NetworkGuard

VOLATILE = frozenset({"date", "connection", "keep-alive", "transfer-encoding", "content-length"})
PASSWORD = "Zq8-" + "".join(random.Random(7).choices("abcdefghjkmnpqrstuvwxyz23456789", k=28))
UPLOAD = random.Random(5).randbytes(5 * 1024 * 1024)
FILE = bytes(range(256)) * 40
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@dataclass(frozen=True)
class Ask:
    """One request of the scenario."""

    name: str
    method: str
    path: str
    options: dict[str, Any]


def scenario() -> list[Ask]:
    def ask(name: str, method: str, path: str, **options: Any) -> Ask:
        return Ask(name, method, path, options)

    return [
        ask("gzip", "GET", "/gzip"),
        ask("deflate", "GET", "/deflate"),
        ask("brotli", "GET", "/brotli"),
        ask("bytes", "GET", "/bytes/4096?seed=3"),
        ask("png", "GET", "/image/png"),
        ask("utf8", "GET", "/encoding/utf8"),
        ask("stream", "GET", "/stream/5"),
        ask("drip", "GET", "/drip?numbytes=4&duration=0.3&delay=0"),
        ask("redirects", "GET", "/redirect/3", follow_redirects=True),
        ask("204", "GET", "/status/204"),
        ask("304", "GET", "/status/304"),
        ask("418", "GET", "/status/418"),
        ask("500", "GET", "/status/500"),
        ask("headers", "GET", "/headers", headers={"X-Probe": "one"}),
        ask("basic-auth", "GET", f"/basic-auth/agent/{PASSWORD}", auth=("agent", PASSWORD)),
        ask(
            "response-headers",
            "GET",
            "/response-headers?ETag=abc123&Link=%3C%2Fpage2%3E%3B%20rel%3D%22next%22"
            "&X-Shard=7&Content-Disposition=attachment%3B%20filename%3D%22r.csv%22",
        ),
        ask("json", "POST", "/post", json={"q": "weather", "n": [1, 2.5, None]}),
        ask("form", "POST", "/post", data={"city": "Paris", "units": "metric"}),
        ask(
            "multipart",
            "POST",
            "/post",
            data={"note": "two parts"},
            files={"upload": ("data.bin", FILE, "application/octet-stream")},
        ),
        ask(
            "upload",
            "POST",
            "/anything",
            content=UPLOAD,
            headers={"Content-Type": "application/octet-stream"},
        ),
        ask("head", "HEAD", "/get"),
        ask("options", "OPTIONS", "/get"),
        ask("unicode-query", "GET", "/get", params={"q": "héllo wörld ✓"}),
        # Last: from here on the client sends its cookies, and a credential field (an
        # echoed ``Cookie`` header) is never stored.
        ask("cookies", "GET", "/cookies/set?freeform=yes&flavour=oat", follow_redirects=True),
    ]


@dataclass
class Seen:
    """What a client saw of one request."""

    status: int
    headers: dict[str, list[str]]
    history: list[tuple[int, str]]
    body: bytes
    content_type: str
    length: str | None
    chunks: int

    def meaning(self) -> Any:
        if "json" in self.content_type and self.body:
            try:
                return orjson.loads(self.body)
            except orjson.JSONDecodeError:  # /stream's lines under application/json
                pass
        return self.body


def seen(response: Any, pieces: list[bytes]) -> Seen:
    headers: dict[str, list[str]] = {}
    for name, value in response.headers.multi_items():
        if name.lower() not in VOLATILE:
            headers.setdefault(name.lower(), []).append(value)
    return Seen(
        response.status_code,
        headers,
        [(r.status_code, str(r.url)) for r in response.history],
        b"".join(pieces),
        response.headers.get("content-type", ""),
        response.headers.get("content-length"),
        len(pieces),
    )


def sync_run(client: Any, base: str) -> tuple[dict[str, Seen], dict[str, str]]:
    out = {}
    for ask in scenario():
        with client.stream(ask.method, base + ask.path, **ask.options) as response:
            out[ask.name] = seen(response, [p for p in response.iter_bytes() if p])
    return out, dict(client.cookies)


async def async_run(client: Any, base: str) -> tuple[dict[str, Seen], dict[str, str]]:
    out = {}
    for ask in scenario():
        async with client.stream(ask.method, base + ask.path, **ask.options) as response:
            out[ask.name] = seen(response, [p async for p in response.aiter_bytes() if p])
    return out, dict(client.cookies)


VARIANTS = [(httpx, False), (httpx, True), (httpx2, False), (httpx2, True)]
IDS = ["httpx-sync", "httpx-async", "httpx2-sync", "httpx2-async"]


def drive(module: Any, asynchronous: bool, base: str, transport: Any) -> Any:
    if asynchronous:

        async def go() -> Any:
            async with module.AsyncClient(transport=transport) as client:
                return await async_run(client, base)

        return asyncio.run(go())
    with module.Client(transport=transport) as client:
        return sync_run(client, base)


@dataclass
class Recorded:
    base: str
    plain: dict[str, tuple[dict[str, Seen], dict[str, str]]]
    live: dict[tuple[str, bool], tuple[dict[str, Seen], dict[str, str]]]
    cassettes: dict[tuple[str, bool], Path]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    """Every variant recorded against one httpbin, which is stopped before any replay."""
    folder = tmp_path_factory.mktemp("httpbin")
    live, cassettes, plain = {}, {}, {}
    with httpbin() as base:
        for module in (httpx, httpx2):
            with module.Client() as plain_client:
                plain[module.__name__] = sync_run(plain_client, base)
        for module, asynchronous in VARIANTS:
            path = folder / f"{module.__name__}-{asynchronous}.jsonl"
            with fd.Deck(path, mode="record") as deck:
                make = AsyncTransport if asynchronous else Transport
                transport = make(deck, httpx=module)
                live[module.__name__, asynchronous] = drive(module, asynchronous, base, transport)
            cassettes[module.__name__, asynchronous] = path
    with pytest.raises(httpx.TransportError):  # the server is gone
        httpx.get(f"{base}/get", timeout=2)
    return Recorded(base, plain, live, cassettes)


def assert_same(got: Seen, want: Seen, name: str) -> None:
    assert got.status == want.status, name
    assert got.headers == want.headers, name
    assert got.history == want.history, name
    assert got.meaning() == want.meaning(), name


@pytest.mark.parametrize(("module", "asynchronous"), VARIANTS, ids=IDS)
def test_replay_with_the_server_stopped_answers_as_the_live_server_did(
    recorded: Recorded, module: Any, asynchronous: bool
) -> None:
    key = (module.__name__, asynchronous)
    plain, plain_cookies = recorded.plain[module.__name__]
    live, live_cookies = recorded.live[key]
    guard = NetworkGuard()
    with fd.Deck(recorded.cassettes[key], mode="replay") as deck:
        make = AsyncTransport if asynchronous else Transport
        replay, cookies = drive(
            module, asynchronous, recorded.base, make(deck, httpx=module, transport=guard)
        )
    assert guard.calls == 0
    assert set(replay) == set(plain)
    for name, want in plain.items():
        # The recording client got the world's answer, as a plain client did (but for the
        # random boundary a multipart upload's echo shows), and the replay gives it again.
        if name != "multipart":
            assert_same(live[name], want, f"live {name}")
        assert_same(replay[name], live[name], f"replayed {name}")
    assert cookies == live_cookies == plain_cookies == {"freeform": "yes", "flavour": "oat"}


@pytest.mark.parametrize(("module", "asynchronous"), VARIANTS, ids=IDS)
def test_bytes_come_back_byte_for_byte(recorded: Recorded, module: Any, asynchronous: bool) -> None:
    key = (module.__name__, asynchronous)
    plain, _ = recorded.plain[module.__name__]
    live, _ = recorded.live[key]
    with fd.Deck(recorded.cassettes[key], mode="replay") as deck:
        make = AsyncTransport if asynchronous else Transport
        replay, _ = drive(
            module, asynchronous, recorded.base, make(deck, httpx=module, transport=NetworkGuard())
        )
    for name in ("bytes", "png", "utf8", "stream", "drip"):
        assert live[name].body == plain[name].body, name
        assert replay[name].body == plain[name].body, name
    assert replay["drip"].chunks == live["drip"].chunks > 1  # chunk by chunk, as recorded
    assert plain["png"].body.startswith(PNG_MAGIC)
    assert len(replay["png"].body) == len(plain["png"].body)
    # The upload was sent as its bytes, echoed back by httpbin as base64 in JSON.
    echoed = replay["upload"].meaning()["data"]
    assert (
        hashlib.sha256(echoed.encode()).digest()
        == hashlib.sha256(plain["upload"].meaning()["data"].encode()).digest()
    )


def test_the_cassette_holds_binary_bodies_losslessly_and_no_credential(recorded: Recorded) -> None:
    path = recorded.cassettes["httpx", False]
    data = path.read_bytes()
    assert PASSWORD.encode() not in data
    assert b"Basic " not in data
    calls = [orjson.loads(line) for line in data.splitlines() if b'"seq"' in line]
    by_path = {c["args"]["path"]: c for c in calls}
    png = by_path["/image/png"]["out"]
    assert png["binary"]["encoding"] == "base64"
    assert png["binary"]["size"] == len(recorded.plain["httpx"][0]["png"].body)
    assert len(png["body"]) <= 1.4 * png["binary"]["size"]  # at most 1.4x its size on disk
    assert png["headers"]["content-type"] == "image/png"
    assert "date" not in png["headers"]
    assert "content-length" not in png["headers"]
    # A binary body costs at most 1.4 times its size on disk.
    upload_line = next(line for line in data.splitlines() if b'"/anything"' in line)
    assert len(upload_line) < 1.4 * 2 * len(UPLOAD)  # httpbin echoes it as base64 in JSON
    # Readable bodies stay readable.
    assert by_path["/encoding/utf8"]["out"]["body"].startswith("<h1>Unicode Demo</h1>")
    # Forms by meaning: pairs and parts, never the random boundary.
    posts = [c for c in calls if c["args"]["path"] == "/post"]
    assert {"form": [["city", "Paris"], ["units", "metric"]]}.items() <= posts[1]["args"].items()
    parts = posts[2]["args"]["multipart"]
    assert parts[0] == {"name": "note", "value": "two parts"}
    assert parts[1] == {
        "name": "upload",
        "filename": "data.bin",
        "content_type": "application/octet-stream",
        "size": len(FILE),
        "sha256": hashlib.sha256(FILE).hexdigest(),
    }
    assert b"boundary" not in b"".join(
        orjson.dumps(c["args"]) for c in calls if c["args"]["path"] == "/post"
    )
    # A HEAD answer keeps the Content-Length the server gave it.
    head = next(c for c in calls if c["args"]["method"] == "HEAD")["out"]
    assert head["headers"]["content-length"] == recorded.live["httpx", False][0]["head"].length


def test_a_head_answer_replays_its_recorded_content_length(recorded: Recorded) -> None:
    with fd.Deck(recorded.cassettes["httpx2", False], mode="replay") as deck:
        with httpx2.Client(transport=Transport(deck, httpx=httpx2, transport=NetworkGuard())) as c:
            for ask in scenario()[: [a.name for a in scenario()].index("head")]:
                c.request(ask.method, recorded.base + ask.path, **ask.options)
            head = c.head(recorded.base + "/get")
    assert head.content == b""
    assert (
        head.headers["content-length"] == recorded.live["httpx2", False][0]["head"].length
    )  # not a made-up 0
    assert int(head.headers["content-length"]) > 0


def test_a_drip_reaches_the_client_before_it_ends_and_replays_chunk_by_chunk(
    tmp_path: Path,
) -> None:
    path = tmp_path / "drip.jsonl"
    with httpbin() as base:
        with fd.Deck(path, mode="record") as deck:
            with httpx.Client(transport=Transport(deck)) as client:
                with client.stream("GET", f"{base}/drip?numbytes=3&duration=0.6&delay=0") as r:
                    pieces = r.iter_raw()
                    first = next(pieces)
                    recorded_yet = [c.seq for c in deck.calls]  # the call ends with its body
                    rest = b"".join(pieces)
    assert first
    assert recorded_yet == []
    assert first + rest == b"*" * 3
    line = orjson.loads(path.read_bytes().splitlines()[1])
    chunks = line["out"]["chunks"]
    assert [c["bytes"] for c in chunks] == [1, 1, 1]
    assert chunks[0]["ms"] < chunks[1]["ms"] < chunks[2]["ms"]

    clock = fd.VirtualClock()
    with fd.Deck(path, mode="replay", clock=clock) as deck:
        with httpx.Client(transport=Transport(deck, transport=NetworkGuard())) as client:
            start = clock.now()
            with client.stream("GET", f"{base}/drip?numbytes=3&duration=0.6&delay=0") as r:
                at = []
                for piece in r.iter_raw():
                    at.append((clock.now() - start, piece))
    assert [piece for _, piece in at] == [b"*", b"*", b"*"]
    assert [round(t * 1000, 3) for t, _ in at] == [c["ms"] for c in chunks]


def test_two_different_uploads_never_answer_each_other(tmp_path: Path) -> None:
    path = tmp_path / "uploads.jsonl"
    with httpbin() as base:
        with fd.Deck(path, mode="record") as deck:
            with httpx.Client(transport=Transport(deck)) as client:
                one = client.post(f"{base}/anything", content=b"\xff\xfe\x00").json()["data"]
                two = client.post(f"{base}/anything", content=b"\x80\x81\x00").json()["data"]
    assert one != two
    with fd.Deck(path, mode="replay", repeats="miss") as deck:
        with httpx.Client(transport=Transport(deck, transport=NetworkGuard())) as client:
            # Asked in the other order: each is matched by its bytes.
            assert client.post(f"{base}/anything", content=b"\x80\x81\x00").json()["data"] == two
            assert client.post(f"{base}/anything", content=b"\xff\xfe\x00").json()["data"] == one
        with httpx.Client(transport=Transport(deck, transport=NetworkGuard())) as client:
            with pytest.raises(fd.ReplayMiss):
                client.post(f"{base}/anything", content=b"\x80\x81\x01")


def replay_one(path: Path, url: str) -> None:
    with fd.Deck(path, mode="replay") as deck:
        with httpx.Client(transport=Transport(deck, transport=NetworkGuard())) as client:
            client.get(url)


def test_a_stored_binary_body_that_does_not_decode_is_named(tmp_path: Path) -> None:
    path = tmp_path / "png.jsonl"
    with httpbin() as base:
        with fd.Deck(path, mode="record") as deck:
            with httpx.Client(transport=Transport(deck)) as client:
                client.get(f"{base}/image/png")
    lines = path.read_bytes().splitlines()
    call = orjson.loads(lines[1])
    spoils: dict[str, Callable[[dict[str, Any]], None]] = {
        "size": lambda out: out["binary"].update(size=out["binary"]["size"] + 1),
        "digest": lambda out: out["binary"].update(sha256="0" * 64),
        "base64": lambda out: out.update(body=out["body"][:-3] + "!!"),
    }
    for name, spoil in spoils.items():
        bad = orjson.loads(orjson.dumps(call))
        spoil(bad["out"])
        path.write_bytes(b"\n".join([lines[0], orjson.dumps(bad), *lines[2:]]) + b"\n")
        with pytest.raises(fd.CassetteCorrupt) as caught:
            replay_one(path, f"{base}/image/png")
        message = str(caught.value)
        assert f"{path}:2" in message, name
        assert f"seq {call['seq']}" in message, name
        assert "\n" not in message.strip(), name
