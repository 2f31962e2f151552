"""Recording many decks in one process: the sync transports share one live transport (its
TLS context and its pool), so a recorded test suite pays for them once; the async ones each
have their own pool, on one TLS context, and work across event loops."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import httpx2
import pytest

import faultdeck as fd
from faultdeck.http import AsyncTransport, Transport


class Peers(BaseHTTPRequestHandler):
    """Answers every GET with the port the client connected from, keeping the connection."""

    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        body = str(self.client_address[1]).encode()
        self.send_response(200)
        self.send_header("content-type", "text/plain")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Peers)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=10)


@pytest.mark.parametrize("module", [httpx, httpx2], ids=["httpx", "httpx2"])
def test_decks_recording_one_after_another_share_one_connection(
    server: str, tmp_path: Path, module: object
) -> None:
    ports = []
    for n in range(3):
        path = tmp_path / f"test_{n}.jsonl"
        with fd.Deck(path, mode="record") as deck:
            with module.Client(transport=Transport(deck, httpx=module)) as client:  # type: ignore[attr-defined]
                ports.append(client.get(f"{server}/who").text)
        with fd.Deck(path, mode="replay") as deck:
            with module.Client(transport=Transport(deck, httpx=module)) as client:  # type: ignore[attr-defined]
                assert client.get(f"{server}/who").text == ports[-1]
    # Each deck's client was closed before the next opened: the connection outlived them.
    assert len(set(ports)) == 1, ports


def test_a_transport_given_is_the_one_used(server: str, tmp_path: Path) -> None:
    own = httpx2.HTTPTransport()
    with fd.Deck(tmp_path / "own.jsonl", mode="record") as deck:
        with httpx2.Client(transport=Transport(deck, httpx=httpx2, transport=own)) as client:
            mine = client.get(f"{server}/who").text
    with fd.Deck(tmp_path / "shared.jsonl", mode="record") as deck:
        with httpx2.Client(transport=Transport(deck, httpx=httpx2)) as client:
            shared = client.get(f"{server}/who").text
    assert mine != shared


def test_async_decks_record_in_loops_of_their_own(server: str, tmp_path: Path) -> None:
    async def once(path: Path) -> str:
        with fd.Deck(path, mode="record") as deck:
            async with httpx2.AsyncClient(transport=AsyncTransport(deck, httpx=httpx2)) as c:
                return (await c.get(f"{server}/who")).text

    answers = [asyncio.run(once(tmp_path / f"a_{n}.jsonl")) for n in range(3)]
    assert all(a.isdigit() for a in answers)
    assert [fd.load(tmp_path / f"a_{n}.jsonl").entries[0].name for n in range(3)] == [
        "GET /who"
    ] * 3


def test_the_shared_connections_close_before_python_exits(server: str, tmp_path: Path) -> None:
    program = (
        "import sys, httpx2, faultdeck as fd\n"
        "from faultdeck.http import Transport\n"
        "with fd.Deck(sys.argv[1], mode='record') as deck:\n"
        "    client = httpx2.Client(transport=Transport(deck, httpx=httpx2))\n"
        "    print(client.get(sys.argv[2]).status_code)\n"
    )
    done = subprocess.run(
        [sys.executable, "-W", "always::ResourceWarning", "-c", program,
         str(tmp_path / "exit.jsonl"), f"{server}/who"],
        capture_output=True, text=True, check=True, timeout=60,
    )  # fmt: skip
    assert done.stdout == "200\n"
    assert "unclosed" not in done.stderr, done.stderr
