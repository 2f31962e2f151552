"""The generated pytest suite of the suite rows, and the chat server its live runs reach.

    suite folder   pytest.ini (its own rootdir: nothing of the project around it applies),
                   an empty pyproject.toml (faultdeck's project root), chat.py (the client
                   and the three calls a test makes), test_chat_NN.py (``per_file`` tests
                   each, every test its own function and so its own cassette)
    kinds          faultdeck: the ``deck`` fixture, the client on faultdeck.http.Transport
                   vcr: ``@pytest.mark.vcr`` (pytest-recording and cassetter alike), the
                       client on httpx2's own transport, which they patch, and one TLS
                       context for the session
                   live: no cassette, the client made as vcr's
                   floor: no cassette, the client on httpx2.MockTransport answering from
                       answers.json, the server's bodies for the suite's questions
    server         a ThreadingHTTPServer on 127.0.0.1, in a thread of this process, counting
                   the requests it answers
    peers          a peer's pytest plugin from PyPI, installed with ``pip --target`` into
                   .venv-bench-peers/<package>-<version>/ beside .venv (--no-deps: what it
                   needs besides is in .venv), for a child's PYTHONPATH

Every answer starts with the question it answers, and each test checks that, so an answer
replayed for the wrong request fails the test.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Literal

import orjson

Kind = Literal["faultdeck", "vcr", "live", "floor"]
PEERS = Path(__file__).resolve().parents[1] / ".venv-bench-peers"
PIP_TIMEOUT = 600  # a bound, not a measurement
HEADERS = {"content-type": "application/json", "openai-version": "2020-10-01"}

_CHAT = '''"""What each test does: chat completions through the openai SDK, answers checked."""

import json
from pathlib import Path

import httpx2
import openai

BASE_URL = {base_url!r}
SYSTEM = "You are a careful coding agent. Read before you write; cite the file you read."


def ask(client, *questions):
    for asked in questions:
        reply = client.chat.completions.create(
            model="gpt-4o-mini",
            messages=[
                {{"role": "system", "content": SYSTEM}},
                {{"role": "user", "content": asked}},
            ],
            temperature=0,
        )
        assert reply.choices[0].message.content.startswith(asked), (asked, reply)
'''

_CLIENTS: dict[Kind, str] = {
    "faultdeck": """
from faultdeck.http import Transport


def client(deck):
    transport = Transport(deck, httpx=httpx2)
    http = httpx2.Client(transport=transport)
    return openai.OpenAI(base_url=BASE_URL, api_key="sk-bench", max_retries=0, http_client=http)
""",
    "vcr": """
# One TLS context for the session, as a suite's fixture would make it: httpx2 loads the
# CA bundle for every client made without one (~50 ms), which is not what is measured.
TLS = httpx2.create_ssl_context()


def client():
    http = httpx2.Client(verify=TLS)
    return openai.OpenAI(base_url=BASE_URL, api_key="sk-bench", max_retries=0, http_client=http)
""",
    "floor": """
ANSWERS = json.loads(Path(__file__).with_name("answers.json").read_bytes())
HEADERS = {headers!r}


def _answer(request):
    asked = json.loads(request.content)["messages"][-1]["content"]
    return httpx2.Response(200, headers=HEADERS, content=ANSWERS[asked].encode())


def client():
    http = httpx2.Client(transport=httpx2.MockTransport(_answer))
    return openai.OpenAI(base_url=BASE_URL, api_key="sk-bench", max_retries=0, http_client=http)
""",
}
_CLIENTS["live"] = _CLIENTS["vcr"]

_TEST = (
    "\n\n{mark}def test_{n:04d}({deck}):\n    with client({deck}) as c:\n        ask(c, {asked})\n"
)
_MARK: dict[Kind, str] = {"vcr": "@pytest.mark.vcr\n"}


def question(test: int, call: int) -> str:
    """The ``call``-th question of test ``test``: every call of the suite asks its own."""
    return f"Test {test}, call {call}: what does the retry budget bound, and who spends it?"


def answer(asked: str) -> bytes:
    """An OpenAI chat completion answering ``asked`` (about 590 bytes), the same every time."""
    digest = hashlib.sha256(asked.encode()).hexdigest()
    content = (
        f"{asked} The retry budget bounds how long the loop may wait in all: every backoff "
        "and every Retry-After it honours is taken from the same allowance."
    )
    body = {
        "id": f"chatcmpl-{digest[:24]}",
        "object": "chat.completion",
        "created": 1764411948,
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content, "refusal": None},
                "logprobs": None,
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 41, "completion_tokens": 38, "total_tokens": 79},
        "service_tier": "default",
        "system_fingerprint": "fp_0ba0d124f1",
    }
    return orjson.dumps(body)


def write_suite(
    folder: Path, kind: Kind, *, tests: int, calls: int, per_file: int, base_url: str
) -> None:
    """Write a suite of ``tests`` tests of ``calls`` chat calls each into ``folder``."""
    folder.mkdir(parents=True)
    (folder / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    (folder / "pyproject.toml").write_text("", encoding="utf-8")
    chat = _CHAT.format(base_url=base_url) + _CLIENTS[kind].format(headers=HEADERS)
    (folder / "chat.py").write_text(chat, encoding="utf-8")
    head = "import pytest\n\nfrom chat import ask, client\n"
    for first in range(0, tests, per_file):
        ns = range(first, min(first + per_file, tests))
        body = "".join(
            _TEST.format(
                mark=_MARK.get(kind, ""),
                n=n,
                deck="deck" if kind == "faultdeck" else "",
                asked=", ".join(repr(question(n, c)) for c in range(calls)),
            )
            for n in ns
        )
        (folder / f"test_chat_{first // per_file:02d}.py").write_text(head + body, "utf-8")
    if kind == "floor":
        answers = {
            question(n, c): answer(question(n, c)).decode()
            for n in range(tests)
            for c in range(calls)
        }
        (folder / "answers.json").write_bytes(orjson.dumps(answers))


@dataclass(slots=True)
class Server:
    """The running chat server: its base URL and how many requests it has answered."""

    base_url: str
    _hits: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def hits(self) -> int:
        """Requests answered so far."""
        with self._lock:
            return self._hits

    def count(self) -> None:
        """One more request answered."""
        with self._lock:
            self._hits += 1


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: a test's three calls share a connection
    disable_nagle_algorithm = True  # else headers and body wait on a delayed ACK (~40 ms)
    server: _CountingServer

    def do_POST(self) -> None:
        request = orjson.loads(self.rfile.read(int(self.headers.get("content-length") or 0)))
        body = answer(request["messages"][-1]["content"])
        self.send_response(200)
        for name, value in HEADERS.items():
            self.send_header(name, value)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        self.server.counter.count()

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: the benchmark prints its own table."""


class _CountingServer(ThreadingHTTPServer):
    counter: Server


@contextmanager
def serving() -> Iterator[Server]:
    """Serve on a free port of 127.0.0.1 in a thread; yield the server's counter."""
    server = _CountingServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    server.counter = Server(f"http://127.0.0.1:{server.server_address[1]}/v1")
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.counter
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@dataclass(frozen=True, slots=True)
class Peer:
    """A peer's pytest plugin from PyPI, kept out of .venv.

    Attributes:
        package: its name on PyPI.
        version: the version measured.
        plugin: its plugin's module, for ``-p``.
    """

    package: str
    version: str
    plugin: str

    @property
    def folder(self) -> Path:
        """Where ``pip --target`` puts it."""
        return PEERS / f"{self.package}-{self.version}"


def install(peer: Peer, *, install: bool) -> Path | str:
    """The peer's folder, installed now when missing and ``install``; else why it is not."""
    if peer.folder.is_dir():
        return peer.folder
    if not install:
        return (
            f"not installed in {peer.folder} (make test and make bench install it: "
            "python -m benchmarks --install-peers)"
        )
    partial = peer.folder.with_name(f"{peer.folder.name}.{os.getpid()}.partial")
    shutil.rmtree(partial, ignore_errors=True)
    wanted = f"{peer.package}=={peer.version}"
    command = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    command += ["--no-deps", "--target", str(partial), wanted]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=PIP_TIMEOUT)
    except subprocess.TimeoutExpired:
        return f"pip install {wanted} ran past {PIP_TIMEOUT} s"
    if done.returncode != 0:
        shutil.rmtree(partial, ignore_errors=True)
        errors = [line for line in done.stderr.splitlines() if "ERROR" in line]
        return f"pip install {wanted} failed: " + (errors[-1] if errors else "see pip")
    partial.rename(peer.folder)
    return peer.folder
