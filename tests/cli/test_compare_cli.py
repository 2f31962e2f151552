"""``faultdeck compare``: a recording and its fork onto another model side by side (calls,
tokens, recorded time, faults, models), and a program replayed once against each."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import faultdeck as fd
from faultdeck import faults

from .model_runs import MODEL, OTHER, Runs, program, record_and_fork

CASSETTES = ("runs/base.jsonl", "runs/other.jsonl")


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    made = record_and_fork(tmp_path_factory.mktemp("compare"))
    assert made.recorded.returncode == 0, made.recorded.stdout + made.recorded.stderr
    assert made.forked.returncode == 0, made.forked.stdout + made.forked.stderr
    faulted = made.folder / "runs" / "faulted.jsonl"
    with fd.Deck(faulted, mode="record", faults=[faults.timeout().at(seq=2)]) as deck:
        deck.call("tool", "read", {"n": 1}, lambda: "one")
        with pytest.raises(fd.TransientError):
            deck.call("tool", "read", {"n": 2}, lambda: "two")
        deck.call("tool", "read", {"n": 2}, lambda: "two")
    return made


def expected(runs: Runs, cassette: str) -> dict[str, Any]:
    """A row as the recorded answers say it, read here from the cassette itself."""
    entries = fd.load(runs.folder / cassette).entries
    usage = [e.value["body"]["usage"] for e in entries]
    return {
        "cassette": cassette,
        "calls": len(entries),
        "tokens": {
            "input": sum(u["prompt_tokens"] for u in usage),
            "output": sum(u["completion_tokens"] for u in usage),
        },
        "ms": round(sum(e.ms for e in entries), 3),
        "faults": 0,
        "models": list(dict.fromkeys(e.args["body"]["model"] for e in entries)),
    }


def test_a_row_per_cassette(runs: Runs) -> None:
    done = runs.run("compare", *CASSETTES, "runs/faulted.jsonl", "--format", "json")
    assert done.returncode == 0, done.stdout + done.stderr
    data = json.loads(done.stdout)
    assert data["verify"] is None
    base, other, faulted = data["cassettes"]
    assert base == expected(runs, CASSETTES[0])
    assert other == expected(runs, CASSETTES[1])
    assert (base["models"], other["models"]) == ([MODEL], [MODEL, OTHER])
    assert base["tokens"]["input"] > 0
    assert base["tokens"]["output"] > 0
    assert base["ms"] > 0
    assert {k: faulted[k] for k in ("calls", "tokens", "faults", "models")} == {
        "calls": 3,
        "tokens": {"input": None, "output": None},
        "faults": 1,
        "models": [],
    }


def test_the_text_is_a_table(runs: Runs) -> None:
    done = runs.run("compare", *CASSETTES, "runs/faulted.jsonl")
    assert done.returncode == 0, done.stdout + done.stderr
    head, *rows = [line.split() for line in done.stdout.splitlines()]
    assert head == ["cassette", "calls", "tokens", "in", "tokens", "out", "ms", "faults", "models"]
    for row, cassette in zip(rows, CASSETTES, strict=False):
        want = expected(runs, cassette)
        assert row == [
            cassette,
            "2",
            str(want["tokens"]["input"]),
            str(want["tokens"]["output"]),
            f"{want['ms']:g}",
            "0",
            *", ".join(want["models"]).split(),
        ]
    assert rows[2] == ["runs/faulted.jsonl", "3", "-", "-", rows[2][4], "1", "-"]


def test_verify_replays_the_program_on_each(runs: Runs) -> None:
    done = runs.run("compare", *CASSETTES, "--", *program())
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split()[-1] == "verify"
    assert [line.split()[-2:] for line in lines[1:3]] == [["exit", "0"], ["exit", "0"]]
    assert lines[3] == f"{' '.join(program())} replays on each of 2 cassettes"


def test_verify_says_which_cassette_the_program_fails_on(runs: Runs) -> None:
    # The answer must come from MODEL: the fork's came from OTHER.
    check = program("--expect", MODEL)
    done = runs.run("compare", *CASSETTES, "--format", "json", "--", *check)
    assert done.returncode == 1, done.stdout + done.stderr
    data = json.loads(done.stdout)
    assert data["verify"] == check
    assert [row["verify"] for row in data["cassettes"]] == [
        {"exit": 0, "misses": 0, "passed": True},
        {"exit": 1, "misses": 0, "passed": False},
    ]
    text = runs.run("compare", *CASSETTES, "--", *check)
    assert text.returncode == 1
    lines = text.stdout.splitlines()
    assert lines[1].endswith("exit 0")
    assert lines[2].endswith("exit 1")
    again = f"faultdeck replay runs/other.jsonl -- {' '.join(check)}"
    said = f"the answer came from {OTHER}, not {MODEL}"
    assert lines[3] == (
        f"{' '.join(check)} failed on runs/other.jsonl ({said}); see why with: {again}"
    )


@pytest.mark.parametrize(
    ("name", "text", "says"),
    [
        ("missing.jsonl", None, "runs/missing.jsonl: no such cassette"),
        ("corrupt.jsonl", "not json\n", "runs/corrupt.jsonl:1: header is not JSON"),
    ],
)
def test_a_missing_or_corrupt_cassette_is_one_line_and_runs_nothing(
    runs: Runs, name: str, text: str | None, says: str, tmp_path: Path
) -> None:
    path = runs.folder / "runs" / name
    if text is not None:
        path.write_text(text, "utf-8")
    ran = tmp_path / "ran"
    command = ["python", "-c", f"open({str(ran)!r}, 'w')"]
    try:
        done = runs.run("compare", CASSETTES[0], f"runs/{name}", "--", *command)
    finally:
        path.unlink(missing_ok=True)
    assert done.returncode == 2, done.stdout + done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith(f"faultdeck: error: {says}")
    assert done.stdout == ""
    assert not ran.exists()


def test_help_has_an_example(runs: Runs) -> None:
    done = runs.run("compare", "--help")
    assert done.returncode == 0
    assert "faultdeck compare runs/base.jsonl runs/4o.jsonl -- python agent.py" in done.stdout
