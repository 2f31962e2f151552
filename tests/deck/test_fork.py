"""Mode ``fork``: the parent's first calls replay, the rest run live into a new cassette."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

import faultdeck as fd
from faultdeck._base.config import MODES, Settings
from faultdeck._deck.fork import fork_from_env
from faultdeck._keys.redact import Redactor
from tests.support.calls import never, returns

STEPS = [("step", {"n": n}, {"ok": n}) for n in range(1, 6)]


def record(path: Path, items: Sequence[tuple[str, Mapping[str, object], object]]) -> None:
    with fd.Deck(path, mode="record") as deck:
        for name, args, out in items:
            deck.call("tool", name, args, returns(out))


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def parent(tmp_path: Path) -> Path:
    path = tmp_path / "runs" / "base.jsonl"
    path.parent.mkdir()
    record(path, STEPS)
    return path


def settings(root: Path) -> Settings:
    return Settings(root=str(root))


def test_fork_replays_up_to_the_point_then_records_live(parent: Path, tmp_path: Path) -> None:
    before = digest(parent)
    new = tmp_path / "runs" / "explore.jsonl"
    deck = fd.Deck(new, mode="fork", parent=parent, at=3, settings=settings(tmp_path))
    with deck:
        for n in (1, 2, 3):
            assert deck.call("tool", "step", {"n": n}, never) == {"ok": n}
        # Past the fork point a call runs live even though the parent recorded it.
        assert deck.call("tool", "step", {"n": 4}, returns({"ok": "live"})) == {"ok": "live"}
        assert deck.call("tool", "other", {}, returns(7)) == 7
    report = deck.report()
    assert (report.mode, report.used, report.live, report.entries) == ("fork", 3, 2, 3)
    assert digest(parent) == before  # the parent is only read
    recording = fd.load(new)
    assert [(e.seq, e.value) for e in recording.entries] == [
        (1, {"ok": 1}),
        (2, {"ok": 2}),
        (3, {"ok": 3}),
        (4, {"ok": "live"}),
        (5, 7),
    ]
    assert recording.header.extra["parent"] == {
        "path": "runs/base.jsonl",
        "at": 3,
        "sha256": before,
    }


def test_the_fork_replays_on_its_own(parent: Path, tmp_path: Path) -> None:
    new = tmp_path / "explore.jsonl"
    with fd.Deck(new, mode="fork", parent=parent, at=2) as deck:
        deck.call("tool", "step", {"n": 1}, never)
        deck.call("tool", "step", {"n": 2}, never)
        deck.call("tool", "new", {"x": 1}, returns("x"))
    parent.unlink()
    with fd.Deck(new, mode="replay") as replay:
        assert replay.call("tool", "step", {"n": 1}, never) == {"ok": 1}
        assert replay.call("tool", "step", {"n": 2}, never) == {"ok": 2}
        assert replay.call("tool", "new", {"x": 1}, never) == "x"
    assert replay.report().unused == ()


def test_a_call_before_the_fork_point_must_match_the_parent(parent: Path, tmp_path: Path) -> None:
    new = tmp_path / "explore.jsonl"
    with fd.Deck(new, mode="fork", parent=parent, at=3) as deck:
        deck.call("tool", "step", {"n": 1}, never)
        with pytest.raises(fd.ReplayMiss, match=f"no recorded answer left in {parent}"):
            deck.call("tool", "step", {"n": 99}, never)  # seq 2: not the parent's call
    assert deck.report().live == 0


def test_a_fork_at_0_records_everything_live(parent: Path, tmp_path: Path) -> None:
    new = tmp_path / "explore.jsonl"
    with fd.Deck(new, mode="fork", parent=parent, at=0) as deck:
        assert deck.call("tool", "step", {"n": 1}, returns("fresh")) == "fresh"
    assert [e.value for e in fd.load(new).entries] == ["fresh"]
    assert fd.load(new).header.extra["parent"]["at"] == 0


def test_a_strict_fork_keeps_seqs_strict(parent: Path, tmp_path: Path) -> None:
    new = tmp_path / "explore.jsonl"
    with pytest.raises(fd.ReplayMiss, match="match is strict"):
        with fd.Deck(new, mode="fork", parent=parent, at=3, match="strict") as deck:
            deck.call("tool", "step", {"n": 2}, never)  # recorded at seq 2, asked at seq 1
    assert json.loads(new.read_text("utf-8").splitlines()[0])["match"] == "strict"


def test_a_parent_outside_the_root_is_named_as_given(parent: Path, tmp_path: Path) -> None:
    root = tmp_path / "project"
    root.mkdir()
    new = root / "explore.jsonl"
    with fd.Deck(new, mode="fork", parent=parent, at=1, settings=settings(root)) as deck:
        deck.call("tool", "step", {"n": 1}, never)
    assert fd.load(new).header.extra["parent"]["path"] == str(parent)


def test_the_header_holds_nothing_credential_shaped(parent: Path, tmp_path: Path) -> None:
    new = tmp_path / "explore.jsonl"
    with fd.Deck(new, mode="fork", parent=parent, at=1) as deck:
        deck.call("tool", "step", {"n": 1}, never)
    header = new.read_text("utf-8").splitlines()[0]
    assert "sha256" in header
    assert Redactor().scan_text(header) == []


def test_a_fork_without_at_replays_until_the_first_call_the_parent_lacks(
    parent: Path, tmp_path: Path
) -> None:
    before = digest(parent)
    new = tmp_path / "runs" / "explore.jsonl"
    deck = fd.Deck(new, mode="fork", parent=parent, settings=settings(tmp_path))
    with deck:
        assert deck.call("tool", "step", {"n": 1}, never) == {"ok": 1}
        assert deck.call("tool", "step", {"n": 2}, never) == {"ok": 2}
        assert not new.exists()  # nothing is written while the run is on the parent's path
        # The parent has no answer for this one: it runs live, and every call after it.
        assert deck.call("tool", "other", {}, returns("live")) == "live"
        assert deck.call("tool", "step", {"n": 3}, returns({"ok": "again"})) == {"ok": "again"}
    assert digest(parent) == before
    recording = fd.load(new)
    assert recording.header.extra["parent"] == {
        "path": "runs/base.jsonl",
        "at": 2,
        "sha256": before,
    }
    assert [(e.seq, e.name, e.value) for e in recording.entries] == [
        (1, "step", {"ok": 1}),
        (2, "step", {"ok": 2}),
        (3, "other", "live"),
        (4, "step", {"ok": "again"}),
    ]
    with fd.Deck(new, mode="replay") as again:  # it replays on its own
        for args in ({"n": 1}, {"n": 2}):
            again.call("tool", "step", args, never)
        assert again.call("tool", "other", {}, never) == "live"


def test_a_fork_without_at_that_never_leaves_the_path_writes_nothing(
    parent: Path, tmp_path: Path
) -> None:
    new = tmp_path / "runs" / "explore.jsonl"
    with fd.Deck(new, mode="fork", parent=parent) as deck:
        for name, args, out in STEPS:
            assert deck.call("tool", name, args, never) == out
    assert deck.report().live == 0
    assert not new.exists()
    assert sorted(os.listdir(new.parent)) == ["base.jsonl"]  # no lock or partial file left


@pytest.mark.parametrize(
    ("options", "says"),
    [
        ({"mode": "fork", "at": 1}, "needs parent= "),
        ({"mode": "fork", "parent": "PARENT", "model": "gpt-x"}, "model='gpt-x' needs at="),
        ({"mode": "record", "parent": "PARENT"}, "parent= is for mode 'fork', not 'record'"),
        ({"mode": "replay", "at": 2}, "at= is for mode 'fork'"),
        ({"mode": "fork", "parent": "PARENT", "at": -1}, "at=-1 is not a whole number"),
        ({"mode": "fork", "parent": "PARENT", "at": True}, "at=True is not a whole number"),
        ({"mode": "fork", "parent": "NEW", "at": 1}, "into itself"),
    ],
)
def test_bad_options_are_refused_before_anything_is_written(
    parent: Path, tmp_path: Path, options: dict[str, object], says: str
) -> None:
    new = tmp_path / "explore.jsonl"
    swap = {"PARENT": parent, "NEW": new}
    given = {k: swap.get(v, v) if isinstance(v, str) else v for k, v in options.items()}
    with pytest.raises(fd.ConfigError, match=says):
        fd.Deck(new, **given)  # type: ignore[arg-type]
    assert not new.exists()


@pytest.mark.parametrize(
    ("at", "error", "says"),
    [
        (6, fd.ConfigError, r"at=6 is beyond the calls of .*base.jsonl \(seq 1 to 5\)"),
        (1, fd.CassetteNotFound, "no such cassette"),
    ],
)
def test_a_parent_that_cannot_serve_the_fork_point_writes_nothing(
    parent: Path, tmp_path: Path, at: int, error: type[Exception], says: str
) -> None:
    source = parent if at == 6 else tmp_path / "missing.jsonl"
    new = tmp_path / "explore.jsonl"
    before = sorted(os.listdir(tmp_path))
    with pytest.raises(error, match=says):
        fd.Deck(new, mode="fork", parent=source, at=at).open()
    assert sorted(os.listdir(tmp_path)) == before  # no cassette, no lock, no partial


def test_calls_an_append_run_added_up_to_the_point_are_shared(parent: Path, tmp_path: Path) -> None:
    with fd.Deck(parent, mode="append") as deck:
        deck.call("tool", "step", {"n": 1}, never)
        deck.call("tool", "extra", {}, returns("appended"))  # seq 2 of the append run
    new = tmp_path / "explore.jsonl"
    with fd.Deck(new, mode="fork", parent=parent, at=2) as deck:
        assert deck.call("tool", "step", {"n": 1}, never) == {"ok": 1}
        assert deck.call("tool", "extra", {}, never) == "appended"
        assert deck.call("tool", "step", {"n": 3}, returns("live")) == "live"
    assert [(e.seq, e.name) for e in fd.load(new).entries] == [
        (1, "step"),
        (2, "step"),
        (2, "extra"),
        (3, "step"),
    ]


def test_fork_is_no_mode_a_setting_may_name() -> None:
    assert "fork" not in MODES


def test_the_command_line_hands_the_fork_point_over_in_the_environment() -> None:
    kwargs: dict[str, object] = {}
    fork_from_env({"FAULTDECK_FORK_PARENT": "runs/base.jsonl", "FAULTDECK_FORK_AT": "3"}, kwargs)
    assert kwargs == {"parent": "runs/base.jsonl", "at": 3}
    onto: dict[str, object] = {}
    env = {"FAULTDECK_FORK_PARENT": "p", "FAULTDECK_FORK_AT": "1", "FAULTDECK_FORK_MODEL": "m"}
    fork_from_env(env, onto)
    assert onto == {"parent": "p", "at": 1, "model": "m"}
    with pytest.raises(fd.ConfigError, match="FAULTDECK_FORK_AT='x'"):
        fork_from_env({"FAULTDECK_FORK_PARENT": "p", "FAULTDECK_FORK_AT": "x"}, {})
    untouched: dict[str, object] = {}
    fork_from_env({}, untouched)
    assert untouched == {}
