"""Calls a run in append mode added to a cassette: put where that run made them, and shown
as ``5+1``, ``5+2``… (the calls added after seq 5) instead of a seq another call holds."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

import faultdeck as fd
from faultdeck.cli import main
from tests.support.calls import returns

EXTRAS = (0, 1, 2)


def run(
    path: Path, mode: fd.config.Mode, extras: tuple[int, ...] = (), *, changed: int | None = None
) -> Path:
    """Seven ``step`` calls, with ``extra`` calls made after step 5; extra ``changed`` asks
    for something else."""
    with fd.Deck(path, mode=mode) as deck:
        for i in range(1, 8):
            deck.call("tool", "step", {"i": i}, returns({"ok": i}))
            if i == 5:
                for j in extras:
                    args = {"j": j * 10 if j == changed else j}
                    deck.call("tool", "extra", args, returns({"ok": j}))
    return path


def appended(tmp_path: Path, *sessions: tuple[int, ...]) -> Path:
    """A cassette recorded without the extras, then run in append mode once per session."""
    path = run(tmp_path / "appended.jsonl", "record")
    for extras in sessions:
        run(path, "append", extras)
    return path


def places(diff: fd.CallPathDiff) -> list[tuple[str, str]]:
    return [(row.place("a"), row.place("b")) for row in diff.rows]


FRESH_AGAINST_APPENDED = [
    ("1", "1"),
    ("2", "2"),
    ("3", "3"),
    ("4", "4"),
    ("5", "5"),
    ("6", "5+1"),
    ("7", "5+2"),
    ("8", "5+3"),
    ("9", "6"),
    ("10", "7"),
]


def test_appended_calls_go_where_the_run_made_them(tmp_path: Path) -> None:
    fresh = run(tmp_path / "fresh.jsonl", "record", EXTRAS)
    path = appended(tmp_path, EXTRAS)
    # The appending run numbered its new calls 6, 7, 8: seqs steps 6 and 7 already hold.
    seqs = [e.seq for e in fd.load(path).entries]
    assert seqs == [1, 2, 3, 4, 5, 6, 7, 6, 7, 8]

    diff = fd.diff_recordings(fd.load(fresh), fd.load(path))
    assert diff.identical, fd.render.diff_text(diff)
    assert places(diff) == FRESH_AGAINST_APPENDED
    assert [row.appended("b") for row in diff.rows] == [False] * 5 + [True] * 3 + [False] * 2
    assert not any(row.appended("a") for row in diff.rows)
    assert [row.b.line for row in diff.rows if row.b is not None][5:8] == [10, 11, 12]


def test_several_append_runs_keep_their_order(tmp_path: Path) -> None:
    fresh = run(tmp_path / "fresh.jsonl", "record", EXTRAS)
    # Each session makes one more of the extras; the cassette answers the ones before.
    path = appended(tmp_path, (0,), (0, 1), (0, 1, 2))
    diff = fd.diff_recordings(fd.load(fresh), fd.load(path))
    assert diff.identical, fd.render.diff_text(diff)
    assert places(diff) == FRESH_AGAINST_APPENDED


def test_an_insertion_by_a_second_append_run_goes_before_the_first_runs_calls(
    tmp_path: Path,
) -> None:
    path = appended(tmp_path, (1, 2), (0, 1, 2))
    fresh = run(tmp_path / "fresh.jsonl", "record", EXTRAS)
    diff = fd.diff_recordings(fd.load(fresh), fd.load(path))
    assert diff.identical, fd.render.diff_text(diff)
    names = [(row.b.name, row.b.args) for row in diff.rows if row.b is not None][5:8]
    assert names == [("extra", {"j": 0}), ("extra", {"j": 1}), ("extra", {"j": 2})]
    assert places(diff) == FRESH_AGAINST_APPENDED


def test_calls_appended_at_the_end_keep_their_seq(tmp_path: Path) -> None:
    path = tmp_path / "short.jsonl"
    with fd.Deck(path, mode="record") as deck:
        for i in range(1, 6):
            deck.call("tool", "step", {"i": i}, returns({"ok": i}))
    shutil.copy(path, tmp_path / "grown.jsonl")
    run(tmp_path / "grown.jsonl", "append")
    diff = fd.diff_recordings(fd.load(path), fd.load(tmp_path / "grown.jsonl"))
    assert [row.place("b") for row in diff.rows] == ["1", "2", "3", "4", "5", "6", "7"]
    assert [row.op for row in diff.rows] == ["same"] * 5 + ["added"] * 2


@pytest.fixture
def diverging(tmp_path: Path) -> tuple[Path, Path]:
    """A: a fresh run whose second extra asks for ``j=10``; B: the extras appended."""
    return run(tmp_path / "a.jsonl", "record", EXTRAS, changed=1), appended(tmp_path, EXTRAS)


def test_cli_text_names_appended_calls_by_place(
    diverging: tuple[Path, Path],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    a, b = diverging
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setenv("TTY_COMPATIBLE", "1")
    assert main(["diff", str(a), str(b)]) == 1
    text = capsys.readouterr().out
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "first divergence at seq 7 of A / 5+2 of B (after 6 agreeing calls):" in text
    assert "tool extra: args.j 10 → 1 (appended to B at line 11)" in text
    assert "  N+k: the k-th call that a later run in append mode added after seq N" in text
    # Each call row: its mark, then seq A, seq B, kind, name, key.
    rows = [(line[0], *line[1:].split()[:2]) for line in text.splitlines() if " tool:" in line]
    assert rows == [
        (" ", "5", "5"),
        (" ", "6", "5+1"),
        ("~", "7", "5+2"),
        (" ", "8", "5+3"),
        (" ", "9", "6"),
    ]


def test_json_gives_each_calls_place_line_and_whether_appended(
    diverging: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = diverging
    assert main(["diff", str(a), str(b), "--format", "json"]) == 1
    data = json.loads(capsys.readouterr().out)
    (row,) = data["rows"]
    first = data["first"]
    assert (first["seq_a"], first["place_a"], first["appended_a"], first["line_a"]) == (
        7,
        "7",
        False,
        8,
    )
    assert (first["seq_b"], first["place_b"], first["appended_b"], first["line_b"]) == (
        7,
        "5+2",
        True,
        11,
    )
    assert first["text"] == (
        "first divergence at seq 7 of A / 5+2 of B (after 6 agreeing calls): "
        "tool extra: args.j 10 → 1 (appended to B at line 11)"
    )
    assert row["place_b"] == "5+2"


def test_html_shows_the_place_and_the_line(diverging: tuple[Path, Path]) -> None:
    a, b = diverging
    page = fd.render.diff_html(fd.diff_recordings(fd.load(a), fd.load(b)))
    # The B seq cell of every call row, in order.
    rows = re.findall(r'<tr class="[^"]*" id="row-\d+">(.*?)</tr>', page)
    seq_b = [re.findall(r"<td>(.*?)</td>", row)[4] for row in rows]
    shown = [re.sub(r"<[^>]+>", "", cell) for cell in seq_b]
    assert shown == [
        "1",
        "2",
        "3",
        "4",
        "5",
        "5+1 appended, line 10",
        "5+2 appended, line 11",
        "5+3 appended, line 12",
        "6",
        "7",
    ]
    assert 'title="the call a later run in append mode added after seq 5, at line 11' in page
