"""``faultdeck fork --model``: an openai-SDK tool loop with no faultdeck in it, recorded,
then forked at its first call onto another model; the fork replays offline with the same
command line."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

import faultdeck as fd

from .model_runs import ANSWER, MODEL, OTHER, Runs, program, record_and_fork


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    made = record_and_fork(tmp_path_factory.mktemp("fork-model"))
    assert made.recorded.returncode == 0, made.recorded.stdout + made.recorded.stderr
    assert made.forked.returncode == 0, made.forked.stdout + made.forked.stderr
    return made


def test_the_live_call_reaches_the_upstream_asking_for_the_other_model(runs: Runs) -> None:
    assert runs.forked.stdout == (
        f"{ANSWER} {OTHER}\nforked runs/base.jsonl at seq 1 into runs/other.jsonl: "
        f"1 call replayed, 1 live (sent to {OTHER})\n"
    )
    # Only the second turn went live (the first replayed), and it asked for OTHER.
    ((sent,),) = [runs.sent]
    assert sent["json"]["model"] == OTHER
    assert sent["json"]["messages"][-1] == {
        "role": "tool",
        "tool_call_id": sent["json"]["messages"][-2]["tool_calls"][0]["id"],
        "content": "sunny",
    }


def test_the_fork_records_what_was_sent(runs: Runs) -> None:
    base = fd.load(runs.folder / "runs" / "base.jsonl")
    fork = fd.load(runs.folder / "runs" / "other.jsonl")
    assert [e.args["body"]["model"] for e in fork.entries] == [MODEL, OTHER]
    assert [e.value["body"]["model"] for e in fork.entries] == [MODEL, OTHER]
    assert fork.entries[0].to_json() == base.entries[0].to_json()  # copied as recorded
    digest = hashlib.sha256((runs.folder / "runs" / "base.jsonl").read_bytes()).hexdigest()
    assert fork.header.extra["parent"] == {
        "path": "runs/base.jsonl",
        "at": 1,
        "sha256": digest,
        "model": OTHER,
    }
    assert [e.args["body"]["model"] for e in base.entries] == [MODEL, MODEL]


def test_the_fork_replays_offline_with_the_same_program(runs: Runs) -> None:
    done = runs.run("replay", "runs/other.jsonl", "--format", "json", "--", *program())
    assert done.returncode == 0, done.stdout + done.stderr
    output, _, data = done.stdout.partition("\n")
    assert output == f"{ANSWER} {OTHER}"
    (report,) = json.loads(data)["reports"]
    assert (report["used"], report["live"], report["misses"]) == (2, 0, [])
    # The parent replays as it was: the program asks for its own model, and gets it.
    done = runs.run("replay", "runs/base.jsonl", "--", *program())
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith(f"{ANSWER} {MODEL}\n")


def test_show_and_diff_say_where_the_fork_was_sent(runs: Runs) -> None:
    shown = runs.run("show", "runs/other.jsonl").stdout.splitlines()
    assert f"  └─ runs/other.jsonl forked at seq 1, sent to {OTHER} (this cassette)" in shown
    done = runs.run("diff", "runs/base.jsonl", "runs/other.jsonl")
    assert done.returncode == 1, done.stdout
    assert "B forked from A at seq 1" in done.stdout
    assert f'args.body.model: "{MODEL}" → "{OTHER}"' in done.stdout


def test_a_fork_of_the_fork_goes_on_with_its_model(runs: Runs) -> None:
    # At 2 every call replays: the second from runs/other.jsonl, sent to OTHER there.
    done = runs.run(
        "fork", "runs/other.jsonl", "--at", "2", "-o", "runs/again.jsonl", "--", *program()
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 calls replayed, 0 live" in done.stdout
    parent = fd.load(runs.folder / "runs" / "again.jsonl").header.extra["parent"]
    assert (parent["model"], parent["shared_models"]) == (OTHER, [{"after": 1, "model": OTHER}])
    done = runs.run("replay", "runs/again.jsonl", "--", *program())
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (
            ["runs/base.jsonl", "--at", "2", "--model", "x"],
            None,  # no call after the fork point: nothing to refuse, nothing live
        ),
        (["runs/base.jsonl", "--at", "1", "--model", ""], "--model is empty"),
        (["runs/missing.jsonl", "--at", "1", "--model", "x"], "no such cassette"),
    ],
)
def test_model_options_checked_before_any_run(
    runs: Runs, args: list[str], says: str | None, tmp_path: Path
) -> None:
    new = str(tmp_path / "new.jsonl")
    done = runs.run("fork", *args, "-o", new, "--", *program())
    if says is None:
        assert done.returncode == 0, done.stdout + done.stderr
        assert "2 calls replayed, 0 live (sent to x)" in done.stdout
        return
    assert done.returncode == 2, done.stdout + done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("faultdeck: error: ")
    assert says in line
    assert not Path(new).exists()


@pytest.mark.parametrize("model", [5, "", None])
def test_a_header_whose_model_no_fork_writes_is_refused(
    runs: Runs, model: object, tmp_path: Path
) -> None:
    header, rest = (runs.folder / "runs" / "other.jsonl").read_text("utf-8").split("\n", 1)
    fields = json.loads(header)
    fields["parent"]["model"] = model
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(fields) + "\n" + rest, "utf-8")
    says = f"{bad}:1: header: parent.model is not a model name"
    with pytest.raises(fd.CassetteCorrupt, match=r"header: parent\.model"):
        fd.Deck(bad).open()
    ran = tmp_path / "ran"
    done = runs.run("replay", str(bad), "--", "python", "-c", f"open({str(ran)!r}, 'w')")
    assert done.returncode == 2, done.stdout + done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith(f"faultdeck: error: {says}")
    assert not ran.exists()
