"""``max_age``: the setting, and ``faultdeck scan --max-age`` on cassettes in a git repository.

Each test makes its own repository under ``tmp_path`` (git configured by the environment
only), commits a cassette at a fixed old date, and asks how old it is.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import faultdeck as fd
from faultdeck._base.config import Committed, last_commit, load_settings, parse_age
from tests.support.children import child_env

EXE = str(Path(sys.executable).parent / "faultdeck")
OLD = "2020-01-01T00:00:00Z"


def git_env() -> dict[str, str]:
    return {
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
        "GIT_AUTHOR_DATE": OLD,
        "GIT_COMMITTER_DATE": OLD,
    }


def git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", *args], cwd=repo, env={**os.environ, **git_env()}, check=True,
        capture_output=True, timeout=30,
    )  # fmt: skip


def cassette(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with fd.Deck(path, mode="record") as deck:
        deck.call("tool", "t", {"q": 1}, lambda: {"ok": True})
    return path


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository with ``old.jsonl`` committed in 2020 and ``new.jsonl`` never committed."""
    root = tmp_path / "proj"
    root.mkdir()
    git(root, "init", "-q", ".")
    cassette(root / "runs" / "old.jsonl")
    git(root, "add", "runs/old.jsonl")
    git(root, "commit", "-q", "-m", "old")
    cassette(root / "runs" / "new.jsonl")
    return root


def scan(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [EXE, "scan", *args], capture_output=True, text=True, cwd=cwd,
        env=child_env(COLUMNS="120", **git_env()), timeout=60, check=False,
    )  # fmt: skip


def test_parse_age() -> None:
    assert parse_age("90d") == 90 * 86400
    assert parse_age("12h") == 12 * 3600
    assert parse_age("2w") == 14 * 86400
    for bad in ("90", "d", "0d", "-1d", "1y", ""):
        with pytest.raises(ValueError, match="is not an age like 90d"):
            parse_age(bad)


def test_a_bad_max_age_setting_is_a_config_error_naming_the_key(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.faultdeck]\nmax_age = "3 months"\n')
    with pytest.raises(fd.ConfigError, match=r"\[tool.faultdeck\]: max_age '3 months' is not"):
        load_settings(tmp_path)
    (tmp_path / "pyproject.toml").write_text('[tool.faultdeck]\nmax_age = " 90d"\n')
    assert load_settings(tmp_path).max_age == "90d"


def test_last_commit(repo: Path, tmp_path: Path) -> None:
    old = last_commit(repo / "runs" / "old.jsonl")
    assert old.in_git
    assert old.at == 1577836800  # 2020-01-01T00:00:00Z
    assert last_commit(repo / "runs" / "new.jsonl") == Committed(in_git=True, at=None)
    outside = cassette(tmp_path / "outside" / "x.jsonl")
    assert not last_commit(outside).in_git


def test_scan_max_age_reports_old_commits_only(repo: Path) -> None:
    done = scan("runs", "--max-age", "90d", cwd=repo)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "runs/old.jsonl: last committed 2020-01-01" in done.stdout
    assert "older than max_age 90d" in done.stdout
    assert "new.jsonl" not in done.stdout  # uncommitted: not stale
    assert "1 cassette of 2 last committed more than 90d ago" in done.stderr
    young = scan("runs", "--max-age", "100000d", cwd=repo)
    assert young.returncode == 0, young.stdout + young.stderr
    assert "no cassette last committed more than 100000d ago" in young.stdout


def test_scan_max_age_bare_takes_the_setting(repo: Path) -> None:
    done = scan("runs", "--max-age", cwd=repo)
    assert done.returncode == 2
    assert "--max-age needs an AGE" in done.stderr
    (repo / "pyproject.toml").write_text('[tool.faultdeck]\nmax_age = "30d"\n')
    done = scan("runs", "--max-age", "--format", "json", cwd=repo)
    assert done.returncode == 1, done.stderr
    data = json.loads(done.stdout)
    assert data["max_age"] == "30d"
    assert [s["file"] for s in data["stale"]] == ["runs/old.jsonl"]
    assert data["stale"][0]["committed"] == "2020-01-01"
    plain = scan("runs", "--format", "json", cwd=repo)  # not asked: secrets only, as before
    assert plain.returncode == 0
    assert "stale" not in json.loads(plain.stdout)


def test_scan_max_age_bad_input_is_one_line(repo: Path) -> None:
    done = scan("runs", "--max-age", "soon", cwd=repo)
    assert done.returncode == 2
    assert done.stderr.startswith("faultdeck: error: ")
    assert "'soon' is not an age like 90d, 12h or 2w" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    (repo / "pyproject.toml").write_text('[tool.faultdeck]\nmax_age = "90"\n')
    done = scan("runs", cwd=repo)
    assert done.returncode == 2
    assert "max_age '90' is not an age" in done.stderr


def test_scan_max_age_outside_git_says_so_once(tmp_path: Path) -> None:
    folder = tmp_path / "loose"
    cassette(folder / "a.jsonl")
    cassette(folder / "b.jsonl")
    done = scan(str(folder), "--max-age", "1d", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    warnings = [line for line in done.stderr.splitlines() if "not in a git repository" in line]
    assert warnings == [
        "faultdeck: warning: 2 files not in a git repository: --max-age cannot tell their age"
    ]
