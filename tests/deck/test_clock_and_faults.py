"""Clocks, and faults injected by the deck in record, replay and off modes."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

import faultdeck as fd
from faultdeck import faults
from tests.support.calls import never


def test_virtual_clock_never_waits_and_tells_waiting_from_work() -> None:
    clock = fd.VirtualClock()
    clock.sleep(2.0)
    clock.advance(0.5)
    asyncio.run(clock.asleep(1.0))
    asyncio.run(clock.aadvance(0.25))
    assert clock.now() == 3.75
    assert clock.waited == 3.0
    assert clock.sleeps == (2.0, 1.0)


def test_system_clock_counts_only_sleeps() -> None:
    clock = fd.SystemClock()
    before = clock.now()
    clock.sleep(0.001)
    clock.advance(0.001)
    assert clock.now() > before
    assert clock.waited == 0.001


def test_record_mode_writes_the_injected_fault(tmp_path: Path) -> None:
    path = tmp_path / "rec.jsonl"
    plan = [faults.quota(retry_after=2).at(seq=2), faults.latency(300).at(seq=1)]
    clock = fd.VirtualClock()
    with fd.Deck(path, mode="record", faults=plan, clock=clock) as deck:
        assert deck.call("tool", "t", {"n": 1}, lambda: "one") == "one"
        with pytest.raises(fd.QuotaExhausted):
            deck.call("tool", "t", {"n": 2}, never)
    lines = [json.loads(line) for line in path.read_text("utf-8").splitlines()]
    assert lines[1]["fault"] == {"fault": "latency", "ms": 300.0, "at": 1}
    assert lines[1]["out"] == "one"
    assert lines[1]["ms"] == 300.0
    assert lines[2]["error"]["type"] == "QuotaExhausted"
    assert lines[2]["error"]["retry_after"] == 2.0
    assert lines[2]["fault"]["fault"] == "quota"
    assert clock.waited == 0
    # Replayed without faults, the recorded injected error comes back as it was.
    with fd.Deck(path, mode="replay") as deck:
        deck.call("tool", "t", {"n": 1}, never)
        with pytest.raises(fd.QuotaExhausted) as info:
            deck.call("tool", "t", {"n": 2}, never)
    assert info.value.retry_after == 2.0


def test_a_raising_fault_on_replay_leaves_the_recorded_answer_for_the_retry(
    tmp_path: Path,
) -> None:
    path = tmp_path / "r.jsonl"
    with fd.Deck(path, mode="record") as deck:
        deck.call("tool", "t", {}, lambda: 1)
    with fd.Deck(path, mode="replay", faults=[faults.timeout().at(seq=1)]) as deck:
        with pytest.raises(fd.TransientError):
            deck.call("tool", "t", {}, never)
        assert deck.call("tool", "t", {}, never) == 1
    report = deck.report()
    assert (report.faults, report.used, report.unused) == (1, 1, ())
    assert [c.source for c in report.calls] == ["fault", "replay"]


def test_faults_apply_in_off_mode_and_to_env_reads(tmp_path: Path) -> None:
    with fd.Deck(tmp_path / "x.jsonl", mode="off", faults=[faults.reset().at(seq=2)]) as deck:
        assert deck.call("tool", "t", {}, lambda: 1) == 1
        with pytest.raises(fd.TransientError, match="reset"):
            deck.env("HOME")
    assert not (tmp_path / "x.jsonl").exists()


def test_a_crash_fault_leaves_no_end_line(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    deck = fd.Deck(path, mode="record", faults=[faults.crash().at(seq=2)])
    with deck:
        deck.call("tool", "t", {"n": 1}, lambda: 1)
        with pytest.raises(fd.ProcessKilled):
            deck.call("tool", "t", {"n": 2}, never)
        deck.abandon()
    recording = fd.load(path)
    assert recording.interrupted
    assert len(recording.entries) == 1


def test_recorded_latency_replays_onto_the_virtual_clock(tmp_path: Path) -> None:
    path = tmp_path / "slow.jsonl"
    with fd.Deck(path, mode="record", faults=[faults.latency(1500)], clock=fd.VirtualClock()) as d:
        d.call("model", "chat", {}, lambda: "hi")
    clock = fd.VirtualClock()
    with fd.Deck(path, mode="replay", latency="recorded", clock=clock) as deck:
        deck.call("model", "chat", {}, never)
    assert clock.now() == 1.5
    assert clock.waited == 0


def test_from_env_reads_a_fault_plan(tmp_path: Path) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"faults": [{"fault": "timeout", "at": 1}]}), "utf-8")
    environ = {
        "FAULTDECK_CASSETTE": str(tmp_path / "c.jsonl"),
        "FAULTDECK_MODE": "off",
        "FAULTDECK_FAULTS": str(plan),
    }
    deck = fd.Deck.from_env(environ)
    with pytest.raises(fd.TransientError):
        deck.call("tool", "t", {}, lambda: 1)
    deck.close()


def test_a_deck_takes_a_plan_file(tmp_path: Path) -> None:
    plan = tmp_path / "plan.toml"
    plan.write_text('[[faults]]\nfault = "timeout"\nat = 1\n', "utf-8")
    with fd.Deck(tmp_path / "x.jsonl", mode="off", faults=plan) as deck:
        with pytest.raises(fd.TransientError):
            deck.call("tool", "t", {}, lambda: 1)
    with pytest.raises(fd.ConfigError, match=r"nope\.json: no such fault plan"):
        fd.Deck(tmp_path / "x.jsonl", mode="off", faults=str(tmp_path / "nope.json"))


@pytest.mark.parametrize(("allow", "runs"), [("0", False), ("1", True)])
def test_from_env_holds_side_effects_as_drift_asks(tmp_path: Path, allow: str, runs: bool) -> None:
    environ = {
        "FAULTDECK_CASSETTE": str(tmp_path / "c.jsonl"),
        "FAULTDECK_MODE": "record",
        "FAULTDECK_ALLOW_SIDE_EFFECTS": allow,
    }
    sent: list[int] = []
    # "0" wins over what the program passes: a drift run must not charge a card again.
    deck = fd.Deck.from_env(environ, allow_side_effects=True)
    if runs:
        assert deck.call("tool", "pay", {"n": 1}, lambda: sent.append(1), side_effect=True) is None
    else:
        with pytest.raises(fd.SideEffectBlocked):
            deck.call("tool", "pay", {"n": 1}, lambda: sent.append(1), side_effect=True)
    deck.close()
    assert sent == ([1] if runs else [])
