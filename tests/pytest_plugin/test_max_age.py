"""``max_age`` in the pytest plugin: a stale cassette warns, or fails under strict."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.cli.test_max_age import git_env

TEST = """
def test_one(deck):
    assert deck.call("tool", "t", {"q": 1}, lambda: {"ok": True}) == {"ok": True}
"""


def git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", *args], cwd=repo, env={**os.environ, **git_env()}, check=True,
        capture_output=True, timeout=30,
    )  # fmt: skip


@pytest.fixture
def stale(pytester: pytest.Pytester) -> pytest.Pytester:
    """A project whose one test's cassette was committed in 2020, ``max_age`` 90d."""
    pytester.makepyprojecttoml('[tool.faultdeck]\nmax_age = "90d"\n')
    pytester.makepyfile(test_agent=TEST)
    pytester.runpytest("--faultdeck-mode=record").assert_outcomes(passed=1)
    git(pytester.path, "init", "-q", ".")
    git(pytester.path, "add", "cassettes")
    git(pytester.path, "commit", "-q", "-m", "cassettes")
    return pytester


def test_a_stale_cassette_warns(stale: pytest.Pytester) -> None:
    result = stale.runpytest("-W", "default::faultdeck._base.errors.StaleCassette")
    result.assert_outcomes(passed=1, warnings=1)
    result.stdout.fnmatch_lines(
        [
            "*StaleCassette: *test_one.jsonl: last committed 2020-01-01 (* days ago), "
            "older than max_age 90d*",
        ]
    )


def test_a_stale_cassette_fails_under_strict(stale: pytest.Pytester) -> None:
    result = stale.runpytest("--faultdeck-strict")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*faultdeck: --faultdeck-strict: *test_one.jsonl: last committed*"]
    )


def test_recording_or_a_young_cassette_does_not_warn(stale: pytest.Pytester) -> None:
    stale.runpytest(
        "--faultdeck-mode=record", "-W", "error::faultdeck._base.errors.StaleCassette"
    ).assert_outcomes(passed=1)
    stale.makepyprojecttoml('[tool.faultdeck]\nmax_age = "100000d"\n')
    stale.runpytest("-W", "error::faultdeck._base.errors.StaleCassette").assert_outcomes(passed=1)


def test_an_uncommitted_cassette_is_not_stale(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml('[tool.faultdeck]\nmax_age = "1s"\n')
    pytester.makepyfile(test_agent=TEST)
    pytester.runpytest("--faultdeck-mode=record").assert_outcomes(passed=1)
    git(pytester.path, "init", "-q", ".")
    pytester.runpytest("--faultdeck-strict").assert_outcomes(passed=1)
