"""Branches: a cell that leaves the recorded path goes live once from there and is kept as a
branch beside the golden cassette; from then on it replays on its branch, offline."""

from __future__ import annotations

import json
import shutil
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest

import faultdeck as fd
from faultdeck import faults, rehearse
from faultdeck._cassette.reader import load
from faultdeck._cassette.session import file_sha256
from faultdeck._rehearse.branches import StaleBranch
from tests.rehearse.test_rehearse import cell, falls_back
from tests.support import GOLDEN
from tests.support.children import run

PLANS = {"timeout": fd.FaultPlan([faults.timeout().at(seq=3)])}


@pytest.fixture
def golden(tmp_path: Path) -> Path:
    path = tmp_path / "golden.jsonl"
    shutil.copy(GOLDEN, path)
    return path


def test_a_cell_off_the_path_records_its_branch_then_replays_on_it(golden: Path) -> None:
    assert cell(rehearse(falls_back, golden, PLANS), "timeout", None).status == "miss"

    recorded = rehearse(falls_back, golden, PLANS, branches="record")
    judged = cell(recorded, "timeout", None)
    assert judged.status == "held", judged
    branch = golden.parent / "golden.branches" / "timeout.jsonl"
    parent = load(branch).header.extra["parent"]
    assert parent["at"] == 3
    assert parent["sha256"] == file_sha256(str(golden))
    assert parent["branch"] == {
        "cell": "timeout",
        "seq": None,
        "plan": PLANS["timeout"].to_json(),
        "left_at": 4,
    }
    names = [e.name for e in load(branch).entries]
    assert names[3] == "search_web"  # where the fault led: recorded live, once

    again = rehearse(falls_back, golden, PLANS)  # branches replay by default, offline
    assert cell(again, "timeout", None) == judged
    assert again.ok
    off = rehearse(falls_back, golden, PLANS, branches="off")
    assert cell(off, "timeout", None).status == "miss"


def test_a_branch_of_an_earlier_cassette_is_stale_and_not_used(golden: Path) -> None:
    rehearse(falls_back, golden, PLANS, branches="record")
    golden.write_bytes(golden.read_bytes().replace(b'{"', b'{ "', 1))  # changed since
    with pytest.warns(StaleBranch, match="timeout.jsonl: a branch of an earlier"):
        matrix = rehearse(falls_back, golden, PLANS)
    assert cell(matrix, "timeout", None).status == "miss"


def test_a_file_that_is_no_branch_of_this_cassette_is_one_line(golden: Path) -> None:
    folder = golden.parent / "golden.branches"
    folder.mkdir()
    shutil.copy(GOLDEN, folder / "stray.jsonl")
    with pytest.raises(fd.ConfigError, match=r"stray.jsonl: not a branch of .*move it out"):
        rehearse(falls_back, golden, PLANS)


PROGRAM = """
import faultdeck as fd

deck = fd.Deck.from_env()
with deck:
    deck.call("model", "chat", {"q": "plan"}, lambda: "a plan")
    try:
        deck.call("tool", "search", {"q": "docs"}, lambda: ["doc"], remote=True)
    except fd.TransientError:
        deck.call("tool", "cache", {"q": "docs"}, lambda: ["cached doc"])  # the fallback
    deck.call("model", "chat", {"q": "answer"}, lambda: "an answer")
"""


def timeout_cell(folder: Path, source: str, *options: str) -> dict[str, Any]:
    """The cell of ``rehearse --faults timeout.json OPTIONS -- python agent.py`` in
    ``folder``, the program ``source`` recorded there first (once) with its search timed out."""
    cli = [sys.executable, "-m", "faultdeck"]
    program = ["--", sys.executable, "agent.py"]
    plan = folder / "timeout.json"
    if not plan.exists():
        (folder / "agent.py").write_text(source, "utf-8")
        assert run([*cli, "record", "base.jsonl", *program], cwd=folder).returncode == 0
        fault = {"fault": "timeout", "on": {"kind": "tool", "name": "search"}}
        plan.write_text(json.dumps({"faults": [fault]}))
    rehearse = [*cli, "rehearse", "base.jsonl", "--faults", str(plan), "--format", "json"]
    done = run([*rehearse, *options, *program], cwd=folder)
    (found,) = [c for c in json.loads(done.stdout)["cells"] if c["label"] == "timeout"]
    return dict(found)


def test_a_program_records_its_branch_and_replays_it_offline(tmp_path: Path) -> None:
    def status(*options: str) -> str:
        return str(timeout_cell(tmp_path, PROGRAM, *options)["status"])

    assert status() == "miss"
    assert status("--branches", "record") == "held"
    branch = tmp_path / "base.branches" / "timeout.jsonl"
    assert [e.name for e in load(branch).entries] == ["chat", "search", "cache", "chat"]
    assert status() == "held"  # on the branch, replayed
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert status("--branches", "off") == "miss"


def test_show_lists_the_branches_and_scan_reads_them(golden: Path) -> None:
    rehearse(falls_back, golden, PLANS, branches="record")
    cli = [sys.executable, "-m", "faultdeck"]
    shown = run([*cli, "show", str(golden)], cwd=golden.parent)
    assert shown.returncode == 0, shown.stderr
    assert "branches:" in shown.stdout
    assert "timeout.jsonl: timeout, off the path at seq 4" in shown.stdout
    data = json.loads(run([*cli, "show", str(golden), "--format", "json"]).stdout)
    assert [(b["cell"], b["left_at"], b["state"]) for b in data["branches"]] == [
        ("timeout", 4, "ok")
    ]
    branch = golden.parent / "golden.branches" / "timeout.jsonl"
    planted = "sk-proj-" + "Planted0Branch0Secret0123456789abcdef"
    branch.write_text(branch.read_text("utf-8").replace("search_web", planted), "utf-8")
    scanned = run([*cli, "scan", str(golden)], cwd=golden.parent)
    assert scanned.returncode == 1
    assert "golden.branches/timeout.jsonl" in scanned.stdout
    assert planted not in scanned.stdout


UNREACHABLE = """
import httpx
import faultdeck as fd

deck = fd.Deck.from_env()
with deck:
    deck.call("model", "chat", {"q": "plan"}, lambda: "a plan")
    try:
        deck.call("tool", "search", {"q": "docs"}, lambda: ["doc"], remote=True)
    except fd.TransientError:
        try:  # the fallback asks a service that is down while the branch is recorded
            httpx.get("http://127.0.0.1:9/cache", timeout=5)
        except httpx.HTTPError:
            pass
    deck.call("model", "chat", {"q": "answer"}, lambda: "an answer")
"""


def test_a_branch_whose_live_calls_go_unanswered_is_not_kept(tmp_path: Path) -> None:
    found = timeout_cell(tmp_path, UNREACHABLE, "--branches", "record")
    assert found["status"] == "miss"
    assert found["detail"].endswith(
        "; its branch was not kept: 1 live call got no answer (ConnectError); with the "
        "upstream reachable, rehearse again with --branches record"
    )
    assert sorted(p.name for p in (tmp_path / "base.branches").iterdir()) == []
