"""``[tool.faultdeck]`` settings reach the deck, and bad settings say where and what."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

import faultdeck as fd


def project(tmp_path: Path, table: str) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "pyproject.toml").write_text(f"[tool.faultdeck]\n{table}\n", "utf-8")
    return tmp_path


def test_defaults_without_a_pyproject(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    settings = fd.config.load_settings(tmp_path)
    assert settings.root == str(tmp_path)
    assert (settings.mode, settings.match, settings.cassette_dir) == (None, "keyed", None)


def test_a_projects_settings_are_one_object_until_its_pyproject_changes(tmp_path: Path) -> None:
    # Decks share what they build from the same settings (a rehearsal makes one per cell).
    bare = tmp_path / "bare"
    (bare / ".git").mkdir(parents=True)
    assert fd.config.load_settings(bare) is fd.config.load_settings(bare / ".git")
    root = project(tmp_path / "configured", 'mode = "record"')
    first = fd.config.load_settings(root)
    assert fd.config.load_settings(root) is first
    pyproject = root / "pyproject.toml"
    pyproject.write_text('[tool.faultdeck]\nmode = "replay"\n', "utf-8")
    stat = pyproject.stat()
    os.utime(pyproject, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    assert fd.config.load_settings(root).mode == "replay"


def test_settings_reach_the_deck(tmp_path: Path) -> None:
    rules = tmp_path / "myrules.py"
    rules.write_text(
        "def drop_trace(args):\n    return {k: v for k, v in args.items() if k != 'trace'}\n",
        "utf-8",
    )
    sys.path.insert(0, str(tmp_path))
    try:
        root = project(
            tmp_path,
            'mode = "record"\nmatch = "strict"\nvolatile = ["nonce"]\n'
            'strip_headers = ["X-Proxy-Id"]\npublic_env = ["REGION"]\n'
            "[tool.faultdeck.redact_patterns]\n"
            'internal_token = "itk_[A-Za-z0-9]{24}"\n'
            "[tool.faultdeck.normalizers]\n"
            'search = "myrules:drop_trace"\n',
        )
        settings = fd.config.load_settings(root / "sub" / "dir")
        path = tmp_path / "c.jsonl"
        token = "itk_" + "Ab1" * 8
        with fd.Deck(path, settings=settings, environ={"REGION": "eu"}) as deck:
            assert deck.mode == "record"
            deck.call(
                "tool",
                "search",
                {"q": "x", "trace": "t-1", "nonce": 5, "headers": {"x-proxy-id": "p"}},
                lambda: {"note": f"use {token}"},
            )
            deck.env("REGION")
        recording = fd.load(path)
        assert recording.header.match == "strict"
        assert recording.header.volatile == (
            "completed_at",
            "createTime",
            "created",
            "created_at",
            "nonce",
        )
        search, region = recording.entries
        assert search.args == {"q": "x", "nonce": 0, "headers": {}}
        assert token not in path.read_text("utf-8")
        assert "«redacted:sha256:" in str(search.value)
        assert region.value == "eu"
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("myrules", None)


@pytest.mark.parametrize(
    ("table", "says"),
    [
        ('modee = "replay"', "unknown key 'modee'; known keys: cassette_dir, mode"),
        ('mode = "recrod"', "mode 'recrod' is not one of: replay, record"),
        ('match = "fuzzy"', "match 'fuzzy' is not one of: keyed, strict"),
        ("volatile = 3", "volatile must be a list"),
        ("mode = ", "not valid TOML"),
    ],
)
def test_bad_settings_name_the_file_and_key(tmp_path: Path, table: str, says: str) -> None:
    root = project(tmp_path, table)
    with pytest.raises(fd.ConfigError) as info:
        fd.config.load_settings(root)
    assert str(root / "pyproject.toml") in str(info.value)
    assert says in str(info.value)


def test_a_bad_normalizer_path_is_named(tmp_path: Path) -> None:
    root = project(tmp_path, '[tool.faultdeck.normalizers]\nsearch = "no_such_module:f"\n')
    with pytest.raises(fd.ConfigError, match=r"normalizers\] search: cannot import"):
        fd.Deck(tmp_path / "c.jsonl", settings=fd.config.load_settings(root))
