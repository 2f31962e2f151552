"""The fault matrix for any program (``fd.rehearse_command``): a crash is restarted too."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import faultdeck as fd
from faultdeck import faults
from tests.support.children import child_env, run

PROGRAM = """
import os, sys
import faultdeck as fd

checkpoint = {checkpoint!r}
deck = fd.Deck.from_env()
with deck:
    resumed = os.path.exists(checkpoint)
    for n in range(3):
        if resumed and {forgets} and n == 1:
            continue  # the bug under test: trusts a checkpoint the crash left half-written
        try:
            deck.call("tool", "fetch", {{"n": n}}, lambda: n)
        except fd.ProcessKilled:
            open(checkpoint, "w").close()
            raise
"""


def recorded(tmp_path: Path, *, forgets: bool) -> tuple[list[str], Path]:
    program = tmp_path / "prog.py"
    checkpoint = tmp_path / "checkpoint"
    program.write_text(PROGRAM.format(checkpoint=str(checkpoint), forgets=forgets), "utf-8")
    cassette = tmp_path / "run.jsonl"
    command = [sys.executable, str(program)]
    done = run([sys.executable, "-m", "faultdeck", "record", str(cassette), "--", *command])
    assert done.returncode == 0, done.stderr
    return command, cassette


def test_a_crashed_run_is_restarted_and_must_finish_as_the_clean_run(tmp_path: Path) -> None:
    command, cassette = recorded(tmp_path, forgets=False)
    plan = fd.FaultPlan([faults.crash().at(seq=2)])
    matrix = fd.rehearse_command(command, cassette, {"crash": plan})
    (cell,) = [c for c in matrix.cells if c.label == "crash"]
    assert cell.status == "killed", cell
    assert cell.detail == "killed at seq 2; a fresh run then finished as the clean run did"
    assert matrix.ok


def test_a_restart_that_skips_work_breaks_replay_determinism(tmp_path: Path) -> None:
    command, cassette = recorded(tmp_path, forgets=True)
    plan = fd.FaultPlan([faults.crash().at(seq=1)])
    matrix = fd.rehearse_command(command, cassette, {"crash": plan})
    (cell,) = [c for c in matrix.cells if c.label == "crash"]
    assert cell.status == "broke", cell
    assert cell.detail.startswith("killed at seq 1; a fresh run then broke replay_determinism")
    (violation,) = cell.violations
    assert violation.invariant == "replay_determinism"
    assert "2 calls, the clean run's 3; they part at call 2" in violation.observed
    assert not matrix.ok


def test_the_cli_matrix_restarts_a_crash_on_the_command_path(tmp_path: Path) -> None:
    command, cassette = recorded(tmp_path, forgets=False)
    done = run(
        [
            sys.executable,
            "-m",
            "faultdeck",
            "rehearse",
            str(cassette),
            "--format",
            "json",
            "--",
            *command,
        ],
        env=child_env(),
    )
    data = json.loads(done.stdout)
    crashes = [c for c in data["cells"] if c["label"] == "crash"]
    assert [c["status"] for c in crashes] == ["killed"] * 3
    assert all("a fresh run then finished as the clean run did" in c["detail"] for c in crashes)
    # The program lets every fault that raises out: each of those is a finding, so exit 1.
    statuses = {c["label"]: c["status"] for c in data["cells"] if c["seq"] == 1}
    assert statuses.pop("crash") == "killed"
    assert statuses.pop("latency") == "held"  # a slow call is no error
    assert set(statuses.values()) == {"raised"}
    assert data["ok"] is False
    assert done.returncode == 1, done.stdout + done.stderr


def test_a_raised_cell_shows_the_exception_line(tmp_path: Path) -> None:
    command, cassette = recorded(tmp_path, forgets=False)
    plan = fd.FaultPlan([faults.quota(code="insufficient_quota").at(seq=2)])
    matrix = fd.rehearse_command(command, cassette, {"quota": plan})
    (cell,) = [c for c in matrix.cells if c.label == "quota"]
    assert cell.status == "raised"
    assert cell.detail == (
        "exit 1: faultdeck._base.errors.QuotaExhausted: injected quota fault: "
        "insufficient_quota, no Retry-After"
    )
    assert not matrix.ok


ENV_PROGRAM = """
import faultdeck as fd

deck = fd.Deck.from_env()
with deck:
    deck.env("HOME")
    try:  # a tool that reaches a service: a service's faults can happen at it
        deck.call("tool", "fetch", {"n": 0}, lambda: 0, remote=True)
    except fd.QuotaExhausted:
        pass  # stop at once, keeping what is done
    except fd.TransientError:
        deck.call("tool", "fetch", {"n": 0}, lambda: 0, remote=True)  # one retry
"""


def test_faults_run_only_where_they_can_happen(tmp_path: Path) -> None:
    program = tmp_path / "env.py"
    program.write_text(ENV_PROGRAM, "utf-8")
    command = [sys.executable, str(program)]
    cassette = tmp_path / "env.jsonl"
    done = run([sys.executable, "-m", "faultdeck", "record", str(cassette), "--", *command])
    assert done.returncode == 0, done.stderr
    matrix = fd.rehearse_command(command, cassette)
    assert matrix.positions == ((1, "env HOME"), (2, "tool fetch"))
    at_env = [(c.label, c.status) for c in matrix.cells if c.seq == 1]
    assert at_env == [("crash", "killed")]  # no provider sends a quota error to an env read
    ran = {c.label for c in matrix.cells if c.seq == 2}
    assert ran == set(fd.types.FAULT_MENU) - {
        "bad tool call",
        "slow first token",
        "stream cut",
        "malformed stream",
        "injection",  # the tool answers 0: no string to carry an instruction
    }
    assert [c for c in matrix.cells if c.status not in ("held", "killed")] == []
    assert matrix.ok
