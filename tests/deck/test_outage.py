"""An outage never costs a cassette: a recording in which live calls got no answer (the
connection refused, nothing back in time) does not replace the cassette it records over,
even when the program handled every failure and its deck closed cleanly. The new recording
stays beside it, and the deck says so, on the ``faultdeck`` logger as for a failed run."""

from __future__ import annotations

import logging
import socket
from pathlib import Path
from typing import Any

import openai
import pytest

import faultdeck as fd
from tests.support.fake_upstream import DEFAULT_TEXT, Upstream
from tests.support.outage import Refused, Silent
from tests.support.sdk import OPENAI_MODEL, openai_sync

TIMEOUT = 0.3  # the client's own read timeout against a server that never answers


def ask(client: openai.OpenAI, question: str) -> str | None:
    """One model call; ``None`` when the service did not answer (the agent carries on)."""
    try:
        reply = client.chat.completions.create(
            model=OPENAI_MODEL, messages=[{"role": "user", "content": question}]
        )
    except (openai.APIConnectionError, openai.APITimeoutError):
        return None
    return reply.choices[0].message.content


def record_good(path: Path, questions: int = 2) -> bytes:
    with Upstream() as upstream, fd.Deck(path, mode="record") as deck:
        with openai_sync(upstream.url, deck, None) as client:
            for n in range(questions):
                assert ask(client, f"question {n}") == DEFAULT_TEXT
    return path.read_bytes()


def test_a_refused_connection_keeps_the_cassette_though_the_program_carried_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "base.jsonl"
    good = record_good(path)
    partial = tmp_path / "base.partial.jsonl"

    with caplog.at_level(logging.WARNING, logger="faultdeck"), Refused() as down:
        with fd.Deck(path, mode="record") as deck, openai_sync(down.url, deck, None) as client:
            assert [ask(client, f"question {n}") for n in range(6)] == [None] * 6
    assert path.read_bytes() == good  # byte for byte: the outage replaced nothing
    report = deck.report()
    assert report.unanswered == ("ConnectError",) * 6
    assert report.stored == 0
    assert report.kept == str(partial)
    kept = fd.load(partial)
    assert kept.entries == ()
    assert kept.end is not None
    assert kept.end["status"] == "ok"  # whole, and beside it
    line = (
        f"recorded 0 of 6 calls: 6 got no answer (ConnectError); {path} kept, "
        f"the new recording is in {partial}"
    )
    assert report.outage() == line
    assert [r.getMessage() for r in caplog.records] == [line]
    assert "6 live calls got no answer (ConnectError), not written" in str(report)


def test_a_read_timeout_is_no_answer_and_counts_what_was_stored(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "base.jsonl"
    good = record_good(path)
    partial = tmp_path / "base.partial.jsonl"
    with Upstream() as upstream, Silent() as silent, fd.Deck(path, mode="record") as deck:
        with (
            openai_sync(upstream.url, deck, None) as answering,
            openai_sync(silent.url, deck, None) as silent_client,
        ):
            hanging = silent_client.with_options(timeout=TIMEOUT)
            assert ask(answering, "question 0") == DEFAULT_TEXT
            assert ask(hanging, "question 1") is None  # accepted, never answered
            assert ask(answering, "question 2") == DEFAULT_TEXT
    assert path.read_bytes() == good
    report = deck.report()
    assert (report.stored, report.unanswered) == (2, ("ReadTimeout",))
    assert [e.seq for e in fd.load(partial).entries] == [1, 3]  # the answered calls, as seqs
    assert report.outage() == (
        f"recorded 2 of 3 calls: 1 got no answer (ReadTimeout); {path} kept, "
        f"the new recording is in {partial}"
    )
    assert [r.getMessage() for r in caplog.records] == [report.outage()]


def test_a_tool_call_that_never_connected_counts_too(tmp_path: Path) -> None:
    path = tmp_path / "tools.jsonl"
    with fd.Deck(path, mode="record") as deck:
        deck.call("tool", "fetch", {"n": 0}, lambda: "fetched")
    good = path.read_bytes()
    refused = Refused()

    def fetch() -> Any:
        with socket.create_connection(("127.0.0.1", refused.port), timeout=5):
            return "fetched"

    with refused, fd.Deck(path, mode="record") as deck:
        with pytest.raises(ConnectionRefusedError):
            deck.call("tool", "fetch", {"n": 0}, fetch)
        deck.call("tool", "other", {}, lambda: 1)
    assert path.read_bytes() == good
    report = deck.report()
    assert (report.stored, report.unanswered) == (1, ("ConnectionRefusedError",))
    kept = fd.load(tmp_path / "tools.partial.jsonl")
    assert [(e.seq, e.name) for e in kept.entries] == [(2, "other")]  # the refused one was 1
    assert kept.in_flight() == ()  # the intent of the refused call was withdrawn


def test_a_first_recording_has_nothing_to_keep_and_says_what_it_lacks(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "first.jsonl"
    with caplog.at_level(logging.WARNING, logger="faultdeck"):
        with Upstream() as upstream, Refused() as refused, fd.Deck(path, mode="record") as deck:
            with (
                openai_sync(upstream.url, deck, None) as answering,
                openai_sync(refused.url, deck, None) as down,
            ):
                assert ask(answering, "question 0") == DEFAULT_TEXT
                assert ask(down, "question 1") is None
    assert len(fd.load(path).entries) == 1  # written in place: nothing was there to protect
    assert not (tmp_path / "first.partial.jsonl").exists()
    assert deck.report().kept is None
    [message] = [r.getMessage() for r in caplog.records]
    assert message.startswith("recorded 1 of 2 calls: 1 got no answer (ConnectError); ")
    assert f"{path} holds only the answered ones" in message


def test_a_whole_recording_still_replaces_the_cassette(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "base.jsonl"
    record_good(path, questions=1)
    with caplog.at_level(logging.WARNING, logger="faultdeck"):
        good = record_good(path, questions=3)
    assert len(fd.load(path).entries) == 3
    assert path.read_bytes() == good
    assert not (tmp_path / "base.partial.jsonl").exists()
    assert caplog.records == []


def test_append_during_an_outage_adds_only_what_was_answered(tmp_path: Path) -> None:
    path = tmp_path / "base.jsonl"
    record_good(path, questions=1)
    with Upstream() as upstream, Refused() as refused, fd.Deck(path, mode="append") as deck:
        with (
            openai_sync(upstream.url, deck, None) as answering,
            openai_sync(refused.url, deck, None) as down,
        ):
            assert ask(answering, "question 0") == DEFAULT_TEXT  # replayed
            assert ask(answering, "question 1") == DEFAULT_TEXT  # added
            assert ask(down, "question 2") is None
    report = deck.report()
    assert (report.used, report.stored, report.unanswered) == (1, 1, ("ConnectError",))
    assert len(fd.load(path).entries) == 2
    outage = report.outage()
    assert outage is not None
    assert outage.startswith("appended 1 of 2 calls: 1 got no answer (ConnectError); ")
    assert f"{path} holds only the answered ones" in outage
