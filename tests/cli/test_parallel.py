"""Many runs at once, and what the command line shows while they go: ``replay --repeat
--jobs`` gives the report one job gives, with its runs really overlapping; progress goes to
stderr (a bar on a terminal, a line when piped, nothing with ``--quiet``), never stdout; and
``rehearse`` takes a folder, a glob or several cassettes, a matrix each and a summary row
each."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support import GOLDEN, ROOT
from tests.support.children import child_env

EXE = str(Path(sys.executable).parent / "faultdeck")
GOOD = "examples.workshop.rehearsal:good"
PROGRESS = re.compile(r"^faultdeck: .*\d+/\d+ (runs|cells)", re.MULTILINE)
"""A progress line, as stderr shows it when it is not a terminal."""

# A program whose path depends on FAULTDECK_RUN (with --coin): runs 0 and 2 of 4 take the
# recorded side, 1 and 3 the other one. With MARKS set, a run writes when it started and
# ended (time.monotonic_ns, one clock for the whole machine), and runs 0 and 1 each wait
# (bounded) for the other to have started: one after the other, run 0 gives up first.
AGENT = """
import os, random, sys, time
import faultdeck as fd
run = os.environ.get("FAULTDECK_RUN", "0")
marks = os.environ.get("MARKS")
if marks:
    start = time.monotonic_ns()
    open(os.path.join(marks, run + ".start"), "w").close()
    partner = {"0": "1", "1": "0"}.get(run)
    for _ in range(600):
        if partner is None or os.path.exists(os.path.join(marks, partner + ".start")):
            break
        time.sleep(0.05)
deck = fd.Deck.from_env()
coin = random.Random(int(run) if "--coin" in sys.argv else 0)
deck.call("tool", "plan", {"task": "fix"}, lambda: {"steps": 2})
side = "heads" if coin.random() < 0.5 else "tails"
deck.call("tool", "flip", {"side": side}, lambda: side)
deck.call("tool", "done", {}, lambda: True)
if marks:
    with open(os.path.join(marks, run + ".marks"), "w") as out:
        out.write(f"{start} {time.monotonic_ns()}")
"""

RETRYING = """
import faultdeck as fd
deck = fd.Deck.from_env()
for n in range(2):
    for attempt in range(3):  # retries a quota error at once
        try:
            deck.call("tool", "fetch", {"n": n}, lambda: n)
            break
        except fd.QuotaExhausted:
            pass
"""


def environ(**extra: str) -> dict[str, str]:
    """The children's environment: this checkout, wide lines, and no variable that would
    make rich take a pipe for a terminal."""
    env = child_env(COLUMNS="200", **extra)
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "NO_COLOR"):
        if name not in extra:
            env.pop(name, None)
    return env


def run(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [EXE, *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env or environ(),
        stdin=subprocess.DEVNULL,
        timeout=180,
        check=False,
    )


@pytest.fixture
def flaky(tmp_path: Path) -> tuple[Path, list[str]]:
    """A recorded cassette and the flaky program that replays it."""
    program = tmp_path / "agent.py"
    program.write_text(AGENT, "utf-8")
    command = [sys.executable, str(program), "--coin"]
    cassette = tmp_path / "run.jsonl"
    done = run("record", str(cassette), "--", *command, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return cassette, command


def steady(data: Any) -> Any:
    """A replay's JSON without what differs run to run (when each call started, how long
    it took)."""
    if isinstance(data, dict):
        return {k: steady(v) for k, v in data.items() if k not in ("started", "ms")}
    if isinstance(data, list):
        return [steady(v) for v in data]
    return data


def test_jobs_give_the_report_one_job_gives(flaky: tuple[Path, list[str]]) -> None:
    cassette, command = flaky
    one = run("replay", str(cassette), "--repeat", "4", "--jobs", "1", "--", *command)
    two = run("replay", str(cassette), "--repeat", "4", "--jobs", "2", "--", *command)
    assert one.returncode == two.returncode == 1, one.stdout + one.stderr
    assert "2/4 replays of" in one.stdout
    assert "first call that differed between runs: seq 2" in one.stdout
    assert re.search(r"runs 0, 2: tool flip", one.stdout), one.stdout
    assert re.search(r"runs 1, 3: tool flip", one.stdout), one.stdout
    assert "run 1 (exit 1):" in one.stdout
    assert two.stdout == one.stdout
    args = ["replay", str(cassette), "--repeat", "4", "--format", "json"]
    serial = json.loads(run(*args, "--jobs", "1", "--", *command).stdout)
    parallel = json.loads(run(*args, "--jobs", "3", "--", *command).stdout)
    assert serial["flaky"] is True
    assert serial["first_difference"]["variants"][0]["runs"] == [0, 2]
    assert steady(parallel) == steady(serial)


def test_jobs_run_replays_at_once(flaky: tuple[Path, list[str]], tmp_path: Path) -> None:
    cassette, flaky_command = flaky
    command = [c for c in flaky_command if c != "--coin"]  # every run passes: each ends
    marks = tmp_path / "marks"
    marks.mkdir()
    args = ["replay", str(cassette), "--repeat", "4", "--jobs", "2"]
    done = run(*args, "--", *command, env=environ(MARKS=str(marks)))
    assert "/4 replays of" in done.stdout, done.stdout + done.stderr
    spans = {}
    for run_ in range(4):
        start, end = (marks / f"{run_}.marks").read_text("utf-8").split()
        spans[run_] = (int(start), int(end))
    overlapping = [
        (a, b)
        for a in spans
        for b in spans
        if a < b and spans[a][0] < spans[b][1] and spans[b][0] < spans[a][1]
    ]
    assert (0, 1) in overlapping, spans


def test_progress_goes_to_stderr_when_piped_and_quiet_silences_it(
    flaky: tuple[Path, list[str]],
) -> None:
    cassette, command = flaky
    done = run("replay", str(cassette), "--repeat", "4", "--jobs", "2", "--", *command)
    assert done.returncode == 1
    lines = PROGRESS.findall(done.stderr)
    assert lines, done.stderr
    assert re.search(r"^faultdeck: 4/4 runs, 2 failed, in \d+ s$", done.stderr, re.MULTILINE)
    assert not re.search(r"^faultdeck: ", done.stdout, re.MULTILINE), done.stdout
    assert "\x1b[" not in done.stderr + done.stdout
    quiet = run("replay", str(cassette), "--repeat", "4", "--quiet", "--", *command)
    assert quiet.returncode == 1
    assert quiet.stdout == done.stdout
    assert not PROGRESS.search(quiet.stderr), quiet.stderr
    assert "runs" not in quiet.stderr


def on_a_terminal(args: list[str], cwd: Path) -> tuple[str, str, int]:
    """Run ``faultdeck ARGS`` with stderr on a pseudo-terminal and stdout piped; return what
    the terminal got, stdout and the exit code."""
    master, slave = pty.openpty()
    env = environ(TERM="xterm")
    child = subprocess.Popen(
        [EXE, *args],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=slave,
    )
    os.close(slave)
    seen = bytearray()
    try:
        for _ in range(100_000):  # until the child closes the terminal (EOF or EIO)
            ready, _, _ = select.select([master], [], [], 120)
            if not ready:
                break
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
        assert child.stdout is not None
        out = child.stdout.read()
        code = child.wait(timeout=120)
    finally:
        os.close(master)
        if child.poll() is None:
            child.kill()
            child.wait(timeout=30)
        if child.stdout is not None:
            child.stdout.close()
    return seen.decode("utf-8", "replace"), out.decode("utf-8", "replace"), code


def test_on_a_terminal_the_bar_shows_and_stdout_stays_plain(
    flaky: tuple[Path, list[str]], tmp_path: Path
) -> None:
    cassette, command = flaky
    args = ["replay", str(cassette), "--repeat", "4", "--jobs", "2"]
    terminal, out, code = on_a_terminal([*args, "--", *command], tmp_path)
    assert code == 1
    assert "━" in terminal, terminal
    assert re.search(r"\d/4 runs, \d failed", terminal), terminal
    assert "2/4 replays of" in out
    assert "━" not in out
    assert "\x1b[" not in out
    assert "faultdeck: " not in terminal  # the bar, not the lines for pipes
    quiet, _, _ = on_a_terminal([*args, "--quiet", "--", *command], tmp_path)
    assert "━" not in quiet


@pytest.fixture
def two(tmp_path: Path) -> Path:
    """A folder holding the workshop cassette twice, one of them in a subfolder."""
    folder = tmp_path / "cassettes"
    (folder / "more").mkdir(parents=True)
    shutil.copy(GOLDEN, folder / "a.jsonl")
    shutil.copy(GOLDEN, folder / "more" / "b.jsonl")
    (folder / "notes.txt").write_text("not a cassette", "utf-8")
    return folder


SUMMARY_ROW = r"{name}\s*│\s*38\s*│\s*33\s*│\s*0\s*│\s*0\s*│\s*5\s*│"


def test_rehearse_a_folder_prints_a_matrix_each_and_a_summary(two: Path) -> None:
    done = run("rehearse", str(two), "--entrypoint", GOOD, "--jobs", "2", cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    a, b = str(two / "a.jsonl"), str(two / "more" / "b.jsonl")
    assert done.stdout.count("38 cells: 33 held, 0 broke") == 2, done.stdout
    assert done.stdout.index(a) < done.stdout.index(b)
    header = r"\s*┃\s*".join(["cassette", "cells", "held", "broken", "errors", "killed"])
    assert re.search(header, done.stdout), done.stdout
    assert re.search(SUMMARY_ROW.format(name=re.escape(a)), done.stdout), done.stdout
    assert re.search(SUMMARY_ROW.format(name=re.escape(b)), done.stdout), done.stdout
    assert "2 cassettes: 0 with findings" in done.stdout
    assert "notes.txt" not in done.stdout
    assert len(re.findall(r"^faultdeck: .*38/38 cells, 0 findings", done.stderr, re.M)) == 2


def test_rehearse_a_glob_in_json_holds_every_matrix_and_the_summary(two: Path) -> None:
    pattern = str(two / "**" / "*.jsonl")
    done = run("rehearse", pattern, "--entrypoint", GOOD, "--format", "json", cwd=ROOT)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    names = [str(two / "a.jsonl"), str(two / "more" / "b.jsonl")]
    assert [c["cassette"] for c in data["cassettes"]] == names
    for entry in data["cassettes"]:
        assert entry["matrix"]["ok"] is True
        assert len(entry["matrix"]["cells"]) == 38
        assert entry["matrix"]["counts"]["killed"] == 5
    assert data["summary"] == [
        {
            "cassette": name,
            "cells": 38,
            "held": 33,
            "broken": 0,
            "errors": 0,
            "killed": 5,
            "ok": True,
        }
        for name in names
    ]
    single = json.loads(
        run("rehearse", names[0], "--entrypoint", GOOD, "--format", "json", cwd=ROOT).stdout
    )
    assert "cassettes" not in single  # one cassette: the matrix as it always was
    assert single["cells"] == data["cassettes"][0]["matrix"]["cells"]


def test_a_finding_in_any_cassette_exits_1(two: Path, tmp_path: Path) -> None:
    plan = tmp_path / "quota.toml"
    plan.write_text(
        '[[faults]]\nfault = "quota"\nretry_after = 2\n[faults.on]\nname = "read_file"\nnth = 1\n',
        "utf-8",
    )
    spec = "examples.workshop.rehearsal:retry_on_quota"
    cassettes = [str(two / "a.jsonl"), str(GOLDEN)]
    done = run("rehearse", *cassettes, "--entrypoint", spec, "--faults", str(plan), cwd=ROOT)
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.count("no_early_retry") == 2
    assert "2 cassettes: 2 with findings" in done.stdout
    row = r"{name}\s*│\s*2\s*│\s*1\s*│\s*1\s*│\s*0\s*│\s*0\s*│"
    for name in cassettes:
        assert re.search(row.format(name=re.escape(name)), done.stdout), done.stdout


def test_several_cassettes_before_the_program(tmp_path: Path) -> None:
    program = tmp_path / "prog.py"
    program.write_text(RETRYING, "utf-8")
    command = [sys.executable, str(program)]
    first, second = tmp_path / "one.jsonl", tmp_path / "two.jsonl"
    for cassette in (first, second):
        assert run("record", str(cassette), "--", *command).returncode == 0
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"faults": [{"fault": "quota", "retry_after": 2, "at": 1}]}))
    args = ["rehearse", str(first), str(second), "--faults", str(plan)]
    done = run(*args, "--jobs", "2", "--", *command, "--jobs", "9")
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.count("no_early_retry") == 2
    data = json.loads(run(*args, "--format", "json", "--", *command).stdout)
    assert [row["cassette"] for row in data["summary"]] == [str(first), str(second)]
    assert [row["broken"] for row in data["summary"]] == [1, 1]


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["rehearse", "nowhere/*.jsonl", "--entrypoint", GOOD], "no cassette matches nowhere/*"),
        (["rehearse", "empty", "--entrypoint", GOOD], "no *.jsonl cassette under the folder"),
        (
            ["replay", "run.jsonl", "--address", "127.0.0.1:1", "--", "true"],
            "--address 127.0.0.1:1 joins a Ray cluster: add --executor ray",
        ),
    ],
)
def test_nothing_to_run_is_one_line_and_exit_2(tmp_path: Path, args: list[str], says: str) -> None:
    (tmp_path / "empty").mkdir()
    shutil.copy(GOLDEN, tmp_path / "run.jsonl")
    done = run(*args, cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("faultdeck: error: ")
    assert says in lines[0]
    assert done.stdout == ""
