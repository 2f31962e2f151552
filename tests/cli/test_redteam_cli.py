"""``faultdeck redteam`` run as a user runs it: exit codes, the plan file, the pytest test it
prints (run for real), progress on stderr, bad input, Hypothesis missing."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import faultdeck as fd
from faultdeck._rehearse.branches import plan_key
from tests.support import GOLDEN, ROOT, SRC
from tests.support.children import child_env
from tests.support.httpbin import httpbin

ENTRY = "examples.workshop.rehearsal"


def run(
    *args: str, cwd: Path, python: tuple[str, ...] = (), **extra: str
) -> subprocess.CompletedProcess[str]:
    """``faultdeck ARGS`` in ``cwd``, with the repository's examples importable (and the
    variables ``extra`` set)."""
    env = child_env(COLUMNS="120", **extra)
    env["PYTHONPATH"] = f"{SRC}:{ROOT}"
    command = [sys.executable, *python] if python else [sys.executable, "-m", "faultdeck"]
    return subprocess.run(
        [*command, *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=300
    )


def test_a_broken_loop_is_a_finding_with_its_plan_file_and_its_test(tmp_path: Path) -> None:
    done = run("redteam", str(GOLDEN), "--entrypoint", f"{ENTRY}:drops_partial_work", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert "✗ a plan of 1 fault breaks the loop" in done.stdout
    assert "quota at model chat (call 2)" in done.stdout
    assert "partial_work: op 'plan'" in done.stdout
    assert "@pytest.mark.faultdeck(" in done.stdout
    assert "assert_invariants(" in done.stdout
    assert "replays, 1 finding" in done.stderr  # the meter's last line (not a terminal)
    plan = fd.FaultPlan.load(tmp_path / "redteam-plan.json")
    assert [f.describe() for f in plan.faults] == ["quota"]
    assert plan.faults[0].selector.nth == 2


def test_the_printed_test_fails_on_the_broken_loop_and_passes_on_the_good_one(
    tmp_path: Path,
) -> None:
    done = run(
        "redteam", str(GOLDEN), "--entrypoint", f"{ENTRY}:drops_partial_work",
        "--format", "json", "--quiet", "--out", "plan.json", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 1
    assert done.stderr == ""
    found = json.loads(done.stdout)
    assert found["invariants"] == ["partial_work"]
    assert found["plan_file"] == "plan.json"
    (tmp_path / "test_broken.py").write_text(found["pytest"], "utf-8")
    good = found["pytest"].replace("drops_partial_work as entrypoint", "good as entrypoint")
    (tmp_path / "test_fixed.py").write_text(good, "utf-8")
    pytest_run = ("-m", "pytest", "-q", "-p", "no:cacheprovider")
    broken = run("test_broken.py", cwd=tmp_path, python=pytest_run)
    assert broken.returncode == 1
    assert "partial_work" in broken.stdout
    fixed = run("test_fixed.py", cwd=tmp_path, python=pytest_run)
    assert fixed.returncode == 0, fixed.stdout


def test_the_good_loop_exits_0_and_writes_nothing(tmp_path: Path) -> None:
    done = run(
        "redteam", str(GOLDEN), "--entrypoint", f"{ENTRY}:good", "--budget", "60", cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert "no plan broke an invariant" in done.stdout
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("missing.jsonl", "--entrypoint", f"{ENTRY}:good"), "missing.jsonl"),
        ((str(GOLDEN),), "give either --entrypoint"),
        ((str(GOLDEN), "--entrypoint", f"{ENTRY}:nope"), "has no 'nope'"),
        ((str(GOLDEN), "--entrypoint", f"{ENTRY}:good", "--budget", "0"), "--budget"),
        ((str(GOLDEN), "--entrypoint", f"{ENTRY}:good", "--out", "no/such/p.json"), "--out"),
    ],
)
def test_bad_input_is_one_line_exit_2_and_nothing_written(
    tmp_path: Path, args: tuple[str, ...], said: str
) -> None:
    done = run("redteam", *args, cwd=tmp_path)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("faultdeck: error: ")
    assert said in lines[0]
    assert list(tmp_path.iterdir()) == []


def test_without_hypothesis_it_says_what_to_install(tmp_path: Path) -> None:
    # An import of a module set to None in sys.modules fails, as if it were not installed.
    code = (
        "import sys; sys.modules['hypothesis'] = None\n"
        "from faultdeck.cli import main\n"
        f"sys.exit(main(['redteam', {str(GOLDEN)!r}, '--entrypoint', '{ENTRY}:good']))\n"
    )
    done = run(cwd=tmp_path, python=("-c", code))
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "faultdeck: error: redteam needs hypothesis: pip install 'faultdeck[redteam]'"
    )


def test_a_command_is_searched_and_pinned_with_rehearse(tmp_path: Path) -> None:
    agent = tmp_path / "agent.py"
    agent.write_text(
        "import faultdeck as fd\n"
        "from examples.workshop import broken\n"
        "from faultdeck.workshop import POLICY, Workshop\n"
        "with fd.Deck.from_env() as deck:\n"
        "    Workshop(deck).run(POLICY, clock=deck.clock, runner=broken.retry_on_quota)\n",
        "utf-8",
    )
    args = ("--budget", "20", "--quiet", "--", sys.executable, str(agent))
    done = run("redteam", str(GOLDEN), *args, cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert "call_budget" in done.stdout
    assert f"pin it with: faultdeck rehearse {GOLDEN} --faults redteam-plan.json" in done.stdout
    again = run(
        "rehearse", str(GOLDEN), "--faults", "redteam-plan.json", "--quiet",
        "--", sys.executable, str(agent), cwd=tmp_path,
    )  # fmt: skip
    assert again.returncode == 1
    assert "call_budget" in again.stdout


def test_the_test_written_names_its_cassette_from_its_folder_and_the_judging_policy(
    tmp_path: Path,
) -> None:
    (tmp_path / "judging.py").write_text(
        "import faultdeck as fd\n\nSTRICT = fd.Policy(max_total_wait=1)\n", "utf-8"
    )
    tests = tmp_path / "tests"
    tests.mkdir()
    done = run(
        "redteam", str(GOLDEN), "--entrypoint", f"{ENTRY}:drops_partial_work",
        "--policy", "judging:STRICT", "--test", "tests/test_pinned.py",
        "--format", "json", "--quiet", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    found = json.loads(done.stdout)
    assert found["policy"] == "judging:STRICT (--policy)"
    assert found["test_file"] == "tests/test_pinned.py"
    written = (tests / "test_pinned.py").read_text("utf-8")
    assert written == found["pytest"]
    assert "from judging import STRICT as POLICY" in written
    expected = os.path.relpath(GOLDEN, tests)
    assert f"cassette={expected!r}," in written
    # The test runs from its own folder: the marker finds the cassette from there.
    pytest_run = ("-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_pinned.py")
    pinned = run(cwd=tmp_path, python=pytest_run)
    assert pinned.returncode == 1, pinned.stdout
    assert "partial_work" in pinned.stdout


def test_rehearse_says_which_policy_judged(tmp_path: Path) -> None:
    (tmp_path / "judging.py").write_text(
        "import faultdeck as fd\n\nPOLICY = fd.Policy(max_total_wait=1)\n", "utf-8"
    )
    entry = ("--entrypoint", f"{ENTRY}:good", "--faults", str(tmp_path / "plan.json"))
    (tmp_path / "plan.json").write_text('{"faults": [{"fault": "timeout", "on": {"nth": 1}}]}')
    given = run("rehearse", str(GOLDEN), *entry, "--policy", "judging:POLICY", cwd=tmp_path)
    assert "judged by judging:POLICY (--policy)" in given.stdout, given.stderr
    module = run("rehearse", str(GOLDEN), *entry, "--format", "json", cwd=tmp_path)
    assert json.loads(module.stdout)["policy"] == f"{ENTRY}:POLICY, the entrypoint module's"


WEATHER_AGENT = """
import os
import time

import requests

base = os.environ["WEATHER_URL"]
try:
    answer = requests.get(f"{base}/anything/weather", params={"city": "Paris"}, timeout=10)
    answer.raise_for_status()
except requests.RequestException:
    time.sleep(60)  # a minute's wait, past the policy's bound, then the backup service
    answer = requests.get(f"{base}/anything/backup", params={"city": "Paris"}, timeout=10)
print(answer.json()["url"])
"""


def test_a_program_off_the_path_is_judged_on_its_branch_then_offline(tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text(WEATHER_AGENT, "utf-8")
    program = ("--", sys.executable, "agent.py")
    search = ("redteam", "base.jsonl", "--budget", "8", "--quiet")
    with httpbin() as url:  # the weather service and its backup, on 127.0.0.1
        recorded = run("record", "base.jsonl", *program, cwd=tmp_path, WEATHER_URL=url)
        assert recorded.returncode == 0, recorded.stderr
        branching = run(
            *search, "--branches", "record", "--format", "json", *program,
            cwd=tmp_path, WEATHER_URL=url,
        )  # fmt: skip
    assert branching.returncode == 1, branching.stderr
    found = json.loads(branching.stdout)
    assert found["invariants"] == ["bounded_waiting"]
    assert found["plan"]["faults"] == [
        {
            "fault": "quota",
            "code": "rate_limit_exceeded",
            "on": {"kind": "http", "name": "GET /anything/weather", "nth": 1},
        }
    ]
    digest = hashlib.sha256(plan_key(found["plan"])).hexdigest()[:12]
    assert found["branch"] == os.path.join("base.branches", f"redteam-{digest}.jsonl")
    branch = fd.load(tmp_path / found["branch"])
    assert branch.header.extra["parent"]["branch"] == {
        "cell": "redteam",
        "seq": None,
        "plan": found["plan"],
        "left_at": 2,
    }
    assert [e.name for e in branch.entries] == ["GET /anything/weather", "GET /anything/backup"]
    assert [p.name for p in (tmp_path / "base.branches").iterdir()] == [f"redteam-{digest}.jsonl"]

    # The services are stopped: the next search judges the plan on its branch, offline.
    again = run(*search, *program, cwd=tmp_path, WEATHER_URL=url)
    assert again.returncode == 1, again.stderr
    assert "    quota at http GET /anything/weather (call 1)\n" in again.stdout
    assert "bounded_waiting: waited 60s" in again.stdout
    assert f"judged on its branch {found['branch']}\n" in again.stdout
    assert "(1 plan replayed, seed 0)" in again.stdout  # nothing recorded
    off = run(
        *search, "--branches", "off", "--budget", "2", *program, cwd=tmp_path, WEATHER_URL=url
    )
    assert off.returncode == 0, off.stderr
    assert "no plan broke an invariant" in off.stdout
