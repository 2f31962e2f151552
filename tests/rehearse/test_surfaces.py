"""Faults only where they can happen: a service's faults (quota, 5xx, timeout, reset) land on
model and http calls and on tools that say they reach a service; a local tool gets its own
faults only. A fault whose call never comes is ``not fired``, never ``held``."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

import faultdeck as fd
from faultdeck import faults
from faultdeck.config import load_settings
from tests.support.children import run

SERVICE = {"quota retry-after", "quota no header", "quota non-retryable", "timeout"}
SERVICE |= {"transient 503", "transient 529", "reset", "disconnect"}
LOCAL = {"tool error", "malformed result", "injection", "latency", "crash"}


def loop(deck: fd.Deck, clock: fd.VirtualClock) -> list[fd.Outcome]:
    """A model call, a local tool, and a tool that reaches a service, each said its own way."""

    @deck.tool
    def read_notes(path: str) -> str:
        return f"notes of {path}"

    @deck.tool(remote=True)
    def search_web(q: str) -> list[str]:
        return [f"result for {q}"]

    outcomes = []
    for op, step in (
        ("plan", lambda: deck.call("model", "chat", {"q": "plan"}, lambda: "a plan")),
        ("read", lambda: read_notes("a.md")),
        ("search", lambda: search_web("retries")),
        ("lookup", lambda: deck.call("tool", "lookup", {"id": 1}, lambda: 1, remote=True)),
    ):
        try:
            outcomes.append(fd.Outcome(op, "ok", step()))
        except fd.BoundaryError as exc:
            outcomes.append(fd.Outcome(op, "stopped", None, type(exc).__name__))
            break
    return outcomes


@pytest.fixture
def cassette(tmp_path: Path) -> Path:
    path = tmp_path / "surfaces.jsonl"
    clock = fd.VirtualClock()
    with fd.Deck(path, mode="record", clock=clock) as deck:
        loop(deck, clock)
    return path


def rows_at(matrix: fd.Matrix, seq: int) -> set[str]:
    return {c.label for c in matrix.cells if c.seq == seq}


def test_a_local_tool_never_gets_a_service_fault(cassette: Path) -> None:
    matrix = fd.rehearse(loop, cassette)
    assert matrix.positions == (
        (1, "model chat"),
        (2, "tool read_notes"),
        (3, "tool search_web"),
        (4, "tool lookup"),
    )
    assert rows_at(matrix, 2) == LOCAL
    assert rows_at(matrix, 3) >= SERVICE  # @deck.tool(remote=True)
    assert rows_at(matrix, 4) >= SERVICE  # deck.call(..., remote=True)
    assert {"quota no header", "timeout", "transient 503", "reset"} <= rows_at(matrix, 1)


def test_the_report_names_the_remote_tools(cassette: Path) -> None:
    with fd.Deck(cassette) as deck:
        loop(deck, fd.VirtualClock())
        report = deck.report()
    assert report.remote_tools == ("lookup", "search_web")
    assert list(report.to_dict()["remote_tools"]) == ["lookup", "search_web"]


def test_a_plan_aimed_at_a_call_that_never_comes_is_not_fired(cassette: Path) -> None:
    plans = {
        "never": fd.FaultPlan([faults.quota().on(kind="tool", name="search_web", nth=5)]),
        "read": fd.FaultPlan([faults.tool_error().on(kind="tool", name="read_notes", nth=1)]),
    }
    matrix = fd.rehearse(loop, cassette, plans)
    cells = {c.label: c for c in matrix.cells}
    assert cells["never"].status == "not fired"
    assert cells["read"].status == "held"
    assert matrix.ok  # counted apart: not a finding, and not held


PROGRAM = """
import faultdeck as fd

deck = fd.Deck.from_env()
with deck:
    deck.call("model", "chat", {"q": "plan"}, lambda: "a plan")
    deck.call("tool", "read_notes", {"path": "a.md"}, lambda: "notes")
    deck.call("tool", "search_web", {"q": "retries"}, lambda: ["a result"])
"""


def test_a_program_names_its_remote_tools_in_pyproject(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        "[tool.faultdeck.tools]\nsearch_web = { remote = true }\nread_notes = { remote = false }\n",
        "utf-8",
    )
    (tmp_path / "agent.py").write_text(PROGRAM, "utf-8")
    command = [sys.executable, "agent.py"]
    done = run(
        [sys.executable, "-m", "faultdeck", "record", "run.jsonl", "--", *command], cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    here = os.getcwd()
    os.chdir(tmp_path)
    try:
        matrix = fd.rehearse_command(command, "run.jsonl")
    finally:
        os.chdir(here)
    assert rows_at(matrix, 2) == LOCAL
    assert SERVICE - {"disconnect"} <= rows_at(matrix, 3)
    assert "disconnect" in rows_at(matrix, 3)
    unfired = [c for c in matrix.cells if c.status == "not fired"]
    assert unfired == []


@pytest.mark.parametrize(
    ("table", "said"),
    [
        ('search_web = "remote"', "tools.search_web must be a table with one key, remote"),
        ("search_web = { remote = 1 }", "tools.search_web.remote must be true or false"),
        ("search_web = { remote = true, kind = 2 }", "write search_web = { remote = true }"),
    ],
)
def test_a_bad_tools_table_is_one_line(tmp_path: Path, table: str, said: str) -> None:
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(f"[tool.faultdeck.tools]\n{table}\n", "utf-8")
    with pytest.raises(fd.ConfigError) as raised:
        fd.Deck(tmp_path / "run.jsonl", settings=load_settings(tmp_path))
    message = str(raised.value)
    assert message.startswith(f"{pyproject} [tool.faultdeck]: ")
    assert said in message
    assert "\n" not in message


GRACEFUL = """
import sys
import faultdeck as fd

deck = fd.Deck.from_env()
with deck:
    deck.call("model", "chat", {"q": "plan"}, lambda: "a plan")
    try:
        deck.call("model", "chat", {"q": "act"}, lambda: "done")
    except fd.QuotaExhausted:
        print("out of quota: stopping, the plan kept", file=sys.stderr)
        sys.exit(3)
"""


def test_ok_exit_names_a_programs_graceful_stop(tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text(GRACEFUL, "utf-8")
    cli = [sys.executable, "-m", "faultdeck"]
    done = run([*cli, "record", "run.jsonl", "--", sys.executable, "agent.py"], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    plan = tmp_path / "quota.json"
    plan.write_text('{"faults": [{"fault": "quota", "on": {"kind": "model", "nth": 2}}]}')
    rehearse = [*cli, "rehearse", "run.jsonl", "--faults", str(plan), "--format", "json"]
    program = ["--", sys.executable, "agent.py"]

    def cell(*options: str) -> dict[str, object]:
        done = run([*rehearse, *options, *program], cwd=tmp_path)
        cells: dict[str, dict[str, object]] = {
            c["label"]: c for c in json.loads(done.stdout)["cells"]
        }
        return cells["quota"]

    stopped = cell()
    assert stopped["status"] == "raised"
    assert str(stopped["detail"]).startswith("exit 3: out of quota")
    assert cell("--ok-exit", "0,3")["status"] == "held"
    bad = run([*rehearse, "--ok-exit", "0,x", *program], cwd=tmp_path)
    assert bad.returncode == 2
    assert "--ok-exit" in bad.stderr
    assert "separated by commas" in bad.stderr
