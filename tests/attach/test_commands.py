"""The commands attach to a program with no faultdeck in it: ``record`` then ``replay``, and
``replay --faults`` on a virtual clock, through the real command line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.support.children import child_env
from tests.support.fake_upstream import Upstream

EXE = str(Path(sys.executable).with_name("faultdeck"))
KEY = "sk-test-0123456789abcdefghijklmnopqrstuvwxyz"
AGENT = """
import openai

reply = openai.OpenAI(max_retries=2).chat.completions.create(
    model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}]
)
print(reply.choices[0].message.content)
"""


def faultdeck(*args: str, cwd: Path, base: str) -> subprocess.CompletedProcess[str]:
    env = child_env(OPENAI_BASE_URL=f"{base}/v1", OPENAI_API_KEY=KEY)
    return subprocess.run(
        [EXE, *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=120, check=False
    )


def test_replay_with_faults_puts_the_programs_own_waits_on_a_virtual_clock(
    tmp_path: Path,
) -> None:
    (tmp_path / "agent.py").write_text(AGENT, "utf-8")
    agent = ["--", sys.executable, "agent.py"]
    with Upstream() as upstream:
        base = upstream.url
        recorded = faultdeck("record", "run.jsonl", *agent, cwd=tmp_path, base=base)
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    assert "recorded 1 call (1 live) into run.jsonl" in recorded.stdout
    plan = tmp_path / "quota.json"
    plan.write_text(json.dumps({"faults": [{"fault": "quota", "retry_after": 30, "at": 1}]}))
    done = faultdeck(
        "replay",
        "run.jsonl",
        "--faults",
        str(plan),
        "--format",
        "json",
        *agent,
        cwd=tmp_path,
        base=base,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    said, _, out = done.stdout.partition("\n")  # the program's line, then the command's JSON
    assert said == "Hello from the fake upstream."
    report = json.loads(out)["reports"][0]
    # The SDK honoured the Retry-After with its own sleep, which the clock took, once.
    assert report["sleeps"] == [30.0]
    assert (report["faults"], report["used"], report["live"]) == (1, 1, 0)
