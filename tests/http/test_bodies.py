"""What the HTTP boundary stores of bodies and headers, through a real httpx client against
a local Starlette upstream: readable bodies stay readable, everything else is kept as its
bytes; every answer header is kept but the hop-by-hop ones, credentials masked; secrets
planted in every new place a value travels (a binary body, a cookie, a challenge, a form, a
multipart field) never reach the disk, while the client still gets them live.
"""

from __future__ import annotations

import base64
import random
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

import faultdeck as fd
from faultdeck.http import Transport

from ..support.fake_upstream import Upstream
from ..support.plants import all_plants
from ..support.sdk import NetworkGuard

PLANTS = [p for p in all_plants() if len(p.secret) >= 20 and "\n" not in p.text][:12]
LATIN1 = "Größe: 5 €".encode("cp1252")  # not UTF-8
SESSION = "s3ss10n" + "".join(random.Random(3).choices("abcdefghijklmnop0123456789", k=24))
NEGOTIATE = "YIIC" + "".join(random.Random(4).choices("ABCDEFGHIJKLMNOPabcdefgh0123456789+/", k=60))
BLOB = random.Random(9).randbytes(3000)


async def latin1(request: Request) -> Response:
    return Response(LATIN1, media_type="text/plain; charset=windows-1252")


async def secrets_in_binary(request: Request) -> Response:
    secret = "|".join(p.text for p in PLANTS).encode()
    return Response(BLOB + secret + BLOB, media_type="application/octet-stream")


async def cookies(request: Request) -> Response:
    response = Response(b"{}", media_type="application/json")
    response.set_cookie("theme", "dark")
    response.set_cookie("sessionid", SESSION, httponly=True)
    response.set_cookie("api_token", "short")
    return response


async def challenge(request: Request) -> Response:
    return Response(b"", status_code=401, headers={"WWW-Authenticate": f"Negotiate {NEGOTIATE}"})


async def echo(request: Request) -> Response:
    body = await request.body()
    return Response(orjson.dumps({"size": len(body)}), media_type="application/json")


async def empty(request: Request) -> Response:
    return Response(b"", status_code=204, headers={"X-Empty": "yes"})


def app() -> Starlette:
    return Starlette(
        routes=[
            Route("/latin1", latin1),
            Route("/binary-secrets", secrets_in_binary),
            Route("/cookies", cookies),
            Route("/challenge", challenge),
            Route("/echo", echo, methods=["POST"]),
            Route("/empty", empty),
        ]
    )


def program(client: httpx.Client, base: str) -> list[tuple[int, dict[str, str], bytes]]:
    answers = []
    asks: list[tuple[str, str, dict[str, Any]]] = [
        ("GET", "/latin1", {}),
        ("GET", "/binary-secrets", {}),
        ("GET", "/cookies", {}),
        ("GET", "/challenge", {}),
        ("POST", "/echo", {"data": {"user": "ada", "password": PLANTS[0].text}}),
        (
            "POST",
            "/echo",
            {"data": {"client_secret": PLANTS[1].text}, "files": {"f": ("x.bin", BLOB)}},
        ),
        ("GET", "/empty", {}),
    ]
    for method, path, options in asks:
        response = client.request(method, base + path, **options)
        headers = {k: v for k, v in response.headers.items() if k not in ("date", "content-length")}
        answers.append((response.status_code, headers, response.content))
    return answers


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, list[Any], Any]:
    path = tmp_path_factory.mktemp("bodies") / "bodies.jsonl"
    with Upstream(app=app()) as up, fd.Deck(path, mode="record") as deck:
        base = up.url
        with httpx.Client(transport=Transport(deck)) as client:
            live = program(client, base)
            jar = dict(client.cookies)
    return path, base, live, jar


def calls(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if b'"seq"' in line]


def test_the_client_gets_the_world_live_and_on_replay(
    recorded: tuple[Path, str, list[Any], Any],
) -> None:
    path, base, live, jar = recorded
    assert live[0][2] == LATIN1
    assert SESSION.encode() not in path.read_bytes()
    assert jar["sessionid"] == SESSION  # live, the jar holds the real cookie
    with fd.Deck(path, mode="replay") as deck:
        with httpx.Client(transport=Transport(deck, transport=NetworkGuard())) as client:
            replayed = program(client, base)
            replay_jar = dict(client.cookies)
    masked = [a for a in range(len(live)) if a not in (1, 2, 3)]  # secrets masked on disk
    for index in masked:
        assert replayed[index] == live[index], index
    assert replayed[0][2] == LATIN1  # text in another charset: its bytes
    assert replayed[2][1].keys() == live[2][1].keys()
    assert replay_jar["theme"] == "dark"  # a plain cookie comes back as it was
    assert replay_jar["sessionid"].startswith("redacted-sha256-")  # ASCII: sent back as is
    assert replay_jar["api_token"].startswith("redacted-sha256-")
    # The binary body comes back byte for byte around the masked secrets.
    body = replayed[1][2]
    assert body.startswith(BLOB)
    assert body.endswith(BLOB)
    assert replayed[3][0] == 401
    assert replayed[3][1]["www-authenticate"].startswith("Negotiate «redacted:sha256:")
    assert replayed[6][0] == 204
    assert replayed[6][1]["x-empty"] == "yes"


def test_no_planted_secret_reaches_the_disk(recorded: tuple[Path, str, list[Any], Any]) -> None:
    path, *_ = recorded
    data = path.read_bytes()
    for plant in PLANTS:
        assert plant.secret.encode() not in data, plant.pattern
    assert NEGOTIATE.encode() not in data
    assert SESSION.encode() not in data
    # A secret inside a binary body is masked in its bytes (base64 on disk would hide it
    # from a search of the file: the stored bytes are searched).
    binary = calls(path)[1]["out"]
    stored = base64.b64decode(binary["body"])
    assert binary["binary"]["size"] == len(stored)
    assert stored.startswith(BLOB)
    assert stored.endswith(BLOB)
    for plant in PLANTS:
        assert plant.secret.encode() not in stored, plant.pattern
    assert b"\xabredacted:sha256:" in stored  # the mask, in Latin-1


def test_forms_are_keyed_by_their_pairs_and_parts(
    recorded: tuple[Path, str, list[Any], Any],
) -> None:
    path, *_ = recorded
    lines = calls(path)
    form = lines[4]["args"]
    assert "body" not in form
    assert form["form"][0] == ["user", "ada"]
    assert form["form"][1][0] == "password"
    assert form["form"][1][1].startswith("«redacted:sha256:")
    parts = lines[5]["args"]["multipart"]
    assert parts[0]["name"] == "client_secret"
    assert parts[0]["value"].startswith("«redacted:sha256:")
    assert parts[1]["filename"] == "x.bin"
    assert parts[1]["size"] == len(BLOB)


def test_stored_forms_and_headers(recorded: tuple[Path, str, list[Any], Any]) -> None:
    path, *_ = recorded
    lines = calls(path)
    latin = lines[0]["out"]
    assert latin["binary"]["size"] == len(LATIN1)
    assert latin["headers"]["content-type"] == "text/plain; charset=windows-1252"
    cookies = lines[2]["out"]["headers"]["set-cookie"]
    assert isinstance(cookies, list)
    assert len(cookies) == 3
    assert cookies[0].startswith("theme=dark;")
    assert "date" not in lines[2]["out"]["headers"]
    assert "content-length" not in lines[2]["out"]["headers"]


def test_a_cassette_of_the_older_form_still_replays(tmp_path: Path) -> None:
    path = tmp_path / "old.jsonl"
    header = {"faultdeck": 1, "match": "keyed", "harness": {}, "env": {}}
    with fd.Deck(tmp_path / "probe.jsonl", mode="record") as deck:
        with httpx.Client(transport=Transport(deck, transport=httpx.MockTransport(_old))) as c:
            c.get("http://upstream.test/v1/models")
    key = calls(tmp_path / "probe.jsonl")[0]["key"]
    line = {
        "seq": 1,
        "kind": "http",
        "name": "GET /v1/models",
        "key": key,
        "args": {"method": "GET", "path": "/v1/models"},
        "out": {
            "status": 200,
            "headers": {"content-type": "application/json", "x-request-id": "req_1"},
            "body": {"data": [{"id": "m1"}]},
        },
        "ms": 1.0,
    }
    end = {"end": {"calls": 1, "status": "ok"}}
    path.write_bytes(b"\n".join(orjson.dumps(obj) for obj in (header, line, end)) + b"\n")
    with fd.Deck(path, mode="replay") as deck:
        with httpx.Client(transport=Transport(deck, transport=NetworkGuard())) as client:
            response = client.get("http://upstream.test/v1/models")
    assert response.json() == {"data": [{"id": "m1"}]}
    assert response.headers["x-request-id"] == "req_1"


def _old(request: httpx.Request) -> httpx.Response:
    return httpx.Response(200, json={"data": [{"id": "m1"}]})
