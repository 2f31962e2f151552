"""The bootstrap: a program that never imports faultdeck gets its deck at start-up.

Each program is a child Python started as the command line starts it (the bootstrap's
folder first on PYTHONPATH, ``FAULTDECK_BOOTSTRAP=1``), against the fake LLM upstream on
127.0.0.1; the replays run with the upstream stopped.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import faultdeck as fd
from tests.support.children import child_env, run
from tests.support.fake_upstream import Upstream

BOOTSTRAP = str(Path(fd.__file__).parent / "_bootstrap")
KEY = "sk-test-0123456789abcdefghijklmnopqrstuvwxyz"

AGENT = """
import openai

client = openai.OpenAI(max_retries={retries})
reply = client.chat.completions.create(
    model="gpt-4o-mini", messages=[{{"role": "user", "content": "hi"}}]
)
print(reply.choices[0].message.content)
"""

PARENT = """
import subprocess, sys
import openai

child = "import httpx; print(httpx.get({models!r}).status_code)"
done = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True)
print(done.stdout.strip())
sys.stderr.write(done.stderr)
reply = openai.OpenAI().chat.completions.create(
    model="gpt-4o-mini", messages=[{{"role": "user", "content": "hi"}}]
)
print(reply.choices[0].message.content)
"""


@pytest.fixture
def upstream() -> Iterator[Upstream]:
    with Upstream() as up:
        yield up


def booted(cassette: Path, mode: str, base: str, **extra: str) -> dict[str, str]:
    """The environment the command line gives a program it runs."""
    env = child_env(
        FAULTDECK_BOOTSTRAP="1",
        FAULTDECK_CASSETTE=str(cassette),
        FAULTDECK_MODE=mode,
        FAULTDECK_REPORT=str(cassette.with_suffix(".report.json")),
        OPENAI_BASE_URL=f"{base}/v1",
        OPENAI_API_KEY=KEY,
        **extra,
    )
    env["PYTHONPATH"] = os.pathsep.join((BOOTSTRAP, env["PYTHONPATH"]))
    return env


def report(cassette: Path) -> dict[str, object]:
    return dict(json.loads(cassette.with_suffix(".report.json").read_bytes()))


def test_an_unmodified_program_records_then_replays_offline(
    tmp_path: Path, upstream: Upstream
) -> None:
    agent = tmp_path / "agent.py"
    agent.write_text(AGENT.format(retries=0), "utf-8")
    cassette, base = tmp_path / "run.jsonl", upstream.url
    recorded = run([sys.executable, str(agent)], env=booted(cassette, "record", base))
    assert recorded.returncode == 0, recorded.stderr
    assert recorded.stdout == "Hello from the fake upstream.\n"
    assert report(cassette)["live"] == 1
    assert KEY not in cassette.read_text("utf-8")
    upstream.stop()
    replayed = run([sys.executable, str(agent)], env=booted(cassette, "replay", base))
    assert (replayed.returncode, replayed.stdout) == (0, recorded.stdout), replayed.stderr
    assert (report(cassette)["used"], report(cassette)["live"]) == (1, 0)


def test_its_waits_follow_the_virtual_clock(tmp_path: Path, upstream: Upstream) -> None:
    agent = tmp_path / "agent.py"
    agent.write_text(AGENT.format(retries=2), "utf-8")
    cassette, base = tmp_path / "run.jsonl", upstream.url
    assert run([sys.executable, str(agent)], env=booted(cassette, "record", base)).returncode == 0
    upstream.stop()
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"faults": [{"fault": "quota", "retry_after": 30, "at": 1}]}))
    env = booted(cassette, "replay", base, FAULTDECK_CLOCK="virtual", FAULTDECK_FAULTS=str(plan))
    rehearsed = run([sys.executable, str(agent)], env=env, timeout=20)
    assert rehearsed.returncode == 0, rehearsed.stderr
    assert rehearsed.stdout == "Hello from the fake upstream.\n"
    assert report(cassette)["sleeps"] == [30.0]  # the SDK's own sleep, once


def test_only_the_process_it_started_records(tmp_path: Path, upstream: Upstream) -> None:
    agent = tmp_path / "parent.py"
    agent.write_text(PARENT.format(models=f"{upstream.url}/v1/models"), "utf-8")
    cassette = tmp_path / "run.jsonl"
    done = run([sys.executable, str(agent)], env=booted(cassette, "record", upstream.url))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["200", "Hello from the fake upstream."]
    assert report(cassette)["live"] == 1
    said = [line for line in done.stderr.splitlines() if "only that one records" in line]
    assert len(said) == 1
    assert "was started by the recorded program" in said[0]


def test_a_python_without_faultdeck_runs_the_program_and_says_why_once(
    tmp_path: Path, upstream: Upstream
) -> None:
    # The interpreter the venv was made from: faultdeck is installed in the venv only.
    other = str(Path(sys.base_prefix) / "bin" / "python3")
    probe = run([other, "-c", "import faultdeck"], env=child_env(PYTHONPATH=""))
    assert probe.returncode != 0, f"{other} imports faultdeck: this test needs one that cannot"
    env = booted(tmp_path / "run.jsonl", "record", upstream.url)
    env["PYTHONPATH"] = BOOTSTRAP  # the bootstrap, and no faultdeck to import
    done = run([other, "-c", "print('ran')"], env=env)
    assert (done.returncode, done.stdout) == (0, "ran\n")
    lines = done.stderr.splitlines()
    assert len(lines) == 1
    assert "cannot import faultdeck" in lines[0]
    assert "install faultdeck in the program's Python" in lines[0]


def test_a_deck_that_cannot_open_stops_the_program_before_it_calls(tmp_path: Path) -> None:
    env = booted(tmp_path / "missing.jsonl", "replay", "http://127.0.0.1:9")
    done = run([sys.executable, "-c", "print('ran')"], env=env)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.startswith("faultdeck: ")
    assert "missing.jsonl" in done.stderr
    assert len(done.stderr.splitlines()) == 1


WIRED = """
import httpx2
import openai

import faultdeck as fd

deck = fd.Deck.from_env()
http = httpx2.Client(transport=fd.http.Transport(deck, httpx=httpx2))
client = openai.OpenAI(max_retries=0, http_client=http)
reply = client.chat.completions.create(
    model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}]
)
print(reply.choices[0].message.content, deck is fd.Deck.from_env())
"""


def test_a_program_that_wires_its_own_deck_records_each_call_once(
    tmp_path: Path, upstream: Upstream
) -> None:
    agent = tmp_path / "wired.py"
    agent.write_text(WIRED, "utf-8")
    cassette = tmp_path / "run.jsonl"
    done = run([sys.executable, str(agent)], env=booted(cassette, "record", upstream.url))
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Hello from the fake upstream. True\n"
    assert report(cassette)["live"] == 1
    recorded = [line for line in cassette.read_text("utf-8").splitlines() if '"seq"' in line]
    assert len(recorded) == 1
