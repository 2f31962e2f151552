"""Hints in the caller's terms: Python's by default, the command line's and pytest's when
those edges say so, carried to a program the command line runs."""

from __future__ import annotations

from pathlib import Path

import pytest

import faultdeck as fd
from faultdeck._base import terms


def test_python_terms_hold_by_default(tmp_path: Path) -> None:
    assert terms.current() == terms.PYTHON
    with pytest.raises(fd.CassetteNotFound) as caught:
        fd.load(tmp_path / "none.jsonl")
    assert str(caught.value).endswith('record it first with mode="record"')


def test_speaking_sets_the_terms_inside_the_block_only(tmp_path: Path) -> None:
    said = terms.command_line("runs/a b.jsonl", ["python", "agent.py", "--task", "x y"])
    assert said.record == "faultdeck record 'runs/a b.jsonl' -- python agent.py --task 'x y'"
    assert said.append == (
        "faultdeck record --mode append 'runs/a b.jsonl' -- python agent.py --task 'x y'"
    )
    assert said.resume.startswith("faultdeck resume 'runs/a b.jsonl' -- ")
    with terms.speaking(said), pytest.raises(fd.CassetteNotFound, match="faultdeck record"):
        fd.load(tmp_path / "none.jsonl")
    assert terms.current() == terms.PYTHON


def test_terms_without_a_cassette_name_the_one_in_the_message(tmp_path: Path) -> None:
    missing = tmp_path / "none.jsonl"
    with terms.speaking(terms.command_line(None, ())), pytest.raises(fd.CassetteNotFound) as caught:
        fd.load(missing)
    assert str(caught.value).endswith(f"record it first with faultdeck record {missing} -- CMD…")


def test_pytest_terms_name_the_one_test_command() -> None:
    said = terms.pytest_run("tests/test_agent.py::test_weather[a b]", ci=False)
    assert said.record == "pytest 'tests/test_agent.py::test_weather[a b]' --faultdeck-mode=record"
    assert said.append.endswith("--faultdeck-mode=append")
    under_ci = terms.pytest_run("tests/test_agent.py::test_weather", ci=True)
    assert "locally" in under_ci.record
    assert "CI" in under_ci.record


def test_terms_travel_through_the_environment() -> None:
    said = terms.command_line("a.jsonl", ["python", "agent.py"])
    assert terms.from_env({terms.ENV: said.to_env()}) == said
    for broken in ("", "not json", '{"record": "x"}', "[1, 2]"):
        assert terms.from_env({terms.ENV: broken}) is None
    assert terms.from_env({}) is None
