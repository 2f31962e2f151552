"""A rehearsal reads its cassette once: ``load_shared`` gives the recording read before while
the file is unchanged, and reads it afresh the moment it is not.

Real files, rewritten the way a re-recording or an editor would, including in place to the
same size with the modification time put back.
"""

from __future__ import annotations

import os
import shutil
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

import faultdeck as fd
from faultdeck import Matrix, rehearse
from faultdeck._cassette import reader
from faultdeck._cassette.reader import load_shared
from faultdeck._keys.canonical import make_key
from tests.support import GOLDEN, ROOT

ENTRY = "examples.workshop.rehearsal"
HEADER = {"faultdeck": 1, "match": "keyed", "harness": {}, "env": {}, "volatile": []}


def write(path: Path, answer: Any, *, end: bool = True) -> None:
    line = {"seq": 1, "kind": "tool", "name": "t", "key": make_key("tool", "t", {})}
    line.update({"args": {}, "out": answer, "ms": 1})
    lines = [orjson.dumps(HEADER), orjson.dumps(line)]
    if end:
        lines.append(orjson.dumps({"end": {"calls": 1, "status": "ok"}}))
    path.write_bytes(b"\n".join(lines) + b"\n")


def replayed(path: Path) -> Any:
    with fd.Deck(path, mode="replay", on_harness_change="ignore") as deck:
        return deck.call("tool", "t", {}, lambda: "live")


def test_an_unchanged_cassette_is_read_once(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    write(path, {"n": 1})
    first = load_shared(path)
    assert load_shared(path) is first
    assert load_shared(str(path)) is first
    assert first.entries[0].value == {"n": 1}


@pytest.mark.parametrize("compared", ["byte for byte", "by hash"])
def test_a_cassette_rewritten_in_place_to_the_same_size_is_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, compared: str
) -> None:
    if compared == "by hash":  # as a cassette larger than COMPARE_UP_TO is told apart
        monkeypatch.setattr(reader, "COMPARE_UP_TO", 16)
    path = tmp_path / "c.jsonl"
    write(path, "aaaa")
    assert replayed(path) == "aaaa"
    before = path.stat()
    data = path.read_bytes()
    with open(path, "r+b") as file:  # same inode, same size
        file.write(data.replace(b'"aaaa"', b'"bbbb"'))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # and the same mtime
    after = path.stat()
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (
        before.st_ino,
        before.st_size,
        before.st_mtime_ns,
    )
    assert load_shared(path).entries[0].value == "bbbb"
    assert replayed(path) == "bbbb"


def test_a_cassette_replaced_by_another_file_is_read_again(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    write(path, 1)
    assert replayed(path) == 1
    other = tmp_path / "other.jsonl"
    write(other, 2)
    other.replace(path)
    assert replayed(path) == 2


def test_what_a_replay_returns_is_its_own(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    write(path, {"hits": ["a"]})
    got = replayed(path)
    got["hits"].append("changed by the caller")
    assert replayed(path) == {"hits": ["a"]}
    assert load_shared(path).entries[0].value == {"hits": ["a"]}


def test_each_caller_sees_the_path_it_gave(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "c.jsonl"
    write(path, 1)
    assert load_shared(path).path == str(path)
    monkeypatch.chdir(tmp_path)
    assert load_shared("c.jsonl").path == "c.jsonl"
    assert load_shared(path).path == str(path)


def test_errors_are_those_of_load(tmp_path: Path) -> None:
    missing = tmp_path / "missing.jsonl"
    with pytest.raises(fd.CassetteNotFound, match="no such cassette"):
        load_shared(missing)
    with pytest.raises(fd.CassetteNotFound, match="is a directory"):
        load_shared(tmp_path)
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(orjson.dumps(HEADER) + b"\n{not json\n")
    with pytest.raises(fd.CassetteCorrupt, match=r"bad\.jsonl:2"):
        load_shared(bad)


def test_a_truncated_last_line_is_warned_about_every_time(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    write(path, 1, end=False)
    with open(path, "ab") as file:
        file.write(b'{"seq": 2, "ki')
    for _ in range(2):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            recording = load_shared(path)
        assert [str(w.message) for w in caught if "truncated" in str(w.message)]
        assert recording.truncated_line == 3
        assert len(recording.entries) == 1


# -- a whole rehearsal -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def examples_importable() -> Iterator[None]:
    """The entrypoints live in ``examples/``, a package at the repository root."""
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(ROOT))
        yield


def findings(matrix: Matrix) -> list[tuple[Any, ...]]:
    return [
        (c.label, c.seq, c.status, tuple(v.invariant for v in c.violations), c.outcomes)
        for c in matrix.cells
    ]


@pytest.mark.usefixtures("examples_importable")
def test_two_rehearsals_find_what_a_fresh_read_finds(tmp_path: Path) -> None:
    first = rehearse(f"{ENTRY}:retry_on_quota", GOLDEN)
    second = rehearse(f"{ENTRY}:retry_on_quota", GOLDEN)
    copy = tmp_path / "golden.jsonl"  # another file: nothing shared with the runs above
    shutil.copyfile(GOLDEN, copy)
    fresh = rehearse(f"{ENTRY}:retry_on_quota", copy)
    assert first.cells == second.cells
    assert findings(first) == findings(fresh)
    assert any(c.status == "broke" for c in first.cells)  # the loop it runs is a broken one
    assert any(c.status == "held" for c in first.cells)
