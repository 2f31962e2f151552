"""A test recorded during an outage fails, saying so: its live calls got no answer, so its
deck keeps the cassette it records over (the new recording beside it), even though the
test's own code handled every failure. Inner pytest runs with real decks, the real openai
SDK and real sockets on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import faultdeck as fd
from tests.support import sdk  # noqa: F401  (imported once here: see test_failures.py)
from tests.support.fake_upstream import Upstream
from tests.support.outage import Refused, Silent

AGENT = """
import openai
from tests.support.sdk import OPENAI_MODEL, openai_sync

URLS = {urls!r}


def test_weather(deck):
    answers = []
    for n, url in enumerate(URLS):
        with openai_sync(url, deck, None) as client:
            try:
                reply = client.with_options(timeout=0.3).chat.completions.create(
                    model=OPENAI_MODEL, messages=[{{"role": "user", "content": f"q{{n}}"}}]
                )
                answers.append(reply.choices[0].message.content)
            except (openai.APIConnectionError, openai.APITimeoutError):
                answers.append(None)  # the service is down: the agent carries on
    assert len(answers) == len(URLS)
"""


@pytest.fixture
def upstream() -> Iterator[Upstream]:
    with Upstream() as server:
        yield server


def cassette(pytester: pytest.Pytester) -> Path:
    return pytester.path / "cassettes" / "test_agent" / "test_weather.jsonl"


def record(pytester: pytest.Pytester, *urls: str) -> pytest.RunResult:
    pytester.makepyfile(test_agent=AGENT.format(urls=list(urls)))
    return pytester.runpytest("--faultdeck-mode=record", "-p", "no:cacheprovider")


def test_a_refused_connection_fails_the_test_and_keeps_the_cassette(
    pytester: pytest.Pytester, upstream: Upstream
) -> None:
    record(pytester, upstream.url, upstream.url).assert_outcomes(passed=1)
    good = cassette(pytester).read_bytes()
    with Refused() as down:
        result = record(pytester, down.url, upstream.url)
    result.assert_outcomes(failed=1)
    path = cassette(pytester)
    partial = path.with_name("test_weather.partial.jsonl")
    result.stdout.fnmatch_lines(
        [
            f"faultdeck: recorded 1 of 2 calls: 1 got no answer (ConnectError); {path} kept, "
            f"the new recording is in {partial}"
        ]
    )
    assert path.read_bytes() == good
    assert len(fd.load(partial).entries) == 1


def test_a_read_timeout_fails_the_test_too(pytester: pytest.Pytester, upstream: Upstream) -> None:
    record(pytester, upstream.url).assert_outcomes(passed=1)
    good = cassette(pytester).read_bytes()
    with Silent() as silent:
        result = record(pytester, silent.url)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["faultdeck: recorded 0 of 1 call: 1 got no answer (ReadTimeout); * kept, *"]
    )
    assert cassette(pytester).read_bytes() == good


def test_a_replay_of_the_kept_cassette_still_passes(
    pytester: pytest.Pytester, upstream: Upstream
) -> None:
    record(pytester, upstream.url).assert_outcomes(passed=1)
    with Refused() as down:
        record(pytester, down.url).assert_outcomes(failed=1)
    pytester.makepyfile(test_agent=AGENT.format(urls=[upstream.url]))
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)
