"""An outage is not an answer of the world: calls that never reached the upstream (the
connection refused, a name that does not resolve) are raised to the program and never
written, so an outage while recording or resuming does not poison the cassette.
"""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import openai
import pytest

import faultdeck as fd
from tests.support.fake_upstream import Upstream
from tests.support.sdk import QUESTION, NetworkGuard, openai_sync


def ask(url: str, deck: fd.Deck, inner: Any = None, *, retries: int = 0) -> str:
    with openai_sync(url, deck, inner) as client:
        reply = client.with_options(max_retries=retries).chat.completions.create(
            model="gpt-fake", messages=[{"role": "user", "content": QUESTION}]
        )
    return reply.choices[0].message.content or ""


def dead_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"  # closed again: nothing listens there


def test_a_refused_connection_while_recording_is_raised_and_not_written(tmp_path: Path) -> None:
    path = tmp_path / "base.jsonl"
    with Upstream() as upstream, fd.Deck(path, mode="record") as deck:
        ask(upstream.url, deck)
    good = path.read_bytes()

    deck = fd.Deck(path, mode="record")
    with pytest.raises(openai.APIConnectionError), deck:
        ask(dead_url(), deck, retries=2)
    report = deck.report()
    assert [c.error for c in report.calls] == ["ConnectError"] * 3  # the SDK's three attempts
    assert path.read_bytes() == good  # the good cassette is as it was
    kept = fd.load(tmp_path / "base.partial.jsonl")
    assert kept.entries == ()  # and the attempts are in no cassette
    assert kept.in_flight() == ()


def test_an_outage_during_resume_does_not_poison_the_cassette(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    with Upstream() as upstream:
        deck = fd.Deck(path, mode="record")
        deck.open()
        first = ask(upstream.url, deck)
        deck.abandon()  # killed after the first call

    url = dead_url()
    with fd.Deck(path, mode="resume") as deck:
        assert ask(url, deck) == first  # replayed
        with pytest.raises(openai.APIConnectionError):
            ask(url, deck, retries=2)  # the upstream is down
    recording = fd.load(path)
    assert len(recording.entries) == 1
    assert all(e.result == "out" for e in recording.entries)

    with Upstream() as upstream, fd.Deck(path, mode="resume") as deck:
        assert ask(upstream.url, deck) == first
        second = ask(upstream.url, deck)
    final = fd.load(path)
    assert not final.interrupted
    assert len(final.entries) == 2
    assert {e.result for e in final.entries} == {"out"}

    with fd.Deck(path, mode="replay") as deck:
        guard = NetworkGuard()
        assert ask(url, deck, guard) == first
        assert ask(url, deck, guard) == second
        assert deck.report().ok
    assert guard.calls == 0


@pytest.mark.parametrize(
    "error",
    [
        ConnectionRefusedError(111, "Connection refused"),
        socket.gaierror(-2, "Name or service not known"),
    ],
    ids=["refused", "dns"],
)
def test_an_in_process_call_that_never_connected_is_not_written(
    tmp_path: Path, error: OSError
) -> None:
    path = tmp_path / "tools.jsonl"

    def fetch() -> Any:
        raise error

    with fd.Deck(path, mode="record") as deck:
        with pytest.raises(type(error)):
            deck.call("tool", "fetch", {"url": "https://api.example.test"}, fetch)
        deck.call("tool", "other", {}, lambda: 1)
    recording = fd.load(path)
    assert [e.name for e in recording.entries] == ["other"]
    assert recording.in_flight() == ()


def test_an_error_that_did_reach_the_world_is_recorded(tmp_path: Path) -> None:
    path = tmp_path / "reached.jsonl"

    def fetch() -> Any:
        raise ConnectionResetError(104, "Connection reset by peer")

    with fd.Deck(path, mode="record") as deck, pytest.raises(ConnectionResetError):
        deck.call("tool", "fetch", {}, fetch)
    assert [e.result for e in fd.load(path).entries] == ["error"]
