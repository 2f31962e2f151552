"""A run killed mid-flight keeps its completed calls; resume finishes it without redoing them."""

from __future__ import annotations

import json
import re
import sys
import textwrap
import warnings
from pathlib import Path
from typing import Any

import pytest

import faultdeck as fd
from tests.support.calls import returns
from tests.support.children import child_env, run, until_ready

STEPS = 10
KILL_STEP = 6

AGENT = textwrap.dedent(
    """
    import json
    import os
    import sys
    import time
    from pathlib import Path

    import faultdeck as fd

    mode, cassette, effects = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    kill_at = os.environ.get("KILL_AT_STEP")

    deck = fd.Deck(cassette, mode=mode, allow_side_effects=True, on_harness_change="ignore")


    @deck.tool(side_effect=True)
    def write_note(step: int) -> dict:
        with effects.open("a") as fh:
            fh.write(f"{step}\\n")
        return {"written": step}


    def plan(i: int) -> dict:
        if kill_at is not None and i == int(kill_at):
            print("READY", flush=True)
            time.sleep(60)
        return {"next": i}


    with deck:
        for i in range(10):
            out = deck.call("model", "plan", {"step": i}, lambda i=i: plan(i))
            assert out == {"next": i}, out
            assert write_note(out["next"]) == {"written": i}
    report = deck.report()
    print(json.dumps({"used": report.used, "live": report.live, "misses": len(report.misses)}))
    """
)


def agent_cmd(tmp_path: Path, mode: str) -> list[str]:
    script = tmp_path / "agent.py"
    if not script.exists():
        script.write_text(AGENT, "utf-8")
    return [
        sys.executable,
        "-W",
        "error",
        str(script),
        mode,
        str(tmp_path / "run.jsonl"),
        str(tmp_path / "effects.txt"),
    ]


def calls_only(data: bytes) -> list[bytes]:
    """A cassette's lines without its intents (the begin lines a clean close drops)."""
    return [line for line in data.splitlines() if not line.startswith(b'{"begin"')]


def effect_lines(tmp_path: Path) -> list[str]:
    return (tmp_path / "effects.txt").read_text("utf-8").splitlines()


def expected_calls(steps: range) -> list[tuple[str, str, dict[str, Any], dict[str, Any]]]:
    calls: list[tuple[str, str, dict[str, Any], dict[str, Any]]] = []
    for i in steps:
        calls.append(("model", "plan", {"step": i}, {"next": i}))
        calls.append(("tool", "write_note", {"step": i}, {"written": i}))
    return calls


def as_calls(recording: fd.types.Recording) -> list[tuple[str, str, Any, Any]]:
    assert all(e.result == "out" for e in recording.entries)
    return [(e.kind, e.name, e.args, e.value) for e in recording.entries]


def kill_when_ready(tmp_path: Path) -> None:
    """Record until the model call of KILL_STEP is in flight, then SIGKILL the child."""
    env = child_env(KILL_AT_STEP=str(KILL_STEP))
    with until_ready(agent_cmd(tmp_path, "record"), env=env, cwd=tmp_path):
        # While the child is alive it holds the cassette: a writer here is refused.
        cassette = tmp_path / "run.jsonl"
        before = cassette.read_bytes()
        with pytest.raises(fd.CassetteLocked, match=re.escape(f"{cassette}.lock")):
            fd.Deck(cassette, mode="resume", on_harness_change="ignore").open()
        assert cassette.read_bytes() == before


def test_sigkill_then_resume_finishes_without_rerunning_side_effects(tmp_path: Path) -> None:
    cassette = tmp_path / "run.jsonl"
    kill_when_ready(tmp_path)

    # Loading the killed run does not warn: every line it wrote is whole.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        recording = fd.load(cassette)
    assert recording.interrupted is True
    assert recording.end is None
    assert recording.truncated_line is None
    assert [e.seq for e in recording.entries] == list(range(1, 2 * KILL_STEP + 1))
    assert as_calls(recording) == expected_calls(range(KILL_STEP))
    assert effect_lines(tmp_path) == [str(i) for i in range(KILL_STEP)]
    prefix = cassette.read_bytes()

    # The killed child never released its lock file; the kernel dropped the lock itself.
    assert (tmp_path / "run.jsonl.lock").exists()
    resumed = run(agent_cmd(tmp_path, "resume"), cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert "CassetteLocked" not in resumed.stderr
    summary = json.loads(resumed.stdout.strip().splitlines()[-1])
    assert summary == {"used": 2 * KILL_STEP, "live": 2 * (STEPS - KILL_STEP), "misses": 0}
    assert list(tmp_path.glob("*.lock")) == []

    data = cassette.read_bytes()
    # Every recorded line is kept byte for byte; only the intents (begin lines) are dropped.
    assert data.splitlines()[: len(calls_only(prefix))] == calls_only(prefix), (
        "resume rewrote the recorded prefix"
    )
    assert b'"begin"' not in data
    for raw in data.splitlines():
        json.loads(raw)
    final = fd.load(cassette)
    assert final.interrupted is False
    assert final.end == {"calls": 2 * STEPS, "status": "ok"}
    assert final.truncated_line is None
    assert [e.seq for e in final.entries] == list(range(1, 2 * STEPS + 1))
    assert as_calls(final) == expected_calls(range(STEPS))

    # Each step's side effect ran exactly once across the killed run and the resumed one.
    assert effect_lines(tmp_path) == [str(i) for i in range(STEPS)]

    # A plain replay of the finished cassette runs the loop in-process with no live call.
    effects = tmp_path / "effects.txt"
    with fd.Deck(
        cassette, mode="replay", allow_side_effects=True, on_harness_change="ignore"
    ) as deck:

        @deck.tool(side_effect=True)
        def write_note(step: int) -> dict[str, int]:
            with effects.open("a") as fh:
                fh.write(f"{step}\n")
            return {"written": step}

        def no_live_model() -> dict[str, int]:
            raise AssertionError("a model call ran live during replay")

        for i in range(STEPS):
            out = deck.call("model", "plan", {"step": i}, no_live_model)
            assert out == {"next": i}
            assert write_note(out["next"]) == {"written": i}
        report = deck.report()
    assert report.misses == ()
    assert report.used == 2 * STEPS
    assert report.live == 0
    assert report.unused == ()
    assert effect_lines(tmp_path) == [str(i) for i in range(STEPS)]


def record_interrupted(path: Path, calls: int) -> None:
    deck = fd.Deck(path, mode="record", on_harness_change="ignore")
    deck.open()
    for i in range(calls):
        deck.call("tool", "fetch", {"page": i}, returns({"rows": [i, i + 1]}))
    deck.abandon()  # the process "died": no end line


def test_truncated_last_line_is_reported_then_dropped_by_resume(tmp_path: Path) -> None:
    path = tmp_path / "crash.jsonl"
    record_interrupted(path, 3)
    whole = path.read_bytes()
    # A crash mid-write: half of the next call's line, no newline.
    half = json.dumps(
        {"seq": 4, "kind": "tool", "name": "fetch", "key": "tool:0", "args": {"page": 3}},
        separators=(",", ":"),
    ).encode()
    path.write_bytes(whole + half[: len(half) // 2])
    truncated_at = len(whole.splitlines()) + 1  # the header, the calls and their intents

    where = re.escape(f"{path}:{truncated_at}")
    with pytest.warns(fd.CassetteWarning, match=where):
        recording = fd.load(path)
    assert recording.truncated_line == truncated_at
    assert recording.interrupted is True
    assert [e.seq for e in recording.entries] == [1, 2, 3]

    deck = fd.Deck(path, mode="resume", on_harness_change="ignore")
    with pytest.warns(fd.CassetteWarning, match=where):
        deck.open()
    with deck:
        outs = [
            deck.call("tool", "fetch", {"page": i}, returns({"rows": [i, i + 1]})) for i in range(5)
        ]
        report = deck.report()
    assert outs == [{"rows": [i, i + 1]} for i in range(5)]
    assert report.used == 3
    assert report.live == 2
    assert report.misses == ()

    data = path.read_bytes()
    assert data.splitlines()[: len(calls_only(whole))] == calls_only(whole)
    assert data.endswith(b"\n")
    lines = [json.loads(raw) for raw in data.split(b"\n")[:-1]]
    assert lines[0]["faultdeck"] == 1
    assert [line["seq"] for line in lines[1:-1]] == [1, 2, 3, 4, 5]
    assert lines[-1] == {"end": {"calls": 5, "status": "ok"}}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the torn line is gone: no warning now
        final = fd.load(path)
    assert final.truncated_line is None
    assert final.interrupted is False
    assert [e.value for e in final.entries] == [{"rows": [i, i + 1]} for i in range(5)]


@pytest.mark.parametrize("second_mode", ["append", "record", "resume"])
def test_a_second_writer_is_refused_and_changes_nothing(
    tmp_path: Path, second_mode: fd.config.Mode
) -> None:
    path = tmp_path / "shared.jsonl"
    first = fd.Deck(path, mode="record", on_harness_change="ignore")
    with first:
        first.call("tool", "fetch", {"page": 0}, lambda: {"rows": [0]})
        before = path.read_bytes()

        second = fd.Deck(path, mode=second_mode, on_harness_change="ignore")
        with pytest.raises(fd.CassetteLocked) as info:
            second.open()
        message = str(info.value)
        assert str(path) in message
        assert f"{path}.lock" in message
        assert path.read_bytes() == before, "the refused writer touched the cassette"

        # The first writer carries on undisturbed.
        first.call("tool", "fetch", {"page": 1}, lambda: {"rows": [1]})

    assert list(tmp_path.glob("*.lock")) == []
    recording = fd.load(path)
    assert not recording.interrupted
    assert [e.args for e in recording.entries] == [{"page": 0}, {"page": 1}]

    with fd.Deck(path, mode="append", on_harness_change="ignore") as third:
        live: dict[str, Any] = {"rows": ["live"]}
        assert third.call("tool", "fetch", {"page": 1}, returns(live)) == {"rows": [1]}
        assert third.call("tool", "fetch", {"page": 2}, lambda: {"rows": [2]}) == {"rows": [2]}
    assert list(tmp_path.glob("*.lock")) == []
    assert [e.args for e in fd.load(path).entries] == [{"page": 0}, {"page": 1}, {"page": 2}]
