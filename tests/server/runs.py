"""Cassettes for the server's tests, recorded by real decks, and the server run by a real
uvicorn on loopback."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path

import pytest
import uvicorn
from starlette.applications import Starlette

import faultdeck as fd
from faultdeck.server._config import ServerConfig
from faultdeck.server.app import make_app
from tests.support.calls import returns

FILLER = "You are a careful coding agent. Keep every change small and explain it. " * 4
"""A long system prompt's shared start: the two runs differ only in its last word."""


def record_run(path: Path, language: str, *, fails: bool = False) -> Path:
    """A three-call run whose system prompt ends in ``language``; one that ``fails`` makes
    a fourth call under a quota fault and lets the error out of the deck (the run failed)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    messages = [{"role": "system", "content": f"{FILLER}Answer in {language}."}]
    faults = [fd.faults.quota(retry_after=2).at(seq=4)] if fails else []
    escapes: AbstractContextManager[object] = (
        pytest.raises(fd.QuotaExhausted) if fails else nullcontext()
    )
    with escapes, fd.Deck(path, mode="record", faults=faults) as deck:
        deck.call("tool", "read_file", {"path": "docs/retry.md"}, returns({"bytes": 812}))
        deck.call("model", "chat", {"messages": messages}, returns({"text": "done"}))
        deck.call("tool", "run_tests", {"target": "tests/"}, returns({"passed": 12}))
        if fails:
            deck.call("model", "chat", {"messages": []}, returns({"text": "again"}))
    return path


def record_folder(root: Path) -> ServerConfig:
    """A cassettes folder: ``base`` and ``runs/french`` (its prompt's last word changed),
    ``runs/quota`` (a run that failed on a fourth call, under a quota fault), and
    ``broken`` (not JSON)."""
    record_run(root / "base.jsonl", "English")
    record_run(root / "runs" / "french.jsonl", "French")
    record_run(root / "runs" / "quota.jsonl", "English", fails=True)
    (root / "broken.jsonl").write_text('{"faultdeck": 1}\nnot json\n', "utf-8")
    return ServerConfig(cassettes=root)


def app(config: ServerConfig) -> Starlette:
    """The server's application, as ``faultdeck serve`` runs it."""
    return make_app(config)


@contextmanager
def serving(config: ServerConfig) -> Iterator[str]:
    """The server served by uvicorn on 127.0.0.1, in a thread; yields the base
    URL and stops the server after.

    The socket is bound and listening before uvicorn starts, so a request made at once
    waits in its backlog rather than being refused: nothing polls for the start.
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app(config), log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()
