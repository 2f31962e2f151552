"""The workshop rehearsals again, in the pytest plugin's style: a marker names the cassette
and the faults, the ``deck`` and ``virtual_clock`` fixtures do the rest."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import faultdeck as fd
from faultdeck import faults
from faultdeck.testing import assert_invariants, assert_violates
from faultdeck.workshop import POLICY, Workshop

from .broken import drops_partial_work, retry_on_quota

GOLDEN = str(Path(__file__).parent / "cassettes" / "golden.jsonl")
READ: dict[str, Any] = {"kind": "tool", "name": "read_file"}


@pytest.mark.faultdeck(cassette=GOLDEN, faults=[faults.timeout().on(**READ, nth=1)])
def test_a_timeout_is_retried_once(deck: fd.Deck, virtual_clock: fd.VirtualClock) -> None:
    outcomes = Workshop(deck).run(POLICY, clock=virtual_clock)
    assert outcomes[1].attempts == 2
    assert_invariants(outcomes, policy=POLICY, deck=deck, clock=virtual_clock)


@pytest.mark.faultdeck(cassette=GOLDEN, faults=[faults.quota(retry_after=2).on(**READ).times(2)])
def test_a_quota_stop_keeps_finished_work(deck: fd.Deck, virtual_clock: fd.VirtualClock) -> None:
    outcomes = Workshop(deck).run(POLICY, clock=virtual_clock)
    assert [(o.op, o.status, o.retry_after) for o in outcomes] == [
        ("plan", "ok", None),
        ("read", "stopped", "2"),
    ]
    assert_invariants(outcomes, policy=POLICY, deck=deck, clock=virtual_clock)


@pytest.mark.faultdeck(cassette=GOLDEN, faults=[faults.quota().on(**READ, nth=1)])
def test_dropping_finished_work_is_caught(deck: fd.Deck, virtual_clock: fd.VirtualClock) -> None:
    outcomes = Workshop(deck).run(POLICY, clock=virtual_clock, runner=drops_partial_work)
    assert_violates("partial_work", outcomes, policy=POLICY, deck=deck)


@pytest.mark.faultdeck(cassette=GOLDEN, faults=[faults.quota(retry_after=2).on(**READ).times(2)])
def test_retrying_quota_at_once_is_caught(deck: fd.Deck, virtual_clock: fd.VirtualClock) -> None:
    outcomes = Workshop(deck).run(POLICY, clock=virtual_clock, runner=retry_on_quota)
    assert_violates("no_early_retry", outcomes, policy=POLICY, deck=deck, clock=virtual_clock)
