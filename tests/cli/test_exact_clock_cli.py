"""``faultdeck redteam`` and ``faultdeck rehearse`` on loops over the real openai SDK,
replayed through ``fd.http`` on a virtual clock: no false finding on a correct loop (a wait
that reaches its limit exactly is within it), and the same report twice for one seed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import faultdeck as fd
from tests.support import ROOT, SRC
from tests.support.children import child_env
from tests.support.fake_upstream import Upstream
from tests.support.sdk import OPENAI_MODEL, openai_sync

LOOPS = """\
import httpx2
import openai
import faultdeck as fd
from faultdeck.http import Transport

OPS = ("plan", "answer")
# A wait of exactly 2 s is the most this policy allows, in all and at once.
POLICY = fd.Policy(
    max_attempts=3, base_delay=0.5, max_delay=2.0, max_retry_after=2.0, max_total_wait=2.0
)


def client(deck):
    transport = Transport(deck, httpx=httpx2)
    return openai.OpenAI(
        base_url="http://127.0.0.1:9/v1", api_key="sk-test", max_retries=0,
        http_client=httpx2.Client(transport=transport),
    )


def ask(sdk, op):
    reply = sdk.chat.completions.create(
        model="gpt-fake", messages=[{"role": "user", "content": f"{op}?"}]
    )
    return reply.choices[0].message.content


def good(deck, clock):
    with client(deck) as sdk:
        return fd.run_steps(lambda op: ask(sdk, op), OPS, POLICY, clock=clock)


def hasty(deck, clock):
    outcomes = []
    with client(deck) as sdk:
        for op in OPS:
            with fd.step(op):
                for attempt in (1, 2, 3):
                    try:
                        outcomes.append(fd.Outcome(op, "ok", ask(sdk, op), attempts=attempt))
                        break
                    except openai.RateLimitError as exc:
                        if "retry-after-ms" not in exc.response.headers:
                            outcomes.append(fd.Outcome(op, "stopped", None, "quota", attempt))
                            return outcomes
                else:
                    return outcomes
    return outcomes
"""


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "loops.py").write_text(LOOPS, "utf-8")
    with Upstream() as upstream:
        deck = fd.Deck(tmp_path / "golden.jsonl", mode="record", clock=fd.SystemClock())
        with deck, openai_sync(upstream.url, deck, None) as sdk:
            for op in ("plan", "answer"):
                messages: Any = [{"role": "user", "content": f"{op}?"}]
                sdk.chat.completions.create(model=OPENAI_MODEL, messages=messages)
    return tmp_path


def run(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = child_env(COLUMNS="120")
    env["PYTHONPATH"] = f"{SRC}:{ROOT}:{folder}"
    return subprocess.run(
        [sys.executable, "-m", "faultdeck", *args, "--format", "json"],
        capture_output=True,
        text=True,
        cwd=folder,
        env=env,
        timeout=300,
        check=False,
    )


def test_redteam_finds_nothing_on_a_correct_loop(folder: Path) -> None:
    for seed in ("0", "1"):  # each meets a plan whose waits reach max_total_wait exactly
        args = ("--entrypoint", "loops:good", "--budget", "150", "--seed", seed, "--quiet")
        done = run(folder, "redteam", "golden.jsonl", *args)
        assert done.returncode == 0, done.stdout + done.stderr
        found = json.loads(done.stdout)
        assert (found["found"], found["violations"]) == (False, [])


def test_redteam_twice_with_one_seed_prints_the_same_report(folder: Path) -> None:
    args = ("--entrypoint", "loops:hasty", "--budget", "60", "--seed", "0", "--quiet")
    first = run(folder, "redteam", "golden.jsonl", *args)
    second = run(folder, "redteam", "golden.jsonl", *args)
    assert first.returncode == 1, first.stdout + first.stderr
    found = json.loads(first.stdout)
    assert "after 0s" in json.dumps(found["violations"])  # the loop waited nothing at all
    assert first.stdout == second.stdout


def test_a_rehearsal_twice_prints_the_same_matrix(folder: Path) -> None:
    first = run(folder, "rehearse", "golden.jsonl", "--entrypoint", "loops:good", "--quiet")
    second = run(folder, "rehearse", "golden.jsonl", "--entrypoint", "loops:good", "--quiet")
    assert first.returncode == 0, first.stdout + first.stderr
    assert json.loads(first.stdout)["ok"] is True
    assert first.stdout == second.stdout
