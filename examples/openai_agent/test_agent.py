"""The openai example replays offline from its committed cassette."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import faultdeck as fd

from .agent import client_for, run
from .record import CASSETTE, QUESTION


class NoNetwork:
    """The real transport's stand-in: replay must never reach it."""

    def handle_request(self, request: object) -> object:
        raise AssertionError("replay opened the network")

    def close(self) -> None:
        pass


def test_the_agent_replays_offline() -> None:
    deck = fd.Deck(CASSETTE, mode="replay", clock=fd.VirtualClock())
    dead = "http://127.0.0.1:9/v1"
    with deck, client_for(deck, base_url=dead, api_key="sk-any", network=NoNetwork()) as client:
        assert run(client, QUESTION) == "It is sunny in Paris."
    report = deck.report()
    assert (report.used, report.live, report.unused, report.misses) == (2, 0, (), ())


def test_the_cassette_is_scan_clean() -> None:
    exe = Path(sys.executable).parent / "faultdeck"
    done = subprocess.run([str(exe), "scan", str(CASSETTE)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout
