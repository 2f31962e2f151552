"""``faultdeck fork``, and what ``diff`` and ``show`` say of a fork, run as a user runs them."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import faultdeck as fd
from tests.support.children import child_env

EXE = str(Path(sys.executable).parent / "faultdeck")

AGENT = """
import sys
from pathlib import Path
import faultdeck as fd

deck = fd.Deck.from_env()
variant = sys.argv[1]
ran = Path(sys.argv[2])

def live(value):
    def run():
        with ran.open("a") as fh:
            fh.write(f"{value}\\n")
        return value
    return run

for n in (1, 2, 3):
    deck.call("tool", "step", {"n": n}, live(n))
deck.call("tool", "try", {"variant": variant}, live(variant))
deck.call("tool", "done", {}, live("done"))
if variant == "crash":
    sys.exit(3)
"""


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [EXE, *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=child_env(COLUMNS="160"),
        timeout=120,
        check=False,
    )


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "demo"\n', "utf-8")
    (tmp_path / "agent.py").write_text(AGENT, "utf-8")
    (tmp_path / "runs").mkdir()
    done = run("record", "runs/base.jsonl", "--", *program("a"), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    (tmp_path / "ran.txt").unlink()
    return tmp_path


def program(variant: str) -> list[str]:
    return [sys.executable, "agent.py", variant, "ran.txt"]


def fork(project: Path, at: int, new: str, variant: str) -> subprocess.CompletedProcess[str]:
    return run(
        "fork", "runs/base.jsonl", "--at", str(at), "-o", new, "--", *program(variant), cwd=project
    )


def test_fork_replays_the_first_calls_and_records_the_rest(project: Path) -> None:
    before = digest(project / "runs" / "base.jsonl")
    done = fork(project, 3, "runs/explore.jsonl", "b")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (
        "forked runs/base.jsonl at seq 3 into runs/explore.jsonl: 3 calls replayed, 2 live"
        in done.stdout
    )
    assert (project / "ran.txt").read_text("utf-8").split() == ["b", "done"]  # 1-3 replayed
    assert digest(project / "runs" / "base.jsonl") == before
    recording = fd.load(project / "runs" / "explore.jsonl")
    assert [e.value for e in recording.entries] == [1, 2, 3, "b", "done"]
    assert recording.header.extra["parent"] == {
        "path": "runs/base.jsonl",
        "at": 3,
        "sha256": before,
    }
    assert not (project / "runs" / "explore.partial.jsonl").exists()


def test_diff_of_a_parent_and_its_fork_starts_at_the_fork_point(project: Path) -> None:
    assert fork(project, 3, "runs/explore.jsonl", "b").returncode == 0
    done = run("diff", "runs/base.jsonl", "runs/explore.jsonl", cwd=project)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "B forked from A at seq 3: the 3 calls up to it are shared" in done.stdout
    assert (
        "first divergence at seq 4 (right after the fork at seq 3, 3 shared before it)"
        in done.stdout
    )
    assert "2 aligned calls: 1 same, 1 changed" in done.stdout
    data = json.loads(
        run("diff", "runs/explore.jsonl", "runs/base.jsonl", "--format", "json", cwd=project).stdout
    )
    assert {k: data["forked"][k] for k in ("fork", "at", "intact", "shared")} == {
        "fork": "a",
        "at": 3,
        "intact": True,
        "shared": 3,
    }
    # Two forks of one parent are siblings: neither forked from the other, all is compared.
    assert fork(project, 3, "runs/again.jsonl", "b").returncode == 0
    done = run("diff", "runs/explore.jsonl", "runs/again.jsonl", cwd=project)
    assert done.returncode == 0, done.stdout
    assert "no divergence: 5 calls agree" in done.stdout
    assert "forked" not in done.stdout


def test_diff_compares_everything_once_the_parent_changed(project: Path) -> None:
    assert fork(project, 4, "runs/explore.jsonl", "a").returncode == 0
    done = run("diff", "runs/base.jsonl", "runs/explore.jsonl", cwd=project)
    assert done.returncode == 0, done.stdout
    assert "no divergence after the fork at seq 4: 1 call agrees, 4 shared before it" in done.stdout
    assert run("record", "runs/base.jsonl", "--", *program("z"), cwd=project).returncode == 0
    done = run("diff", "runs/base.jsonl", "runs/explore.jsonl", cwd=project)
    assert done.returncode == 1
    assert "B forked from A at seq 4, but A changed since" in done.stdout
    assert "compared from the start" in done.stdout


def test_show_draws_the_lineage(project: Path) -> None:
    assert fork(project, 3, "runs/one.jsonl", "b").returncode == 0
    done = run(
        "fork",
        "runs/one.jsonl",
        "--at",
        "4",
        "-o",
        "runs/two.jsonl",
        "--",
        *program("b"),
        cwd=project,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = run("show", "runs/two.jsonl", cwd=project).stdout.splitlines()
    start = lines.index("lineage:")
    assert lines[start + 1 : start + 4] == [
        "  runs/base.jsonl",
        "  └─ runs/one.jsonl forked at seq 3",
        "     └─ runs/two.jsonl forked at seq 4 (this cassette)",
    ]
    (project / "runs" / "base.jsonl").unlink()
    data = json.loads(run("show", "runs/two.jsonl", "--format", "json", cwd=project).stdout)
    assert data["lineage"][0] == {"path": "runs/base.jsonl", "forked_at": None, "state": "missing"}
    assert [link["state"] for link in data["lineage"]] == ["missing", "found", "found"]
    shown = run("show", "runs/two.jsonl", cwd=project).stdout
    assert "  runs/base.jsonl  (not found: the lineage stops here)" in shown


def test_show_of_a_cassette_that_is_no_fork_draws_no_lineage(project: Path) -> None:
    done = run("show", "runs/base.jsonl", cwd=project)
    assert done.returncode == 0
    assert "lineage" not in done.stdout
    assert "lineage" not in json.loads(
        run("show", "runs/base.jsonl", "--format", "json", cwd=project).stdout
    )


def test_a_failed_run_leaves_the_existing_fork_as_it_was(project: Path) -> None:
    assert fork(project, 3, "runs/explore.jsonl", "b").returncode == 0
    before = digest(project / "runs" / "explore.jsonl")
    done = fork(project, 3, "runs/explore.jsonl", "crash")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "the program exited with 3" in done.stdout
    assert "runs/explore.jsonl was left as it was; the new recording is in" in done.stdout
    assert digest(project / "runs" / "explore.jsonl") == before
    assert fd.load(project / "runs" / "explore.partial.jsonl").header.extra["parent"]["at"] == 3


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (
            ["runs/base.jsonl", "--at", "6"],
            "--at 6 is beyond the calls of runs/base.jsonl (seq 1 to 5)",
        ),
        (
            ["runs/base.jsonl", "--at", "-1"],
            "Invalid value for '--at': -1 is not in the range x>=0",
        ),
        (["runs/missing.jsonl", "--at", "1"], "runs/missing.jsonl: no such cassette"),
        (["runs/base.jsonl", "--at", "1", "-o", "runs/./base.jsonl"], "is CASSETTE itself"),
        (["runs/base.jsonl", "-o", "runs/new.jsonl"], "Missing option '--at'"),
        (
            ["runs/base.jsonl", "--at", "1", "--model", "other-model"],
            "seq 2 of runs/base.jsonl, the first call after the fork point, is tool step, "
            "whose recorded request names no model (a JSON body field 'model', or Gemini's "
            "path), so it cannot "
            "be sent to 'other-model'; fork at the seq just before a model request",
        ),
        (["runs/base.jsonl", "--at", "1", "--model", ""], "--model is empty"),
    ],
)
def test_bad_input_is_one_line_exit_2_and_writes_nothing(
    project: Path, args: list[str], says: str
) -> None:
    if "-o" not in args:
        args = [*args, "-o", "runs/new.jsonl"]
    before = {p: digest(p) for p in sorted(project.rglob("*")) if p.is_file()}
    done = run("fork", *args, "--", *program("b"), cwd=project)
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("faultdeck: error: ")
    assert says in lines[0]
    assert {p: digest(p) for p in sorted(project.rglob("*")) if p.is_file()} == before
    assert not os.path.exists(project / "ran.txt")


def test_help_has_an_example(project: Path) -> None:
    done = run("fork", "--help", cwd=project)
    assert done.returncode == 0
    assert "faultdeck fork runs/base.jsonl --at 3 -o runs/explore.jsonl --" in done.stdout
