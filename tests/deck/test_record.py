"""A recording never destroys a good cassette: it goes beside it until the run closes cleanly.

Each case records a good cassette, then records over it in a way that goes wrong: the
program raises, the process is killed right after opening, the program exits non-zero under
``faultdeck record``. The good cassette must come out byte for byte as it was, the new
recording beside it, and ``resume`` able to continue that.
"""

from __future__ import annotations

import logging
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import faultdeck as fd
from tests.support.calls import never, returns
from tests.support.children import run

FAULTDECK = str(Path(sys.executable).with_name("faultdeck"))


def record_good(path: Path, n: int = 3) -> bytes:
    with fd.Deck(path, mode="record") as deck:
        for i in range(n):
            deck.call("tool", "fetch", {"page": i}, returns({"rows": [i]}))
    return path.read_bytes()


def fail_inside(deck: fd.Deck, answer: Any) -> None:
    """A program that makes a call through the deck, then raises out of its ``with``."""
    with deck:
        deck.call("tool", "fetch", {"page": 0}, lambda: answer)
        raise ValueError("the program failed")


def test_a_program_that_raises_leaves_the_good_cassette_and_keeps_the_new_one(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "base.jsonl"
    good = record_good(path)
    deck = fd.Deck(path, mode="record")
    with (
        caplog.at_level(logging.WARNING, logger="faultdeck"),
        pytest.raises(ValueError, match="the program failed"),
    ):
        fail_inside(deck, {"rows": ["new"]})
    assert path.read_bytes() == good
    partial = tmp_path / "base.partial.jsonl"
    assert deck.report().kept == str(partial)
    [line] = [r.getMessage() for r in caplog.records]
    assert str(partial) in line
    assert "left as it was" in line
    kept = fd.load(partial)
    assert kept.failed
    assert [e.value for e in kept.entries] == [{"rows": ["new"]}]

    # resume continues the new recording and, closing cleanly, puts it in place.
    with fd.Deck(path, mode="resume") as deck:
        assert deck.call("tool", "fetch", {"page": 0}, never) == {"rows": ["new"]}
        assert deck.call("tool", "fetch", {"page": 1}, lambda: {"rows": ["new1"]})
    assert not partial.exists()
    final = fd.load(path)
    assert not final.interrupted
    assert [e.value for e in final.entries] == [{"rows": ["new"]}, {"rows": ["new1"]}]
    assert b'"begin"' not in path.read_bytes()


def test_a_clean_re_recording_replaces_the_cassette_atomically(tmp_path: Path) -> None:
    path = tmp_path / "base.jsonl"
    record_good(path)
    inode = path.stat().st_ino
    with fd.Deck(path, mode="record") as deck:
        deck.call("tool", "fetch", {"page": 9}, lambda: {"rows": [9]})
        assert fd.load(path).entries[0].args == {"page": 0}  # the old one, until the close
    assert [e.args for e in fd.load(path).entries] == [{"page": 9}]
    assert path.stat().st_ino != inode  # a rename, not a rewrite in place
    assert sorted(p.name for p in tmp_path.iterdir()) == ["base.jsonl"]


def test_a_symlinked_cassette_is_replaced_at_its_target(tmp_path: Path) -> None:
    target = tmp_path / "real.jsonl"
    record_good(target)
    link = tmp_path / "link.jsonl"
    link.symlink_to(target)
    with fd.Deck(link, mode="record") as deck:
        deck.call("tool", "fetch", {"page": 7}, lambda: {"rows": [7]})
    assert link.is_symlink()
    assert [e.args for e in fd.load(target).entries] == [{"page": 7}]


KILLED = textwrap.dedent(
    """
    import os, signal, sys
    import faultdeck as fd
    deck = fd.Deck(sys.argv[1], mode="record", on_harness_change="ignore")
    deck.open()
    if sys.argv[2] == "after-a-call":
        deck.call("tool", "fetch", {"page": 0}, lambda: {"rows": ["new"]})
    os.kill(os.getpid(), signal.SIGKILL)
    """
)


@pytest.mark.parametrize("when", ["right-after-open", "after-a-call"])
def test_a_recording_killed_leaves_the_good_cassette(tmp_path: Path, when: str) -> None:
    path = tmp_path / "base.jsonl"
    good = record_good(path)
    script = tmp_path / "killed.py"
    script.write_text(KILLED, "utf-8")
    done = run([sys.executable, str(script), str(path), when])
    assert done.returncode == -signal.SIGKILL
    assert path.read_bytes() == good
    kept = fd.load(tmp_path / "base.partial.jsonl")
    assert kept.interrupted
    assert len(kept.entries) == (1 if when == "after-a-call" else 0)
    with fd.Deck(path, mode="resume", on_harness_change="ignore") as deck:
        deck.call("tool", "fetch", {"page": 0}, lambda: {"rows": ["resumed"]})
    assert not (tmp_path / "base.partial.jsonl").exists()
    assert len(fd.load(path).entries) == 1


PROGRAM = textwrap.dedent(
    """
    import sys
    import faultdeck as fd
    deck = fd.Deck.from_env()
    deck.call("tool", "fetch", {"page": 0}, lambda: {"rows": ["cli"]})
    sys.exit(int(sys.argv[1]))
    """
)


def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return run([FAULTDECK, *args], cwd=cwd)


def test_faultdeck_record_replaces_the_cassette_only_when_the_program_exits_0(
    tmp_path: Path,
) -> None:
    path = tmp_path / "base.jsonl"
    good = record_good(path)
    script = tmp_path / "prog.py"
    script.write_text(PROGRAM, "utf-8")

    failed = run_cli("record", str(path), "--", sys.executable, str(script), "3", cwd=tmp_path)
    assert failed.returncode == 1
    assert path.read_bytes() == good
    partial = tmp_path / "base.partial.jsonl"
    assert f"the new recording is in {partial}" in failed.stdout
    assert f"faultdeck resume {path}" in failed.stdout
    assert fd.load(partial).entries[0].value == {"rows": ["cli"]}

    ok = run_cli("resume", str(path), "--", sys.executable, str(script), "0", cwd=tmp_path)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert not partial.exists()
    assert [e.value for e in fd.load(path).entries] == [{"rows": ["cli"]}]

    again = run_cli("record", str(path), "--", sys.executable, str(script), "0", cwd=tmp_path)
    assert again.returncode == 0
    assert "recorded 1 call (1 live)" in again.stdout
    assert not partial.exists()


def show(path: Path) -> str:
    return run_cli("show", str(path), cwd=path.parent).stdout


def test_show_says_how_the_run_ended_in_words(tmp_path: Path) -> None:
    clean = tmp_path / "clean.jsonl"
    record_good(clean, 1)
    assert "ended cleanly: 1 call" in show(clean)

    failed = tmp_path / "failed.jsonl"
    with pytest.raises(ValueError, match="the program failed"):
        fail_inside(fd.Deck(failed, mode="record"), 1)
    text = show(failed)
    assert "failed: the run raised an error after 1 call" in text
    assert "status" not in text.splitlines()[-1]

    killed = tmp_path / "killed.jsonl"
    deck = fd.Deck(killed, mode="record")
    deck.open()
    deck.call("tool", "fetch", {}, lambda: 1)
    deck.abandon()
    assert "interrupted: the run stopped after 1 call without closing" in show(killed)

    good = record_good(tmp_path / "base.jsonl", 1)
    assert good
    deck = fd.Deck(tmp_path / "base.jsonl", mode="record")
    deck.open()
    deck.abandon()
    assert "a newer recording that did not finish is beside it" in show(tmp_path / "base.jsonl")


PYTEST_MODULE = """
import os

def test_agent(deck):
    deck.call("tool", "fetch", {"page": 0}, lambda: {"rows": [os.environ.get("ROWS", "0")]})
    assert os.environ.get("FAIL") != "1", "the test failed after its call"
"""


def test_re_recording_a_failing_pytest_test_keeps_its_cassette(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_agent=PYTEST_MODULE)
    pytester.runpytest("--faultdeck-mode=record").assert_outcomes(passed=1)
    cassette = pytester.path / "cassettes" / "test_agent" / "test_agent.jsonl"
    good = cassette.read_bytes()
    monkeypatch.setenv("FAIL", "1")
    monkeypatch.setenv("ROWS", "new")
    pytester.runpytest("--faultdeck-mode=record").assert_outcomes(failed=1)
    assert cassette.read_bytes() == good
    kept = cassette.with_name("test_agent.partial.jsonl")
    assert fd.load(kept).entries[0].value == {"rows": ["new"]}
    monkeypatch.setenv("FAIL", "0")
    pytester.runpytest("--faultdeck-mode=record").assert_outcomes(passed=1)
    assert fd.load(cassette).entries[0].value == {"rows": ["new"]}
    assert not kept.exists()
