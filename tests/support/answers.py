"""A provider's answers under the misbehaviour catalogue: one answer recorded whole and one
streamed against a fake, then replayed offline under a fault, as the SDK hands it over.

``Asking`` is what a provider's test gives: how to make its SDK's client on a deck
(``client``), and how to ask and gather the answer as a program sees it (``ask``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from starlette.applications import Starlette

import faultdeck as fd
from tests.support.fake_upstream import Upstream

DEAD = "http://127.0.0.1:9"  # nothing listens: a replay that went live would fail loudly


@dataclass(frozen=True)
class Asking:
    """How a provider's test asks: its client on a deck and a URL, and its question."""

    client: Callable[[fd.Deck, str], Any]
    ask: Callable[[Any, bool], dict[str, Any]]

    def record(self, folder: Path, app: Starlette) -> dict[bool, Path]:
        """The answer recorded whole (``False``) and streamed (``True``), the fake stopped
        after."""
        paths = {streamed: folder / f"streamed-{streamed}.jsonl" for streamed in (False, True)}
        with Upstream(app=app) as upstream:
            for streamed, path in paths.items():
                with fd.Deck(path, mode="record", clock=fd.SystemClock()) as deck:
                    self.ask(self.client(deck, upstream.url), streamed)
        return paths

    def answered(self, path: Path, streamed: bool, fault: fd.Fault) -> dict[str, Any]:
        """The answer replayed offline with ``fault`` at its call."""
        plan = [fault.at(seq=1)]
        with fd.Deck(path, mode="replay", faults=plan, clock=fd.VirtualClock()) as deck:
            return self.ask(self.client(deck, DEAD), streamed)
