"""What the command line says when something is off, as a new user meets it: the usage,
a misspelt option, a program that fails for its own reason, a cassette that is not whole,
a strict replay, and hints that name the command the user ran."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import filelock
import pytest

import faultdeck as fd
from tests.support.children import child_env

EXE = str(Path(sys.executable).parent / "faultdeck")

AGENT = """\
import sys
import faultdeck as fd

deck = fd.Deck.from_env()
for i in range(int(sys.argv[1]) if len(sys.argv) > 1 else 3):
    deck.call("model", "m", {"i": i * int(sys.argv[2]) if len(sys.argv) > 2 else i}, lambda: i)
"""


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [EXE, *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=child_env(COLUMNS="120"),
        timeout=120,
        check=False,
    )


@pytest.fixture
def agent(tmp_path: Path) -> list[str]:
    (tmp_path / "agent.py").write_text(AGENT, "utf-8")
    return [sys.executable, "agent.py"]


@pytest.fixture
def recorded(tmp_path: Path, agent: list[str]) -> Path:
    done = run("record", "run.jsonl", "--", *agent, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return tmp_path / "run.jsonl"


def test_faultdeck_alone_prints_the_usage_and_the_commands(tmp_path: Path) -> None:
    done = run(cwd=tmp_path)
    assert done.returncode == 0
    assert done.stdout.startswith("Usage: faultdeck")
    for command in ("record", "replay", "rehearse", "diff", "show", "scan"):
        assert f"\n  {command} " in done.stdout
    assert "error" not in done.stderr
    assert "--debug" not in done.stdout  # the usage, not the whole help


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (("rehearse", "run.jsonl", "--entry", "x:y"), "--entry"),
        (("record", "run.jsonl", "--moed", "append", "--", "python", "a.py"), "--moed"),
        (("replay", "run.jsonl", "--repat", "3", "--", "python", "a.py"), "--repat"),
        (("resume", "run.jsonl", "--forse", "--", "python", "a.py"), "--forse"),
        (("diff", "run.jsonl", "run.jsonl", "--respones"), "--respones"),
        (("show", "run.jsonl", "--fromat", "json"), "--fromat"),
        (("scan", "run.jsonl", "--jsn"), "--jsn"),
    ],
)
def test_a_misspelt_option_is_named_as_unknown(
    tmp_path: Path, args: tuple[str, ...], option: str
) -> None:
    done = run(*args, cwd=tmp_path)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("faultdeck: error: No such option")
    assert option in lines[0]
    assert "No such file" not in done.stderr


def test_a_misspelt_option_gets_a_suggestion(tmp_path: Path) -> None:
    done = run("rehearse", "run.jsonl", "--entry", "x:y", cwd=tmp_path)
    assert "--entrypoint" in done.stderr


def test_options_after_the_double_dash_belong_to_the_program(
    tmp_path: Path, agent: list[str]
) -> None:
    done = run("record", "run.jsonl", "--", *agent, "2", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "recorded 2 calls (2 live)" in done.stdout


def test_one_call_is_one_call(tmp_path: Path, agent: list[str]) -> None:
    done = run("record", "run.jsonl", "--", *agent, "1", cwd=tmp_path)
    assert "recorded 1 call (1 live)" in done.stdout
    shown = run("show", "run.jsonl", cwd=tmp_path)
    assert "ended cleanly: 1 call\n" in shown.stdout


def test_a_program_that_fails_at_once_records_nothing_and_says_so(tmp_path: Path) -> None:
    (tmp_path / "broken.py").write_text(
        "raise RuntimeError('the agent could not read its prompts')\n"
    )
    done = run("record", "run.jsonl", "--", sys.executable, "broken.py", cwd=tmp_path)
    assert done.returncode == 1
    assert "recorded 0 calls (0 live) into run.jsonl" in done.stdout
    assert "the program exited with 1" in done.stdout
    recording = fd.load(tmp_path / "run.jsonl")
    assert recording.entries == ()
    assert recording.end is not None
    assert recording.end["status"] == "error"
    # Its stderr reached the terminal as it ran.
    assert "RuntimeError: the agent could not read its prompts" in done.stderr


def test_a_locked_cassette_is_said_in_its_own_words(
    tmp_path: Path, agent: list[str], recorded: Path
) -> None:
    with filelock.FileLock(f"{recorded}.lock", timeout=0):  # another recording holds it
        done = run("record", "run.jsonl", "--", *agent, cwd=tmp_path)
    assert done.returncode == 1
    assert "failed (exit 2) before its deck wrote a report" in done.stdout
    assert "run.jsonl.lock is held); wait for that run to finish" in done.stdout
    assert "Traceback" not in done.stdout + done.stderr


def test_a_bad_project_setting_is_said_in_its_own_words(tmp_path: Path, agent: list[str]) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.faultdeck]\ndurability = "sometimes"\n')
    done = run("record", "run.jsonl", "--", *agent, cwd=tmp_path)
    assert done.returncode == 1
    assert "durability 'sometimes' is not one of: flush, fsync" in done.stdout
    assert "Traceback" not in done.stdout + done.stderr


def test_a_program_its_python_ran_without_the_bootstrap_is_asked_about_it(tmp_path: Path) -> None:
    (tmp_path / "plain.py").write_text("print('hello')\n")
    done = run("record", "run.jsonl", "--", sys.executable, "-I", "plain.py", cwd=tmp_path)
    assert done.returncode == 1
    assert "exited 0 but wrote no faultdeck report" in done.stdout
    assert "without faultdeck's bootstrap (python -I or -S skip it)" in done.stdout


def test_a_plain_program_records_with_no_faultdeck_in_it(tmp_path: Path) -> None:
    (tmp_path / "plain.py").write_text("print('hello')\n")
    done = run("record", "run.jsonl", "--", sys.executable, "plain.py", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout == "hello\nrecorded 0 calls (0 live) into run.jsonl\n"


def test_a_truncated_last_line_is_one_warning_line(
    tmp_path: Path, agent: list[str], recorded: Path
) -> None:
    data = recorded.read_bytes()
    recorded.write_bytes(data[:-12])  # the end line, cut mid-write
    for args in (
        ("replay", "run.jsonl", "--", *agent),
        ("replay", "run.jsonl", "--repeat", "3", "--", *agent),
        ("show", "run.jsonl"),
    ):
        done = run(*args, cwd=tmp_path)
        truncated = [line for line in done.stderr.splitlines() if "truncated last line" in line]
        assert truncated == [
            "faultdeck: warning: run.jsonl:5: truncated last line skipped (a crash mid-write); "
            "the calls before it are intact"
        ], done.stderr
        assert "CassetteWarning" not in done.stderr
        assert "warn(" not in done.stderr


def test_show_says_outside_git_for_a_cassette_recorded_outside_git(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    with fd.Deck(path, mode="record") as deck:
        deck.call("model", "m", {}, lambda: 1)
    lines = path.read_text().splitlines()
    for harness in ("{}", '{"git_sha":"not in git","dirty":false}'):
        header = f'{{"faultdeck":1,"match":"keyed","harness":{harness},"env":{{}},"volatile":[]}}'
        path.write_text("\n".join([header, *lines[1:]]) + "\n")
        done = run("show", "run.jsonl", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert "recorded outside git" in done.stdout
        assert "recorded at not" not in done.stdout


@pytest.mark.parametrize("command", ["show", "scan", "replay", "rehearse", "diff"])
def test_format_lists_its_choices_with_help(tmp_path: Path, command: str) -> None:
    done = run(command, "--help", cwd=tmp_path)
    text = " ".join(done.stdout.split())
    assert re.search(r"--format \[text\|json(\|html)?\]", text)
    assert "json for machines" in text


def test_replay_strict_fails_on_recorded_calls_left_unused(
    tmp_path: Path, agent: list[str], recorded: Path
) -> None:
    fewer = [*agent, "2"]
    assert run("replay", "run.jsonl", "--", *fewer, cwd=tmp_path).returncode == 0
    done = run("replay", "run.jsonl", "--strict", "--", *fewer, cwd=tmp_path)
    assert done.returncode == 1
    assert "--strict: 1 recorded call never asked for" in done.stdout
    assert "faultdeck record run.jsonl -- " in done.stdout
    many = run("replay", "run.jsonl", "--strict", "--repeat", "2", "--", *fewer, cwd=tmp_path)
    assert many.returncode == 1
    assert "0/2 replays" in many.stdout
    every = run("replay", "run.jsonl", "--strict", "--", *agent, cwd=tmp_path)
    assert every.returncode == 0, every.stdout


def test_a_miss_under_the_command_line_names_its_commands(
    tmp_path: Path, agent: list[str], recorded: Path
) -> None:
    changed = [*agent, "3", "2"]  # asks i=0, 2, 4; recorded i=0, 1, 2
    done = run("replay", "run.jsonl", "--", *changed, cwd=tmp_path)
    assert done.returncode == 1
    program = " ".join(changed)
    assert f"re-record with faultdeck record run.jsonl -- {program}" in done.stderr
    assert f"record --mode append run.jsonl -- {program}" in done.stderr
    assert 'mode="record"' not in done.stderr + done.stdout
    # The miss first, then the program's own frames; faultdeck's and the libraries' hidden,
    # as pytest's plugin shows a miss.
    assert done.stderr.startswith("faultdeck.ReplayMiss: replay miss at seq 3")
    miss, _, frames = done.stderr.partition("\n\n")
    assert "args.i: recorded 1, now 4" in miss
    assert "agent.py:6: in " in frames
    assert "/faultdeck/" not in frames
    assert "site-packages" not in frames
    assert "faultdeck --debug … shows them" in frames
    # --debug: the whole traceback, faultdeck's frames too.
    debug = run("--debug", "replay", "run.jsonl", "--", *changed, cwd=tmp_path)
    assert debug.returncode == 1
    assert "Traceback (most recent call last)" in debug.stderr
    assert "/faultdeck/" in debug.stderr.split("ReplayMiss:")[0]


def test_a_missing_cassette_names_the_record_command(tmp_path: Path, agent: list[str]) -> None:
    done = run("replay", "none.jsonl", "--", *agent, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "faultdeck: error: none.jsonl: no such cassette; record it first with "
        f"faultdeck record none.jsonl -- {' '.join(agent)}"
    )
    shown = run("show", "none.jsonl", cwd=tmp_path)
    assert "record it first with faultdeck record none.jsonl -- CMD…" in shown.stderr


def test_python_keeps_python_terms(tmp_path: Path) -> None:
    with pytest.raises(fd.CassetteNotFound, match='record it first with mode="record"'):
        fd.load(tmp_path / "none.jsonl")


def test_record_mode_append_records_only_the_new_calls(
    tmp_path: Path, agent: list[str], recorded: Path
) -> None:
    done = run("record", "--mode", "append", "run.jsonl", "--", *agent, "5", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "appended 2 calls to run.jsonl (3 replayed from it)" in done.stdout
    assert [e.args["i"] for e in fd.load(recorded).entries] == [0, 1, 2, 3, 4]


def test_a_recording_during_an_outage_says_what_it_could_not_hold(tmp_path: Path) -> None:
    (tmp_path / "outage.py").write_text(
        "import httpx2\nimport faultdeck as fd\nfrom faultdeck.http import Transport\n"
        "deck = fd.Deck.from_env()\n"
        "client = httpx2.Client(transport=Transport(deck, httpx=httpx2))\n"
        "try:\n"
        "    client.get('http://127.0.0.1:9/v1/models')  # nothing listens there\n"
        "except httpx2.ConnectError:\n"
        "    print('the service is down; the agent carries on')\n"
    )
    done = run("record", "run.jsonl", "--", sys.executable, "outage.py", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert "the agent carries on" in done.stdout
    assert (
        "recorded 0 of 1 call: 1 got no answer (ConnectError); run.jsonl holds only the "
        "answered ones, and a replay misses at the others: record again once the service answers"
    ) in done.stdout
    assert not fd.load(tmp_path / "run.jsonl").entries


def test_a_whole_recording_has_no_such_warning(tmp_path: Path, agent: list[str]) -> None:
    done = run("record", "run.jsonl", "--", *agent, cwd=tmp_path)
    assert "warning" not in done.stderr


OPENAI_AGENT = """\
import sys
sys.path.insert(0, {root!r})
import faultdeck as fd
from examples.openai_agent.agent import client_for, run

print(run(client_for(fd.Deck.from_env()), "What's the weather in Paris?"))
"""


def test_a_fault_its_call_cannot_show_is_one_line_and_exit_2(tmp_path: Path) -> None:
    # A chat completion has no reasoning: reasoning_only cannot be shown there.
    root = Path(__file__).parents[2]
    cassette = tmp_path / "weather.jsonl"
    cassette.write_bytes((root / "examples/openai_agent/cassettes/weather.jsonl").read_bytes())
    (tmp_path / "agent.py").write_text(OPENAI_AGENT.format(root=str(root)), "utf-8")
    plan = tmp_path / "plan.json"
    plan.write_text('{"faults": [{"fault": "reasoning_only", "on": {"kind": "model"}}]}')
    before = cassette.read_bytes()
    done = run(
        "replay", "weather.jsonl", "--faults", "plan.json", "--", sys.executable, "agent.py",
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.splitlines()
    assert line.startswith(
        "faultdeck: error: reasoning_only at openai.chat.completions: OpenAI Chat Completions "
        "cannot show it (it has no reasoning); land it on openai.responses or "
        "anthropic.messages or "
    )
    assert line.endswith(" calls (.on(name=…))")
    assert cassette.read_bytes() == before


OPENAI_ENTRYPOINT = """\
import sys
sys.path.insert(0, {root!r})
import faultdeck as fd
from examples.openai_agent.agent import client_for, run

def main(deck, clock):
    return [fd.Outcome("ask", "ok", run(client_for(deck), "What's the weather in Paris?"))]
"""


@pytest.mark.parametrize(
    "program",
    [["--entrypoint", "entry:main"], ["--", sys.executable, "agent.py"]],
    ids=["entrypoint", "command"],
)
def test_a_rehearsal_whose_fault_its_call_cannot_show_is_one_line_and_exit_2(
    tmp_path: Path, program: list[str]
) -> None:
    root = Path(__file__).parents[2]
    cassette = tmp_path / "weather.jsonl"
    cassette.write_bytes((root / "examples/openai_agent/cassettes/weather.jsonl").read_bytes())
    (tmp_path / "agent.py").write_text(OPENAI_AGENT.format(root=str(root)), "utf-8")
    (tmp_path / "entry.py").write_text(OPENAI_ENTRYPOINT.format(root=str(root)), "utf-8")
    plan = tmp_path / "plan.json"
    plan.write_text('{"faults": [{"fault": "reasoning_only", "on": {"kind": "model"}}]}')
    before = cassette.read_bytes()
    done = run("rehearse", "weather.jsonl", "--faults", "plan.json", *program, cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.splitlines()[-1].startswith(
        "faultdeck: error: reasoning_only at openai.chat.completions: OpenAI Chat Completions "
        "cannot show it"
    )
    assert cassette.read_bytes() == before
