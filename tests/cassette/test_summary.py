"""A cassette summed up (``faultdeck compare``'s row): the tokens its answers say they
used, read from answers the real SDKs got from the fake upstream, streamed or whole, and
compared with the usage the SDK itself reported."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import faultdeck as fd
from faultdeck._cassette.summary import brief
from tests.support.fake_upstream import Upstream
from tests.support.sdk import anthropic_sync, openai_sync

HELLO: list[Any] = [{"role": "user", "content": "Say hello to the whole wide world"}]


@pytest.fixture(scope="module")
def upstream() -> Iterator[Upstream]:
    with Upstream() as running:
        yield running


def test_tokens_are_summed_over_answers_and_streams(upstream: Upstream, tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    reported: list[tuple[int, int]] = []
    with fd.Deck(path, mode="record") as deck:
        with openai_sync(upstream.url, deck, None) as client:
            whole = client.chat.completions.create(model="gpt-a", messages=HELLO)
            assert whole.usage is not None
            reported.append((whole.usage.prompt_tokens, whole.usage.completion_tokens))
            chunks = list(
                client.chat.completions.create(
                    model="gpt-b",
                    messages=HELLO,
                    stream=True,
                    stream_options={"include_usage": True},
                )
            )
            usage = chunks[-1].usage  # the last chunk, when asked for
            assert usage is not None
            reported.append((usage.prompt_tokens, usage.completion_tokens))
            # Not asked for: the stream holds none, and adds nothing.
            list(client.chat.completions.create(model="gpt-b", messages=HELLO, stream=True))
            with client.responses.stream(model="gpt-c", input="Say hello") as stream:
                done = stream.get_final_response()
            assert done.usage is not None
            reported.append((done.usage.input_tokens, done.usage.output_tokens))
        with anthropic_sync(upstream.url, deck, None) as client:
            with client.messages.stream(model="claude-a", max_tokens=64, messages=HELLO) as s:
                message = s.get_final_message()
            reported.append((message.usage.input_tokens, message.usage.output_tokens))
    summed = brief(fd.load(path))
    assert (summed.tokens_in, summed.tokens_out) == (
        sum(r[0] for r in reported),
        sum(r[1] for r in reported),
    )
    assert summed.calls == 5
    assert summed.models == ("gpt-a", "gpt-b", "gpt-c", "claude-a")
    assert summed.faults == 0
