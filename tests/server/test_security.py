"""What the server refuses, and what it holds up under: no token off loopback, the token
on every route, names that lead outside the cassettes folder, bad fault headers, bodies
over the limit, an unreachable upstream, and concurrent clients."""

from __future__ import annotations

import asyncio
import http.client
import json
import os
import socket
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route
from starlette.testclient import TestClient

import faultdeck as fd
from faultdeck._cassette.reader import load
from faultdeck.server._config import ServerConfig
from faultdeck.server._proxy import Decks
from faultdeck.server.app import make_app
from tests.support.children import child_env
from tests.support.fake_upstream import Upstream

from .serving import serve_command, served

pytestmark = pytest.mark.anyio

TOKEN = "s3cret-token-for-the-tests"
CHAT = {"model": "gpt-fake", "messages": [{"role": "user", "content": "Weather in Paris?"}]}


def dead_url() -> str:
    """A loopback URL nothing listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


async def one_line_error(response: httpx.Response, status: int) -> str:
    assert response.status_code == status
    assert "\n" not in response.text
    message: str = response.json()["error"]["message"]
    return message


def client_of(app: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://fd")


# -- off loopback -----------------------------------------------------------------------


@pytest.mark.parametrize("host", ["0.0.0.0", "10.1.2.3", "::"])
def test_off_loopback_without_a_token_refuses_to_start(host: str, tmp_path: Path) -> None:
    env = child_env()
    env.pop("FAULTDECK_TOKEN", None)
    ran = subprocess.run(
        serve_command("--host", host, "--cassettes", str(tmp_path)),
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert ran.returncode == 2
    assert ran.stdout == ""
    lines = ran.stderr.splitlines()
    assert len(lines) == 1
    assert f"--host {host}" in lines[0]
    assert "--token" in lines[0]


# -- the token --------------------------------------------------------------------------


async def page(request: Request) -> Response:
    return PlainTextResponse("a page")


@pytest.fixture
async def guarded(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    config = ServerConfig(cassettes=tmp_path, token=TOKEN)
    app = make_app(config, extra_routes=[Route("/ui/runs", page)])
    async with client_of(app) as client:
        yield client


async def test_with_a_token_every_route_asks_for_it(guarded: httpx.AsyncClient) -> None:
    message = await one_line_error(await guarded.get("/api/health"), 401)
    assert "missing" in message
    wrong = {"X-Faultdeck-Token": "not-it"}
    assert "wrong" in await one_line_error(await guarded.get("/api/health", headers=wrong), 401)
    # The provider's Authorization header is never the server's token.
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    await one_line_error(await guarded.get("/api/health", headers=bearer), 401)
    await one_line_error(await guarded.get("/c/run/v1/models", headers=bearer), 401)
    right = await guarded.get("/api/health", headers={"X-Faultdeck-Token": TOKEN})
    assert right.status_code == 200
    assert right.json()["ok"] is True


async def test_a_page_takes_the_token_once_then_its_cookie(guarded: httpx.AsyncClient) -> None:
    await one_line_error(await guarded.get("/ui/runs"), 401)
    first = await guarded.get("/ui/runs", params={"token": TOKEN})
    assert first.status_code == 200
    cookie = first.headers["set-cookie"]
    assert "HttpOnly" in cookie
    assert "SameSite=Strict" in cookie
    assert guarded.cookies.get("faultdeck_token") == TOKEN
    assert (await guarded.get("/ui/runs")).status_code == 200
    guarded.cookies.clear()
    await one_line_error(await guarded.get("/ui/runs", params={"token": "nope"}), 401)
    # The query is for pages only; the API takes the header.
    await one_line_error(await guarded.get("/api/health", params={"token": TOKEN}), 401)


def test_the_token_comes_from_the_environment_by_default(tmp_path: Path) -> None:
    with served(tmp_path, "--cassettes", str(tmp_path), FAULTDECK_TOKEN=TOKEN) as server:
        health = f"{server.url}/api/health"
        assert httpx.get(health).status_code == 401
        assert httpx.get(health, headers={"X-Faultdeck-Token": "not-it"}).status_code == 401
        assert httpx.get(health, headers={"X-Faultdeck-Token": TOKEN}).json()["ok"] is True


# -- names that lead outside the folder ---------------------------------------------------

ESCAPES = [
    "../outside/target",
    "%2e%2e/outside/target",
    "%2E%2E%2Foutside%2Ftarget",
    "..%2f..%2foutside/target",
    "ok/../../outside/target",
    "ok/%2e%2e/%2e%2e/outside/target",
    "%252e%252e/outside/target",
    "%2Ftmp%2Fabsolute",
    "//etc/passwd",
    "x%00y",
    "a%5c..%5c..%5coutside%5ctarget",
    "a\\..\\outside",
    "evil",
    "linked/target",
    ".hidden",
    "ok/.git",
    "a.",
    "~",
    "a//b",
    "%20",
    "a%0d%0aSet-Cookie:%20x=1",
    "-rf",
    "x" * 600,
    "ok/" + "y" * 200,
]


def raw_get(url: str, path: str) -> int:
    """A GET with ``path`` sent exactly as written (no client normalizes it)."""
    where = urlsplit(url)
    conn = http.client.HTTPConnection(where.hostname or "", where.port, timeout=30)
    try:
        conn.putrequest("GET", path, skip_accept_encoding=True)
        conn.endheaders()
        response = conn.getresponse()
        response.read()
        return response.status
    finally:
        conn.close()


def tree(root: Path) -> dict[str, tuple[int, float]]:
    return {
        str(p.relative_to(root)): (p.lstat().st_size, p.lstat().st_mtime)
        for p in sorted(root.rglob("*"))
    }


def test_no_name_leads_outside_the_cassettes_folder(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    with Upstream() as upstream, fd.Deck(outside / "target.jsonl", mode="record") as deck:
        with httpx.Client(transport=fd.http.Transport(deck, httpx=httpx)) as client:
            assert client.get(f"{upstream.url}/v1/models").status_code == 200
    cassettes = tmp_path / "cassettes"
    cassettes.mkdir()
    (cassettes / "evil.jsonl").symlink_to(outside / "target.jsonl")
    (cassettes / "linked").symlink_to(outside)
    before = tree(tmp_path)
    # append answers what a cassette holds and records the rest: a name that escaped would
    # be read (a 200) or written (a file outside); the upstream is down, so nothing else is.
    with served(
        tmp_path,
        "--cassettes",
        str(cassettes),
        "--mode",
        "append",
        "--upstream",
        dead_url(),
    ) as server:
        statuses = {name: raw_get(server.url, f"/c/{name}/v1/models") for name in ESCAPES}
        assert raw_get(server.url, "/c/v1/models") == 404  # no name at all
        assert raw_get(server.url, "/c/fine/v1/models") == 502  # a good name goes live
    assert {n: s for n, s in statuses.items() if s not in (400, 404)} == {}
    assert len(ESCAPES) >= 15
    after = tree(tmp_path)
    created = sorted(set(after) - set(before))
    assert [n for n in created if not n.startswith(("serve-", "cassettes/fine."))] == []
    assert {k: v for k, v in before.items() if k.startswith("outside")} == {
        k: v for k, v in after.items() if k.startswith("outside")
    }


# -- bad requests -------------------------------------------------------------------------


@pytest.fixture
async def replaying(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    app = make_app(ServerConfig(cassettes=tmp_path, max_body=1024))
    async with client_of(app) as client:
        yield client
    await app.state.decks.close()


@pytest.mark.parametrize(
    "header",
    [
        "not json",
        '["quota"]',
        '{"retry_after": 2}',
        '{"fault": "quotaa"}',
        '{"fault": "quota", "retry_after": "soon"}',
        '{"fault": "quota", "at": 3}',
        '{"fault": "timeout", "colour": "red"}',
    ],
)
async def test_a_bad_fault_header_is_a_400(replaying: httpx.AsyncClient, header: str) -> None:
    response = await replaying.get("/c/run/v1/models", headers={"X-Faultdeck-Fault": header})
    assert "X-Faultdeck-Fault" in await one_line_error(response, 400)


async def test_a_body_over_the_limit_is_a_413(replaying: httpx.AsyncClient) -> None:
    big = b"x" * 2048
    await one_line_error(await replaying.post("/c/run/v1/chat/completions", content=big), 413)

    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(4):
            yield b"y" * 512

    streamed = await replaying.post("/c/run/v1/chat/completions", content=chunks())
    await one_line_error(streamed, 413)


async def test_unknown_routes_and_missing_cassettes_are_json_404s(
    replaying: httpx.AsyncClient, tmp_path: Path
) -> None:
    assert "/nowhere" in await one_line_error(await replaying.get("/nowhere"), 404)
    assert "/v1/" in await one_line_error(await replaying.get("/c/run/models"), 404)
    missing = await replaying.get("/c/never/recorded/v1/models")
    assert missing.json()["error"]["type"] == "faultdeck_cassette_not_found"
    await one_line_error(missing, 404)
    assert list(tmp_path.iterdir()) == []


async def test_an_unreachable_upstream_is_a_502_and_nothing_is_written(tmp_path: Path) -> None:
    app = make_app(ServerConfig(cassettes=tmp_path, mode="record", upstream=dead_url()))
    async with client_of(app) as client:
        response = await client.post("/c/down/v1/chat/completions", json=CHAT)
    decks: Decks = app.state.decks
    await decks.close()
    message = await one_line_error(response, 502)
    assert "127.0.0.1" in message
    assert list(tmp_path.iterdir()) == []  # the cassette it opened held nothing: taken back


async def test_a_recording_that_got_answers_is_kept_beside_one_that_got_none(
    tmp_path: Path,
) -> None:
    up = tmp_path / "up.jsonl"
    with fd.Deck(up, mode="record") as deck:
        deck.call("tool", "t", {}, lambda: 1)
    before = up.read_bytes()
    app = make_app(ServerConfig(cassettes=tmp_path, mode="record", upstream=dead_url()))
    async with client_of(app) as client:
        for name in ("team/a/down", "up"):
            answer = await client.post(f"/c/{name}/v1/chat/completions", json=CHAT)
            assert answer.status_code == 502
    await app.state.decks.close()
    # A cassette that was there before is never removed, nor a folder that was there.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["up.jsonl"]
    assert up.read_bytes() == before


# -- under load ---------------------------------------------------------------------------

CLIENTS = 8
RECORDED = 400
ROUNDS = 3
"""How many times the replay asks for each recorded path."""


async def hammer(url: str, paths: list[str]) -> list[tuple[str, int, Any]]:
    """``paths`` fetched by ``CLIENTS`` concurrent clients; (path, status, body) each."""
    queue: asyncio.Queue[str] = asyncio.Queue()
    for path in paths:
        queue.put_nowait(path)
    seen: list[tuple[str, int, Any]] = []

    async def worker() -> None:
        async with httpx.AsyncClient(base_url=url, timeout=60) as client:
            while not queue.empty():
                path = queue.get_nowait()
                response = await client.get(path)
                seen.append((path, response.status_code, response.json()))

    await asyncio.gather(*(worker() for _ in range(CLIENTS)))
    return seen


def test_concurrent_clients_record_every_line_then_replay_without_a_5xx(tmp_path: Path) -> None:
    cassettes = tmp_path / "cassettes"
    paths = [f"/c/load/v1/models?i={i}" for i in range(RECORDED)]
    with Upstream() as upstream:
        args = ("--cassettes", str(cassettes), "--mode", "record", "--upstream", upstream.url)
        with served(tmp_path, *args) as server:
            recorded = asyncio.run(hammer(server.url, paths))
            assert server.stop() == 0
    assert sorted(status for _, status, _ in recorded) == [200] * RECORDED
    lines = (cassettes / "load.jsonl").read_text().splitlines()
    parsed = [json.loads(line) for line in lines]  # a torn line would not parse
    entries = load(cassettes / "load.jsonl").entries
    assert len(entries) == RECORDED == len(parsed) - 2  # the header and the end line
    assert sorted(e.seq for e in entries) == list(range(1, RECORDED + 1))
    asked = sorted(int(dict(e.args["query"])["i"]) for e in entries)
    assert asked == list(range(RECORDED))

    # Three rounds over the recording, strict: each answer is handed out once, every repeat
    # (a miss after an answer, and a miss after a miss) is a clean miss, nothing is a 5xx.
    with served(tmp_path, "--cassettes", str(cassettes), "--repeats", "strict") as server:
        replayed = asyncio.run(hammer(server.url, paths * ROUNDS))
    assert len(replayed) == ROUNDS * RECORDED
    assert [s for _, s, _ in replayed if s >= 500] == []
    answered = sorted(path for path, status, _ in replayed if status == 200)
    assert answered == sorted(paths)
    misses = [body for _, status, body in replayed if status == 404]
    assert len(misses) == (ROUNDS - 1) * RECORDED
    assert {m["error"]["type"] for m in misses} == {"faultdeck_replay_miss"}
    assert os.path.exists(cassettes / "load.jsonl")

    # Cycling (the default), every round is answered: each path its one answer, each time.
    with served(tmp_path, "--cassettes", str(cassettes)) as server:
        cycled = asyncio.run(hammer(server.url, paths * ROUNDS))
    assert sorted(path for path, status, _ in cycled if status == 200) == sorted(paths * ROUNDS)


def test_a_body_that_says_json_and_is_not_is_a_400_before_any_lookup(tmp_path: Path) -> None:
    for config in (
        ServerConfig(cassettes=tmp_path),
        ServerConfig(cassettes=tmp_path, mode="record", upstream=dead_url()),
    ):
        with TestClient(make_app(config)) as client:
            answer = client.post(
                "/c/agent/v1/chat/completions",
                content=b'{"model": "m", "messages": [',
                headers={"content-type": "application/json"},
            )
        assert answer.status_code == 400
        error = answer.json()["error"]
        assert error["type"] == "faultdeck_bad_request"
        assert error["message"].startswith("the request body is not JSON")
        assert "\n" not in error["message"]
    assert list(tmp_path.iterdir()) == []


def test_the_listening_socket_is_tcp_so_each_connection_gets_nodelay() -> None:
    # asyncio sets TCP_NODELAY on accepted sockets only when the listener says IPPROTO_TCP;
    # without it every keep-alive request after the first waits on a delayed ACK.
    from faultdeck.cli.serve import bind as _bind

    sock = _bind("127.0.0.1", 0)
    try:
        assert sock.proto == socket.IPPROTO_TCP
    finally:
        sock.close()
