"""``--executor ray`` from the command line: a local Ray started and stopped by the command
gives the matrix (and the replays) the local executor gives; without Ray, one line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.support import GOLDEN, ROOT
from tests.support.children import child_env

ENTRY = "examples.workshop.rehearsal:good"
AGENT = """
import faultdeck as fd
deck = fd.Deck.from_env()
with deck:
    deck.call("tool", "plan", {"task": "fix"}, lambda: {"steps": 2})
"""


def faultdeck(*args: str, prelude: str = "") -> subprocess.CompletedProcess[str]:
    code = f"{prelude}\nimport sys\nfrom faultdeck.cli import main\nsys.exit(main())"
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=child_env(RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="0", RAY_AUTH_MODE="disabled"),
        timeout=600,
        check=False,
    )


def test_rehearse_on_a_local_ray_gives_the_local_matrix(tmp_path: Path) -> None:
    local = faultdeck("rehearse", str(GOLDEN), "--entrypoint", ENTRY, "--format", "json", "-q")
    assert local.returncode == 0, local.stderr
    on_ray = faultdeck(
        "rehearse", str(GOLDEN), "--entrypoint", ENTRY, "--executor", "ray", "--jobs", "2",
        "--format", "json", "-q",
    )  # fmt: skip
    assert on_ray.returncode == 0, on_ray.stderr
    assert json.loads(on_ray.stdout) == json.loads(local.stdout)


def test_replay_repeat_on_a_local_ray(tmp_path: Path) -> None:
    agent = tmp_path / "agent.py"
    agent.write_text(AGENT, "utf-8")
    cassette = tmp_path / "run.jsonl"
    recorded = faultdeck("record", str(cassette), "--", sys.executable, str(agent))
    assert recorded.returncode == 0, recorded.stderr
    done = faultdeck(
        "replay", str(cassette), "--repeat", "2", "--executor", "ray", "--format", "json",
        "--", sys.executable, str(agent),
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(done.stdout)
    assert (result["runs"], result["passed"], result["flaky"]) == (2, 2, False)


def test_without_ray_the_executor_says_how_to_install_it() -> None:
    done = faultdeck(
        "rehearse", str(GOLDEN), "--entrypoint", ENTRY, "--executor", "ray",
        prelude="sys_modules = __import__('sys').modules; sys_modules['ray'] = None",
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr == (
        "faultdeck: error: --executor ray needs ray: pip install 'faultdeck[ray]'\n"
    )
