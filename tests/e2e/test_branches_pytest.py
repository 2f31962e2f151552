"""The pytest plugin on a real agent's branch: a test replays the agent's golden cassette
under a timeout at the weather call; the agent reads the error back to the model, a request
the recording never made. ``--faultdeck-mode=record`` with the fakes up records the test's
branch; with them stopped, the test passes on it, offline, and nothing waits for real."""

from __future__ import annotations

import contextlib
import hashlib
import os
import subprocess
import sys
from pathlib import Path

import faultdeck as fd
from tests.e2e.test_unmodified_agents import AGENTS, PROBE, environment
from tests.support.fake_upstream import Upstream
from tests.support.httpbin import httpbin

TESTS = f"""
import sys

import pytest

from faultdeck import faults

sys.path.insert(0, {str(AGENTS)!r})
import reads_errors_back as agent


@pytest.mark.faultdeck(cassette="base.jsonl", intercept=True)
def test_the_agent_answers(deck, capsys):
    agent.main()
    assert len(deck.calls) == 3


@pytest.mark.faultdeck(cassette="base.jsonl", intercept=True, faults=[faults.timeout().at(seq=2)])
def test_the_agent_reads_a_timeout_back(deck, capsys):
    agent.main()
    asked = [c for c in deck.calls if c.kind == "model"]
    assert len(asked) == 2
"""


def pytest_run(folder: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    waits = folder / ".waits"
    waits.unlink(missing_ok=True)
    env = {**env, "FAULTDECK_TEST_WAITS": str(waits)}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (env.get("PYTHONPATH"), str(PROBE)) if p)
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *args]
    done = subprocess.run(
        command, cwd=folder, env=env, capture_output=True, text=True, timeout=240, check=False
    )
    assert not waits.exists(), waits.read_text("utf-8")  # no real wait of a second or more
    return done


def test_a_test_on_the_agents_branch_replays_offline(tmp_path: Path) -> None:
    (tmp_path / "test_agent.py").write_text(TESTS, "utf-8")
    with contextlib.ExitStack() as up:
        llm = up.enter_context(Upstream())
        weather = up.enter_context(httpbin())
        env = environment(llm.url, weather)
        recorded = pytest_run(tmp_path, env, "--faultdeck-mode=record")
        assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    golden = tmp_path / "base.jsonl"
    sha = hashlib.sha256(golden.read_bytes()).hexdigest()
    branch = fd.load(tmp_path / "base.branches" / "test_the_agent_reads_a_timeout_back.jsonl")
    assert branch.header.extra["parent"]["sha256"] == sha
    # Where the timeout led: the model asked again with the tool's error in the request.
    last_ask = branch.entries[-1].args["body"]["messages"][-1]
    assert last_ask["role"] == "tool"
    assert last_ask["content"].startswith("error: the weather service failed")

    # The fakes are stopped: both tests replay, the faulted one on its branch.
    replayed = pytest_run(tmp_path, env, "--block-network")
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert "2 passed" in replayed.stdout
    assert hashlib.sha256(golden.read_bytes()).hexdigest() == sha
