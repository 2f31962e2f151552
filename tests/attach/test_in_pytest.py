"""``@pytest.mark.faultdeck(intercept=True)`` and ``[tool.faultdeck] intercept = true``: a
test's deck answers the clients its code makes, with no client wiring (inner pytest runs)."""

from __future__ import annotations

import httpx
import pytest

from tests.support.fake_upstream import Upstream

AGENT = """
import openai
import pytest

BASE = {base!r}

def ask():
    with openai.OpenAI(base_url=BASE + "/v1", api_key="sk-test-0123456789abcdefghijklmnop") as c:
        reply = c.chat.completions.create(
            model="gpt-4o-mini", messages=[{{"role": "user", "content": "hi"}}]
        )
    return reply.choices[0].message.content

{mark}
def test_agent(deck):
    assert ask() == "Hello from the fake upstream."
    assert [c.name for c in deck.calls] == ["openai.chat.completions"]
"""


@pytest.mark.parametrize("how", ["marker", "setting"])
def test_a_tests_own_clients_record_then_replay_offline(
    pytester: pytest.Pytester, how: str
) -> None:
    mark = "@pytest.mark.faultdeck(intercept=True)" if how == "marker" else ""
    if how == "setting":
        pytester.makepyprojecttoml("[tool.faultdeck]\nintercept = true\n")
    with Upstream() as upstream:
        base = upstream.url
        pytester.makepyfile(test_agent=AGENT.format(base=base, mark=mark))
        pytester.runpytest("--faultdeck-mode=record").assert_outcomes(passed=1)
    cassette = pytester.path / "cassettes" / "test_agent" / "test_agent.jsonl"
    assert "openai.chat.completions" in cassette.read_text("utf-8")
    pytester.runpytest("--block-network").assert_outcomes(passed=1)
    assert httpx.HTTPTransport.handle_request.__module__ == "httpx._transports.default"


def test_without_it_a_tests_own_client_is_not_routed(pytester: pytest.Pytester) -> None:
    with Upstream() as upstream:
        pytester.makepyfile(test_agent=AGENT.format(base=upstream.url, mark=""))
        result = pytester.runpytest("--faultdeck-mode=record")
    result.assert_outcomes(failed=1)
    assert "assert [] == ['openai.chat.completions']" in result.stdout.str()
