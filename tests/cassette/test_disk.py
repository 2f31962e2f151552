"""The lock and the disk: one writer through any path, and a disk that refuses a write gets
faultdeck's own error, the lock released and the report kept.

The disk really refuses here: a tmpfs mounted full (as root), the process's file size limit,
and a folder the process may not write (a non-root child when the tests run as root, since
root ignores permissions).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import textwrap
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

import faultdeck as fd
from tests.support.children import run

BIG = {"text": "x" * 20_000}


def test_a_second_writer_through_a_symlink_is_refused(tmp_path: Path) -> None:
    real = tmp_path / "real.jsonl"
    link = tmp_path / "link.jsonl"
    link.symlink_to(real)
    with fd.Deck(real, mode="record") as first:
        first.call("tool", "t", {}, lambda: 1)
        for mode in ("record", "append", "resume"):
            with pytest.raises(fd.CassetteLocked, match=r"real\.jsonl\.lock"):
                fd.Deck(link, mode=mode).open()
        first.call("tool", "t", {"n": 2}, lambda: 2)
    assert len(fd.load(real).entries) == 2
    assert not (tmp_path / "link.jsonl.lock").exists()


@contextlib.contextmanager
def full_disk(folder: Path, size: str) -> Iterator[Path]:
    folder.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
        capture_output=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({mounted.stderr.decode().strip()})")
    try:
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=True)


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a full tmpfs needs root")
def test_a_full_disk_is_a_cassette_write_error_and_loses_nothing_recorded(tmp_path: Path) -> None:
    with full_disk(tmp_path / "disk", "256k") as disk:
        good = disk / "good.jsonl"
        with fd.Deck(good, mode="record") as deck:
            deck.call("tool", "t", {}, lambda: 1)
        before = good.read_bytes()
        deck = fd.Deck(good, mode="record")
        made = 0
        with pytest.raises(fd.CassetteWriteError) as info, deck:  # noqa: PT012 - fills the disk
            for i in range(100):
                deck.call("tool", "big", {"i": i}, lambda: BIG)
                made += 1
        message = str(info.value)
        assert "good" in message
        assert "disk is full" in message
        assert good.read_bytes() == before  # the cassette it was replacing is untouched
        report = deck.report()
        assert report.live == made + 1  # the call whose line failed ran, and is in the report
        assert made > 3
        assert not (disk / "good.jsonl.lock").exists()  # the lock is released
        partial = disk / "good.partial.jsonl"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", fd.CassetteWarning)  # the torn last line
            assert len(fd.load(partial).entries) == made  # every line written reads back
        partial.unlink()  # free the disk: the next recording of the cassette may go ahead
        with fd.Deck(good, mode="record") as again:
            again.call("tool", "t", {}, lambda: "new")
        assert fd.load(good).entries[0].value == "new"


FSIZE = textwrap.dedent(
    """
    import json, resource, sys
    import faultdeck as fd
    resource.setrlimit(resource.RLIMIT_FSIZE, (200_000, 200_000))
    path = sys.argv[1]
    deck = fd.Deck(path, mode="record", on_harness_change="ignore")
    made = 0
    try:
        with deck:
            for i in range(100):
                deck.call("tool", "big", {"i": i}, lambda: {"text": "x" * 20_000})
                made += 1
    except fd.CassetteWriteError as exc:
        print(json.dumps({"error": str(exc), "made": made, "live": deck.report().live}))
        sys.exit(0)
    except BaseException as exc:
        print(json.dumps({"escaped": type(exc).__name__, "message": str(exc)}))
        sys.exit(0)
    print(json.dumps({"nothing": made}))
    """
)


def test_the_file_size_limit_is_a_cassette_write_error(tmp_path: Path) -> None:
    script = tmp_path / "fsize.py"
    script.write_text(FSIZE, "utf-8")
    path = tmp_path / "limited.jsonl"
    done = run([sys.executable, str(script), str(path)])
    assert done.returncode == 0, done.stderr

    result = json.loads(done.stdout)
    assert "error" in result, result
    assert "file size limit" in result["error"]
    assert str(path) in result["error"]
    assert result["live"] == result["made"] + 1
    assert not (tmp_path / "limited.jsonl.lock").exists()
    with pytest.warns(fd.CassetteWarning, match="truncated last line"):
        recording = fd.load(path)  # the line the limit cut is skipped, the rest reads back
    assert len(recording.entries) == result["made"]


UNWRITABLE = textwrap.dedent(
    """
    import json, os, sys
    import faultdeck as fd
    results = {}
    for name in sys.argv[1:]:
        try:
            with fd.Deck(name, mode="record", on_harness_change="ignore") as deck:
                deck.call("tool", "t", {}, lambda: 1)
            results[name] = "written"
        except fd.CassetteWriteError as exc:
            results[name] = str(exc)
        except BaseException as exc:
            results[name] = "escaped " + type(exc).__name__ + ": " + str(exc)
    print(json.dumps(results))
    """
)


def test_a_folder_that_may_not_be_written_is_a_cassette_write_error(tmp_path: Path) -> None:
    folder = tmp_path / "readonly"
    folder.mkdir()
    good = folder / "good.jsonl"
    with fd.Deck(good, mode="record") as deck:
        deck.call("tool", "t", {}, lambda: "old")
    before = good.read_bytes()
    folder.chmod(0o555)
    script = tmp_path / "unwritable.py"
    script.write_text(UNWRITABLE, "utf-8")
    # Root ignores permissions; without the capabilities that let it, it meets them too.
    drop = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search", "--"]
    command = [*(drop if os.geteuid() == 0 else []), sys.executable, str(script)]
    try:
        done = run([*command, str(good), str(folder / "new.jsonl")], cwd="/")
    finally:
        folder.chmod(0o755)
    assert done.returncode == 0, done.stderr

    results = json.loads(done.stdout)
    for name, said in results.items():
        assert not said.startswith("escaped"), said
        assert said != "written"
        assert name in said
        assert "not writable" in said
    assert good.read_bytes() == before
