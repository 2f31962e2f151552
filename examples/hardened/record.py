"""Re-record the committed cassette: ``python -m examples.hardened.record``.

It records the hardened loop's clean run against the local fake upstream the tests use
(127.0.0.1, no key): two model calls, the weather tool and the report. The tests replay it
offline under each fault of the catalogue that applies to those calls.
"""

from __future__ import annotations

import sys
from pathlib import Path

import faultdeck as fd

from .agent import client_for, run

CASSETTE = Path(__file__).parent / "cassettes" / "golden.jsonl"
QUESTION = "What's the weather in Paris?"


def main() -> None:
    sys.path.insert(0, str(Path(__file__).parents[2]))  # the repository root
    from tests.support.fake_upstream import Upstream

    deck = fd.Deck(CASSETTE, mode="record", allow_side_effects=True)
    with Upstream() as upstream, deck:
        url = f"{upstream.url}/v1"
        with client_for(deck, base_url=url, api_key="sk-fake") as client:
            print(run(client, deck, QUESTION))


if __name__ == "__main__":
    main()
