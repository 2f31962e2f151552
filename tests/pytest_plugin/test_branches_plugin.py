"""A marker's faults on the test's branch: recorded under ``--faultdeck-mode=record`` where
they lead off the named cassette's path, replayed from then on (real inner pytest runs)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

import faultdeck as fd
from faultdeck import faults

LOOP = """
import os

import pytest

from faultdeck import faults


def lookup(i):
    def run():
        if os.environ.get("OFFLINE"):
            raise AssertionError("went live while replaying")
        return {"v": i * 2}
    return run


def loop(deck):
    out = []
    for i in range(3):
        try:
            out.append(deck.call("tool", "lookup", {"i": i}, lookup(i)))
        except Exception:
            # The error read back: a call the recording never made.
            out.append(deck.call("tool", "fallback", {"i": i}, lookup(-i)))
    return out


@pytest.mark.faultdeck(cassette="golden.jsonl")
def test_golden(deck):
    assert loop(deck) == [{"v": 0}, {"v": 2}, {"v": 4}]


BREAKS = faults.tool_error().on(name="lookup", nth=2)


@pytest.mark.faultdeck(cassette="golden.jsonl", faults=[BREAKS])
def test_falls_back(deck):
    assert loop(deck) == [{"v": 0}, {"v": -2}, {"v": 4}]
"""
PLAN = fd.FaultPlan([faults.tool_error().on(name="lookup", nth=2)])


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_tests_branch_is_recorded_once_then_replayed_offline(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_loop=LOOP)
    pytester.runpytest("--faultdeck-mode=record", "-k", "golden").assert_outcomes(passed=1)
    golden = pytester.path / "golden.jsonl"
    recorded = digest(golden)
    # Replayed on the golden cassette, the fault leads to a call it never made.
    missed = pytester.runpytest("-k", "falls_back")
    missed.assert_outcomes(failed=1)
    missed.stdout.fnmatch_lines(
        [
            "*replay miss at seq 3: tool fallback*",
            "*its faults led off the recorded path of golden.jsonl; with the upstream reachable,*",
            "*pytest test_loop.py::test_falls_back --faultdeck-mode=record",
        ]
    )

    pytester.runpytest("--faultdeck-mode=record", "-k", "falls_back").assert_outcomes(passed=1)
    assert digest(golden) == recorded  # the shared cassette is only read
    branch = pytester.path / "golden.branches" / "test_falls_back.jsonl"
    recording = fd.load(branch)
    parent = recording.header.extra["parent"]
    assert (parent["at"], parent["sha256"]) == (2, recorded)
    assert parent["branch"] == {
        "cell": "test_falls_back",
        "seq": None,
        "plan": PLAN.to_json(),
        "left_at": 3,
    }
    assert [(e.seq, e.name) for e in recording.entries] == [
        (1, "lookup"),
        (2, "lookup"),
        (3, "fallback"),
        (4, "lookup"),
    ]

    monkeypatch.setenv("OFFLINE", "1")  # nothing may run live from here on
    pytester.runpytest("--strict-markers").assert_outcomes(passed=2)
    assert digest(golden) == recorded


def test_a_test_that_stays_on_the_path_records_no_branch(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_loop=LOOP.replace(
            'faults.tool_error().on(name="lookup", nth=2)', "faults.latency(ms=5)"
        ).replace('[{"v": 0}, {"v": -2}, {"v": 4}]', '[{"v": 0}, {"v": 2}, {"v": 4}]')
    )
    pytester.runpytest("--faultdeck-mode=record").assert_outcomes(passed=2)
    assert sorted(p.name for p in pytester.path.iterdir() if "golden" in p.name) == ["golden.jsonl"]


def test_a_stray_file_in_the_branch_folder_fails_the_test_in_one_line(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_loop=LOOP)
    pytester.runpytest("--faultdeck-mode=record", "-k", "golden").assert_outcomes(passed=1)
    stray = pytester.path / "golden.branches" / "notes.jsonl"
    stray.parent.mkdir()
    with fd.Deck(stray, mode="record") as deck:
        deck.call("tool", "note", {}, lambda: "kept here by hand")
    result = pytester.runpytest("-k", "falls_back")
    result.assert_outcomes(errors=1)  # in its set-up, as any bad setting of its deck
    result.stdout.fnmatch_lines(["*faultdeck: *notes.jsonl: not a branch of *golden.jsonl*"])
