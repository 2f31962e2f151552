"""``faultdeck extract``, run as a user runs it; the one-call cassette it writes replays in a
pytest test of the tool function alone."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

import faultdeck as fd
from faultdeck._cassette.extract import extract, extract_json
from tests.support import GOLDEN, children
from tests.support.children import child_env
from tests.support.plants import one_per_pattern


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return children.run([sys.executable, "-m", "faultdeck", *args], cwd=cwd, timeout=120)


@pytest.fixture
def golden(tmp_path: Path) -> Path:
    path = tmp_path / "golden.jsonl"
    shutil.copy(GOLDEN, path)
    return path


def test_extract_writes_a_one_call_cassette_beside_it(golden: Path) -> None:
    done = run("extract", str(golden), "--seq", "3")
    target = golden.parent / "golden-seq3.jsonl"
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"wrote {target}: seq 3 of {golden}, tool read_file"
    header, call, end = target.read_bytes().splitlines()
    original = golden.read_bytes().splitlines()
    assert call == original[3]  # the line as recorded, byte for byte
    assert orjson.loads(header) == {
        **orjson.loads(original[0]),
        "extracted": {"from": str(golden), "seq": 3},
    }
    assert orjson.loads(end) == {"end": {"calls": 1, "status": "ok"}}
    recording = fd.load(target)
    assert [(e.seq, e.name) for e in recording.entries] == [(3, "read_file")]
    assert not recording.interrupted


def test_extract_never_overwrites_without_force(golden: Path) -> None:
    target = golden.parent / "golden-seq3.jsonl"
    target.write_text("mine\n")
    done = run("extract", str(golden), "--seq", "3")
    assert done.returncode == 2
    assert done.stderr == (
        f"faultdeck: error: {target} exists already; pass --force to replace it, "
        "or -o another path\n"
    )
    assert target.read_text() == "mine\n"
    forced = run("extract", str(golden), "--seq", "3", "--force")
    assert forced.returncode == 0, forced.stderr
    assert target.read_bytes() == extract(golden, 3)


def test_format_json_is_the_plain_call(golden: Path) -> None:
    done = run("extract", str(golden), "--seq", "4", "--format", "json", "-o", "-")
    assert done.returncode == 0, done.stderr
    call = orjson.loads(done.stdout)
    assert sorted(call) == ["args", "kind", "name", "out"]
    assert (call["kind"], call["name"]) == ("model", "chat")
    assert call["out"]["tool_call"]["name"] == "write_patch"
    assert call == extract_json(golden, 4)
    assert list(golden.parent.iterdir()) == [golden]  # stdout only


def test_a_seq_the_cassette_lacks_names_the_seqs_it_has(golden: Path) -> None:
    done = run("extract", str(golden), "--seq", "9")
    assert done.returncode == 2
    assert done.stderr == (
        f"faultdeck: error: {golden}: has no call with seq 9 (its seqs: 1-5); pick one of them\n"
    )
    assert list(golden.parent.iterdir()) == [golden]


def test_a_seq_on_several_lines_takes_the_first_unless_line_says(golden: Path) -> None:
    first = run("extract", str(golden), "--seq", "5", "-o", "-")
    assert first.returncode == 0, first.stderr
    assert "seq 5 is on lines 6, 8, 10" in first.stderr
    assert orjson.loads(first.stdout.splitlines()[1])["name"] == "write_patch"
    picked = run("extract", str(golden), "--seq", "5", "--line", "8", "-o", "-")
    assert picked.returncode == 0, picked.stderr
    assert picked.stdout.splitlines()[1].encode() == golden.read_bytes().splitlines()[7]
    wrong = run("extract", str(golden), "--seq", "5", "--line", "9")
    assert wrong.returncode == 2
    assert wrong.stderr.startswith(f"faultdeck: error: {golden}:9: seq 5 is not on this line")


def test_a_credential_shaped_line_is_not_copied(tmp_path: Path) -> None:
    plant = next(iter(one_per_pattern().values()))
    cassette = tmp_path / "leaky.jsonl"
    lines = [
        {"faultdeck": 1},
        {"seq": 1, "kind": "tool", "name": "t", "key": "tool:0", "args": {}, "out": plant.text},
    ]
    cassette.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    done = run("extract", str(cassette), "--seq", "1")
    assert done.returncode == 2
    assert "credential-shaped" in done.stderr
    assert plant.secret not in done.stderr
    assert list(tmp_path.iterdir()) == [cassette]


TOOL_TEST = """
import pytest

from faultdeck.workshop import Workshop


@pytest.mark.faultdeck(cassette="cassettes/golden-seq3.jsonl")
def test_read_file_answers_the_recorded_note(deck):
    note = Workshop(deck).read_file(path="docs/quota.md")
    assert note["text"].startswith("On quota errors without Retry-After")


@pytest.mark.faultdeck(cassette="cassettes/golden-seq3.jsonl")
def test_another_path_is_not_in_the_fixture(deck):
    Workshop(deck).read_file(path="docs/retry-budget.md")
"""


def test_the_extracted_cassette_replays_in_a_pytest_test_of_the_tool(
    golden: Path, tmp_path: Path
) -> None:
    (tmp_path / "cassettes").mkdir()
    (tmp_path / "test_tool.py").write_text(TOOL_TEST, "utf-8")
    out = "cassettes/golden-seq3.jsonl"
    done = run("extract", str(golden), "--seq", "3", "-o", out, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--faultdeck-strict"],
        cwd=tmp_path,
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert "1 failed, 1 passed" in done.stdout, done.stdout + done.stderr
    assert "test_another_path_is_not_in_the_fixture" in done.stdout
    assert "replay miss at seq 1: tool read_file" in done.stdout


def test_an_output_folder_that_does_not_exist_is_one_line(golden: Path) -> None:
    done = run("extract", str(golden), "--seq", "2", "-o", str(golden.parent / "no" / "x.jsonl"))
    assert done.returncode == 2
    assert done.stderr == (
        f"faultdeck: error: {golden.parent}/no/x.jsonl: no folder {golden.parent}/no; "
        "create it, or pick another path\n"
    )
    assert list(golden.parent.iterdir()) == [golden]
