"""The ``faultdeck`` executable, run as a user runs it: exit codes and what it prints."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

import faultdeck as fd
from faultdeck._keys.redact import patterns
from tests.support import GOLDEN, ROOT
from tests.support.calls import returns
from tests.support.children import child_env
from tests.support.plants import one_per_pattern

EXE = str(Path(sys.executable).parent / "faultdeck")


def run(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    full_env = child_env(COLUMNS="120", **(env or {}))
    return subprocess.run(
        [EXE, *args], capture_output=True, text=True, cwd=cwd, env=full_env, timeout=120
    )


def record(path: Path, calls: Sequence[tuple[str, Mapping[str, object], object]]) -> None:
    with fd.Deck(path, mode="record") as deck:
        for name, args, out in calls:
            deck.call("tool", name, args, returns(out))


EIGHT = [("step", {"n": i, "top_k": 5}, {"ok": i}) for i in range(1, 9)]


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Path, Path]:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    record(a, EIGHT)
    changed = list(EIGHT)
    changed[4] = ("step", {"n": 5, "top_k": 10}, {"ok": 5})
    record(b, changed)
    return a, b


def test_diff_names_the_diverging_call_and_field(pair: tuple[Path, Path]) -> None:
    a, b = pair
    done = run("diff", str(a), str(b))
    assert done.returncode == 1, done.stderr
    assert "first divergence at seq 5 (after 4 agreeing calls)" in done.stdout
    assert "args.top_k 5 → 10" in done.stdout


def test_diff_of_identical_runs_exits_0(tmp_path: Path) -> None:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    record(a, [("t", {"q": 1, "trace_id": "x1"}, 1)])
    record(b, [("t", {"q": 1, "trace_id": "y2"}, 1)])
    assert run("diff", str(a), str(b)).returncode == 1
    done = run("diff", str(a), str(b), "--ignore", "trace_id")
    assert done.returncode == 0, done.stdout
    assert "no divergence" in done.stdout


def test_diff_json_and_html(pair: tuple[Path, Path], tmp_path: Path) -> None:
    a, b = pair
    data = json.loads(run("diff", str(a), str(b), "--format", "json").stdout)
    assert data["identical"] is False
    assert data["first"]["seq_a"] == 5
    assert data["first"]["changes"] == [{"path": "args.top_k", "a": 5, "b": 10}]
    page = tmp_path / "diff.html"
    done = run("diff", str(a), str(b), "--format", "html", "-o", str(page))
    assert done.returncode == 1
    html = page.read_text("utf-8")
    assert html.startswith("<!DOCTYPE html>")
    assert "http://" not in html
    assert "https://" not in html
    assert "<script" not in html


AGENT = """
import os, random, sys
import faultdeck as fd
deck = fd.Deck.from_env()
coin = random.Random(int(os.environ.get("FAULTDECK_RUN", "0")) if "--coin" in sys.argv else 0)
deck.call("tool", "plan", {"task": "fix"}, lambda: {"steps": 2})
side = "heads" if coin.random() < 0.5 else "tails"
deck.call("tool", "flip", {"side": side}, lambda: side)
deck.call("tool", "done", {}, lambda: True)
"""


@pytest.fixture
def agent(tmp_path: Path) -> Path:
    path = tmp_path / "agent.py"
    path.write_text(AGENT, "utf-8")
    return path


def test_record_then_replay_a_program(tmp_path: Path, agent: Path) -> None:
    cassette = tmp_path / "run.jsonl"
    done = run("record", str(cassette), "--", sys.executable, str(agent), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "recorded 3 calls" in done.stdout
    done = run("replay", str(cassette), "--", sys.executable, str(agent), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3 used, 0 live, 0 unused, 0 repeated, 0 missed" in done.stdout


def test_replay_repeat_on_a_deterministic_program(tmp_path: Path, agent: Path) -> None:
    cassette = tmp_path / "run.jsonl"
    run("record", str(cassette), "--", sys.executable, str(agent), cwd=tmp_path)
    done = run("replay", str(cassette), "--repeat", "5", "--", sys.executable, str(agent))
    assert done.returncode == 0, done.stdout
    assert "5/5 replays" in done.stdout
    assert "pass rate 1.00" in done.stdout
    assert "flaky" not in done.stdout


def test_replay_repeat_reports_flakiness_and_the_first_differing_call(
    tmp_path: Path, agent: Path
) -> None:
    cassette = tmp_path / "run.jsonl"
    program = [sys.executable, str(agent), "--coin"]
    run("record", str(cassette), "--", *program, cwd=tmp_path)
    # Runs 0 and 2 of 4 take the recorded side, 1 and 3 the other one.
    done = run("replay", str(cassette), "--repeat", "4", "--", *program)
    assert done.returncode == 1
    assert "flaky" in done.stdout
    assert "first call that differed between runs: seq 2" in done.stdout
    assert "tool flip" in done.stdout
    passed = int(done.stdout.split("/4")[0].split()[-1])
    assert 0 < passed < 4
    data = json.loads(
        run("replay", str(cassette), "--repeat", "4", "--format", "json", "--", *program).stdout
    )
    assert data["flaky"] is True
    assert data["first_difference"]["seq"] == 2


def test_replay_with_a_fault_plan(tmp_path: Path, agent: Path) -> None:
    cassette = tmp_path / "run.jsonl"
    run("record", str(cassette), "--", sys.executable, str(agent), cwd=tmp_path)
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"faults": [{"fault": "timeout", "at": 2}]}), "utf-8")
    done = run("replay", str(cassette), "--faults", str(plan), "--", sys.executable, str(agent))
    assert done.returncode == 1, "an unhandled fault fails the program"
    assert "the program exited with 1" in done.stdout


def test_show_text_and_json(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    deck = fd.Deck(path, mode="record", faults=[fd.faults.quota(retry_after=2).at(seq=2)])
    with deck:
        deck.call("tool", "search", {"q": "x"}, lambda: [1, 2, 3])
        with pytest.raises(fd.QuotaExhausted):
            deck.call("model", "chat", {}, lambda: None)
        deck.abandon()
    done = run("show", str(path))
    assert done.returncode == 0
    assert "search" in done.stdout
    assert "QuotaExhausted (status 429, retry_after 2.0, code rate_limit_exceeded)" in done.stdout
    assert "fault: quota" in done.stdout
    assert "interrupted: the run stopped after 2 calls without closing" in done.stdout
    data = json.loads(run("show", str(path), "--format", "json").stdout)
    assert data["interrupted"] is True
    assert [c["seq"] for c in data["calls"]] == [1, 2]


def test_show_places_calls_a_later_append_run_added_as_diff_does(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    with fd.Deck(path, mode="record") as deck:
        deck.call("tool", "search", {"q": "a"}, returns(1))
        deck.call("tool", "search", {"q": "b"}, returns(2))
    with fd.Deck(path, mode="append") as deck:
        deck.call("tool", "search", {"q": "a"}, returns(1))
        deck.call("tool", "search", {"q": "new"}, returns(3))  # added after seq 1
    lines = run("show", str(path)).stdout.splitlines()
    rows = [line.split() for line in lines if "tool:" in line]
    assert [row[0] for row in rows] == ["1", "2", "1+1"]  # no seq shown twice
    assert any(line.startswith("N+k: the k-th call") for line in lines)
    ms = [row[4] for row in rows]
    assert all(len(m.partition(".")[2]) == 1 for m in ms), ms  # one precision


def planted_lines() -> dict[str, str]:
    pieces = {name: plant.text for name, plant in one_per_pattern().items()}
    assert set(pieces) == {p.name for p in patterns()}, "a pattern has no planted secret here"
    return pieces


def test_scan_finds_every_pattern_and_never_prints_the_secret(tmp_path: Path) -> None:
    pieces = planted_lines()
    folder = tmp_path / "cassettes"
    folder.mkdir()
    names = list(pieces)
    (folder / "leaky.jsonl").write_text(
        "".join(json.dumps({"note": f"x {pieces[n]} y"}) + "\n" for n in names), "utf-8"
    )
    done = run("scan", str(tmp_path))
    assert done.returncode == 1
    for number, name in enumerate(names, start=1):
        assert f"leaky.jsonl:{number}: {name}" in done.stdout
    for plant in one_per_pattern().values():
        assert plant.secret not in done.stdout + done.stderr


def test_scan_of_a_clean_cassette_exits_0(pair: tuple[Path, Path]) -> None:
    done = run("scan", str(pair[0]), str(pair[1]))
    assert done.returncode == 0
    assert "no secrets in 2 files" in done.stdout


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["show", "missing.jsonl"], "missing.jsonl: no such cassette"),
        (["show", "corrupt.jsonl"], "corrupt.jsonl:2: not JSON"),
        (["diff", "a.jsonl"], "Missing argument 'B'"),
        (["diff", "a.jsonl", "a.jsonl", "--bogus"], "No such option '--bogus'"),
        (
            ["replay", "a.jsonl", "--faults", "plan.json", "--", "true"],
            "faults[0].fault: unknown fault 'qouta'",
        ),
        (
            ["replay", "a.jsonl", "--", "no-such-program-xyz"],
            "no such program: no-such-program-xyz",
        ),
        (["replay", "a.jsonl"], "give the program to run after --"),
        (["scan", "nowhere"], "no such file or folder: nowhere"),
        (["nonsense"], "No such command 'nonsense'"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, args: list[str], says: str) -> None:
    record(tmp_path / "a.jsonl", [("t", {}, 1)])
    (tmp_path / "corrupt.jsonl").write_text('{"faultdeck": 1}\n{oops\n', "utf-8")
    (tmp_path / "plan.json").write_text('{"faults": [{"fault": "qouta"}]}', "utf-8")
    done = run(*args, cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("faultdeck: error: ")
    assert says in lines[0]
    assert "Traceback" not in done.stderr


def test_debug_shows_the_traceback(tmp_path: Path) -> None:
    done = run("--debug", "show", "missing.jsonl", cwd=tmp_path)
    assert done.returncode == 2
    assert "Traceback" in done.stderr


@pytest.mark.parametrize(
    "command", ["record", "replay", "diff", "show", "scan", "rehearse", "faults", "demo"]
)
def test_help_has_an_example(command: str) -> None:
    done = run(command, "--help")
    assert done.returncode == 0
    if command != "demo":
        assert f"faultdeck {command} " in done.stdout


def test_rehearse_the_workshop_holds(tmp_path: Path) -> None:
    done = run(
        "rehearse", str(GOLDEN), "--entrypoint", "examples.workshop.rehearsal:good", cwd=ROOT
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert (
        "38 cells: 33 held, 0 broke, 0 miss, 0 raised, 5 killed (48 not applicable, not run)"
        in done.stdout
    )
    assert "quota retry-after" in done.stdout
    assert "tool read_file" in done.stdout


@pytest.mark.parametrize(
    ("loop", "invariant"),
    [("retry_on_quota", "no_early_retry"), ("drops_partial_work", "partial_work")],
)
def test_rehearse_exits_1_when_a_broken_loop_breaks_an_invariant(loop: str, invariant: str) -> None:
    spec = f"examples.workshop.rehearsal:{loop}"
    done = run("rehearse", str(GOLDEN), "--entrypoint", spec, "--jobs", "2", cwd=ROOT)
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"{invariant}: op " in done.stdout
    data = json.loads(
        run("rehearse", str(GOLDEN), "--entrypoint", spec, "--format", "json", cwd=ROOT).stdout
    )
    assert data["ok"] is False
    broken = [c for c in data["cells"] if c["status"] == "broke"]
    assert any(v["invariant"] == invariant for c in broken for v in c["violations"])


def test_rehearse_with_one_plan(tmp_path: Path) -> None:
    plan = tmp_path / "quota.toml"
    plan.write_text(
        '[[faults]]\nfault = "quota"\nretry_after = 2\n[faults.on]\nname = "read_file"\nnth = 1\n',
        "utf-8",
    )
    spec = "examples.workshop.rehearsal:good"
    done = run("rehearse", str(GOLDEN), "--entrypoint", spec, "--faults", str(plan), cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 cells: 2 held" in done.stdout


RETRYING_PROGRAM = """
import faultdeck as fd
deck = fd.Deck.from_env()
for n in range(2):
    for attempt in range(3):  # retries a quota error at once: the bug under test
        try:
            deck.call("tool", "fetch", {"n": n}, lambda: n)
            break
        except fd.QuotaExhausted:
            pass
"""


def test_rehearse_a_command(tmp_path: Path) -> None:
    program = tmp_path / "prog.py"
    program.write_text(RETRYING_PROGRAM, "utf-8")
    cassette = tmp_path / "run.jsonl"
    assert run("record", str(cassette), "--", sys.executable, str(program)).returncode == 0
    plan = tmp_path / "plan.json"
    plan.write_text(
        json.dumps({"faults": [{"fault": "quota", "retry_after": 2, "at": 1}]}), "utf-8"
    )
    done = run("rehearse", str(cassette), "--faults", str(plan), "--", sys.executable, str(program))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "no_early_retry" in done.stdout
    held = run("rehearse", str(cassette), "--jobs", "2", "--", sys.executable, str(program))
    assert "cells:" in held.stdout


def test_rehearse_needs_one_way_to_run(tmp_path: Path) -> None:
    done = run("rehearse", str(GOLDEN))
    assert done.returncode == 2
    assert "give either --entrypoint" in done.stderr
    bad = run("rehearse", str(GOLDEN), "--entrypoint", "nope", cwd=ROOT)
    assert bad.returncode == 2
    assert "must look like 'package.module:function'" in bad.stderr
