"""A warning points at the caller's own line, whichever way it reached faultdeck."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path

import pytest

import faultdeck as fd
from tests.support.calls import never


@pytest.fixture
def interrupted(tmp_path: Path) -> Path:
    path = tmp_path / "run.jsonl"
    deck = fd.Deck(path, mode="record")
    deck.open()
    deck.call("tool", "fetch", {"page": 1}, lambda: {"rows": [1]})
    deck.abandon()  # no end line: the recorded run was interrupted
    return path


def opened_with_with(path: Path) -> None:
    with fd.Deck(path, mode="replay"):
        pass


def opened_by_the_first_call(path: Path) -> None:
    deck = fd.Deck(path, mode="append")
    deck.call("tool", "fetch", {"page": 1}, never)
    deck.close()


def opened_by_a_tool(path: Path) -> None:
    deck = fd.Deck(path, mode="replay")

    @deck.tool(name="fetch")
    def fetch(page: int) -> dict[str, list[int]]:
        raise AssertionError("replayed")

    fetch(page=1)
    deck.close()


def opened_by_begin(path: Path) -> None:
    deck = fd.Deck(path, mode="replay")
    with deck.begin("tool", "fetch", {"page": 1}) as call:
        call.replay()
    deck.close()


@pytest.mark.parametrize(
    "how", [opened_with_with, opened_by_the_first_call, opened_by_a_tool, opened_by_begin]
)
def test_an_interrupted_cassette_warns_at_the_callers_line(
    interrupted: Path, how: Callable[[Path], None]
) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        how(interrupted)
    (warning,) = [w for w in caught if issubclass(w.category, fd.CassetteWarning)]
    assert "was interrupted" in str(warning.message)
    assert warning.filename == __file__


def test_a_truncated_line_warns_at_the_line_that_loads_it(interrupted: Path) -> None:
    with interrupted.open("ab") as fh:
        fh.write(b'{"seq": 2, "kind": "tool"')  # a crash mid-write
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fd.load(interrupted)
    (warning,) = [w for w in caught if "truncated last line" in str(w.message)]
    assert warning.filename == __file__
