"""Re-record the committed cassette: ``python -m examples.openai_agent.record``.

By default it records against the local fake upstream the tests use (no network, no key);
with ``--base-url https://api.openai.com/v1`` and ``OPENAI_API_KEY`` set it records the real
API (the key is never written: credentials are stripped and secrets masked).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import faultdeck as fd

from .agent import client_for, run

CASSETTE = Path(__file__).parent / "cassettes" / "weather.jsonl"
QUESTION = "What's the weather in Paris?"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--base-url", help="record against this API instead of the fake")
    options = parser.parse_args()
    if options.base_url:
        deck = fd.Deck(CASSETTE, mode="record", clock=fd.SystemClock())
        with deck, client_for(deck, base_url=options.base_url) as client:
            print(run(client, QUESTION))
        return
    sys.path.insert(0, str(Path(__file__).parents[2]))  # the repository root
    from tests.support.fake_upstream import Upstream

    deck = fd.Deck(CASSETTE, mode="record")
    with Upstream() as upstream, deck:
        url = f"{upstream.url}/v1"
        with client_for(deck, base_url=url, api_key="sk-fake") as client:
            print(run(client, QUESTION))


if __name__ == "__main__":
    main()
