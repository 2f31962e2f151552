"""``faultdeck drift``: a recording against a live run of the same program, as a user runs it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import faultdeck as fd
from faultdeck._diff.drift import compare_drift
from tests.support.calls import returns
from tests.support.children import child_env

EXE = str(Path(sys.executable).parent / "faultdeck")

AGENT = """
import os, sys
import faultdeck as fd
deck = fd.Deck.from_env()
world = os.environ.get("WORLD", "a")
if os.environ.get("EXTRA"):
    deck.call("tool", "warmup", {}, lambda: {"ok": True})
deck.call("tool", "plan", {"task": "fix"}, lambda: {"steps": 2, "created": 1764411948})
deck.call("tool", "search", {"q": "retry"}, lambda: {"hits": [world]})
if not os.environ.get("DROP"):
    deck.call("tool", "done", {"v": os.environ.get("CODE", "1")}, lambda: True)
if os.environ.get("FAIL"):
    sys.exit(3)
"""


def run(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [EXE, *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=child_env(COLUMNS="120", **(env or {})),
        timeout=120,
        check=False,
    )


@pytest.fixture
def recorded(tmp_path: Path) -> tuple[Path, list[str]]:
    agent = tmp_path / "agent.py"
    agent.write_text(AGENT, "utf-8")
    cassette = tmp_path / "run.jsonl"
    program = [sys.executable, str(agent)]
    done = run("record", str(cassette), "--", *program, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return cassette, program


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(".faultdeck-drift"))


def test_nothing_moved_exits_0(recorded: tuple[Path, list[str]]) -> None:
    cassette, program = recorded
    before = cassette.read_bytes()
    done = run("drift", str(cassette), "--", *program, cwd=cassette.parent)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "answers changed (the world moved): 0" in done.stdout
    assert "calls changed (the code moved): 0" in done.stdout
    assert "no drift" in done.stdout
    assert cassette.read_bytes() == before
    assert leftovers(cassette.parent) == []


def test_a_changed_answer_is_the_world_and_a_changed_call_the_code(
    recorded: tuple[Path, list[str]],
) -> None:
    cassette, program = recorded
    before = cassette.read_bytes()
    env = {"WORLD": "b", "CODE": "2"}
    done = run("drift", str(cassette), "--", *program, cwd=cassette.parent, env=env)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "answers changed (the world moved): 1" in done.stdout
    assert 'seq 2: tool search: out.hits[0] "a" → "b"' in done.stdout
    assert "calls changed (the code moved): 1" in done.stdout
    assert 'seq 3: tool done: args.v "1" → "2"' in done.stdout
    assert "outcome unchanged" in done.stdout
    assert cassette.read_bytes() == before  # never replaced without --update
    assert leftovers(cassette.parent) == []


def test_calls_in_one_run_only_and_timestamps_moved_by_seq(
    recorded: tuple[Path, list[str]],
) -> None:
    cassette, program = recorded
    # One more call first: every later call's seq, and its stored timestamp, moves by one.
    env = {"EXTRA": "1", "DROP": "1"}
    done = run(
        "drift", str(cassette), "--format", "json", "--", *program, cwd=cassette.parent, env=env
    )
    assert done.returncode == 1, done.stderr
    data = json.loads(done.stdout)
    assert data["answers_changed"] == []  # plan's "created" placeholder moved, not its answer
    ops = sorted((row["op"], row["name"]) for row in data["calls_changed"])
    assert ops == [("added", "warmup"), ("removed", "done")]
    assert data["outcome"]["changed"] is False
    assert data["diff"]["identical"] is False


def test_a_failing_live_run_is_an_outcome_change_and_never_updates(
    recorded: tuple[Path, list[str]],
) -> None:
    cassette, program = recorded
    before = cassette.read_bytes()
    done = run(
        "drift", str(cassette), "--update", "--", *program, cwd=cassette.parent, env={"FAIL": "1"}
    )
    assert done.returncode == 1
    assert "outcome changed: the recorded run ended ok; the live run exited 3" in done.stdout
    assert "not updated: the live run failed" in done.stderr
    assert cassette.read_bytes() == before


def test_update_replaces_the_cassette_with_the_live_run(recorded: tuple[Path, list[str]]) -> None:
    cassette, program = recorded
    done = run(
        "drift", str(cassette), "--update", "--", *program, cwd=cassette.parent, env={"WORLD": "c"}
    )
    assert done.returncode == 1, done.stderr
    assert "updated" in done.stderr
    hits = [e.value for e in fd.load(cassette).entries if e.name == "search"]
    assert hits == [{"hits": ["c"]}]
    assert leftovers(cassette.parent) == []
    again = run("drift", str(cassette), "--", *program, cwd=cassette.parent, env={"WORLD": "c"})
    assert again.returncode == 0, again.stdout


SIDE = """
import os, sys
import faultdeck as fd
deck = fd.Deck.from_env()
marker = sys.argv[1]
def send(to):
    open(marker, "w").write(to)
    return {"sent": True}
tool = deck.tool(name="send", side_effect=True, dry_run=lambda to: {"sent": "dry"})(send)
tool(to="ops")
print("allow=" + os.environ.get("FAULTDECK_ALLOW_SIDE_EFFECTS", "?"))
"""


def test_side_effects_run_their_dry_run_unless_allowed(tmp_path: Path) -> None:
    agent = tmp_path / "side.py"
    agent.write_text(SIDE, "utf-8")
    marker = tmp_path / "sent.txt"
    cassette = tmp_path / "run.jsonl"
    with fd.Deck(cassette, mode="record", allow_side_effects=True) as deck:
        deck.call("tool", "send", {"to": "ops"}, lambda: {"sent": True})
    program = [sys.executable, str(agent), str(marker)]
    done = run("drift", str(cassette), "--", *program, cwd=tmp_path)
    assert not marker.exists()  # the real tool never ran
    assert "allow=0" in done.stdout
    assert 'out.sent true → "dry"' in done.stdout
    done = run("drift", str(cassette), "--allow-side-effects", "--", *program, cwd=tmp_path)
    assert "allow=1" in done.stdout


def test_bad_input_is_one_line_and_writes_nothing(tmp_path: Path) -> None:
    done = run("drift", str(tmp_path / "none.jsonl"), "--", sys.executable, "-c", "0", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.startswith("faultdeck: error: ")
    assert len(done.stderr.strip().splitlines()) == 1
    cassette = tmp_path / "run.jsonl"
    with fd.Deck(cassette, mode="record") as deck:
        deck.call("tool", "t", {}, lambda: 1)
    done = run("drift", str(cassette), cwd=tmp_path)
    assert done.returncode == 2
    assert "give the program to run after --" in done.stderr
    assert leftovers(tmp_path) == []


def test_compare_drift_sorts_rows_by_what_moved(tmp_path: Path) -> None:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    with fd.Deck(a, mode="record") as deck:
        deck.call("tool", "t", {"q": 1}, lambda: {"x": 1})
        deck.call("tool", "u", {"q": 1}, lambda: {"x": 1})
    with fd.Deck(b, mode="record") as deck:
        deck.call("tool", "t", {"q": 1}, lambda: {"x": 2})
        deck.call("tool", "u", {"q": 2}, lambda: {"x": 1})
    found = compare_drift(fd.load(a), fd.load(b), live_code=0)
    assert [row.a.name for row in found.answers if row.a] == ["t"]
    assert [row.a.name for row in found.calls if row.a] == ["u"]
    assert found.drifted
    assert not compare_drift(fd.load(a), fd.load(a), live_code=0).drifted
    assert compare_drift(fd.load(a), fd.load(a), live_code=1).outcome_changed


def test_rate_limit_headers_and_ids_are_not_a_changed_answer(tmp_path: Path) -> None:
    def answer(remaining: str, rid: str, text: str) -> dict[str, object]:
        headers = {"content-type": "application/json", "x-ratelimit-remaining-requests": remaining}
        return {"status": 200, "headers": headers, "body": {"id": rid, "text": text}}

    a, b, c = tmp_path / "a.jsonl", tmp_path / "b.jsonl", tmp_path / "c.jsonl"
    for path, remaining, rid, text in (
        (a, "99", "chatcmpl-AAAA1111", "hi"),
        (b, "42", "chatcmpl-BBBB2222", "hi"),
        (c, "42", "chatcmpl-BBBB2222", "bye"),
    ):
        with fd.Deck(path, mode="record") as deck:
            deck.call(
                "http",
                "openai.chat.completions",
                {"q": 1},
                returns(answer(remaining, rid, text)),
            )
    assert not compare_drift(fd.load(a), fd.load(b), live_code=0).drifted
    changed = compare_drift(fd.load(a), fd.load(c), live_code=0).answers
    assert [change.path for change in changed[0].changes] == ["out.body.text"]


def test_a_blocked_side_effect_is_said_not_counted_as_a_code_change(tmp_path: Path) -> None:
    agent = tmp_path / "blocked.py"
    agent.write_text(
        "import faultdeck as fd\n"
        "deck = fd.Deck.from_env()\n"
        "deck.tool(name='send', side_effect=True)(lambda to: {'sent': True})(to='ops')\n",
        "utf-8",
    )
    cassette = tmp_path / "run.jsonl"
    with fd.Deck(cassette, mode="record", allow_side_effects=True) as deck:
        deck.tool(name="send", side_effect=True)(lambda to: {"sent": True})(to="ops")
    done = run(
        "drift", str(cassette), "--format", "json", "--", sys.executable, str(agent), cwd=tmp_path
    )
    assert done.returncode == 1
    data = json.loads(done.stdout)
    assert [row["name"] for row in data["blocked"]] == ["send"]
    assert data["calls_changed"] == []
    assert data["outcome"]["changed"] is True
