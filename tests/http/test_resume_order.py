"""Resuming through the async HTTP transport: a request that another task's reorder put
ahead of a recorded one waits for its turn, as ``acall`` does (docs/guarantees.md).

Under ``asyncio.gather``, replayed requests return at once, so one task can reach a
request the killed run never reached before another task asks for a recorded one. The
resumed run must replay the recorded request and send only the new one upstream.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import openai
import pytest

import faultdeck as fd
from tests.support.fake_upstream import Upstream
from tests.support.sdk import openai_async


async def ask(client: openai.AsyncOpenAI, text: str) -> str:
    reply = await client.chat.completions.create(
        model="gpt-fake", messages=[{"role": "user", "content": text}]
    )
    return reply.choices[0].message.content or ""


def killed_after_three(path: Path, url: str) -> list[str]:
    """A killed run that asked a, b and c, in that order; their answers."""
    deck = fd.Deck(path, mode="record")
    deck.open()

    async def run() -> list[str]:
        async with openai_async(url, deck, None) as client:
            return [await ask(client, f"{q}?") for q in "abc"]

    answers = asyncio.run(run())
    deck.abandon()
    return answers


def asked(upstream: Upstream) -> list[str]:
    """The questions that reached the upstream, in order."""
    return [r["json"]["messages"][-1]["content"] for r in upstream.requests]


def test_a_request_a_reorder_put_early_waits_its_turn(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    with Upstream() as upstream:
        a, b, c = killed_after_three(path, upstream.url)
        upstream.reset()

        async def resumed(deck: fd.Deck) -> Any:
            async with openai_async(upstream.url, deck, None) as client:

                async def one() -> list[str]:
                    return [await ask(client, f"{q}?") for q in "acd"]

                async def two() -> str:
                    while len(deck.calls) < 2:  # until the other task had a and c replayed
                        await asyncio.sleep(0.001)
                    await asyncio.sleep(0.05)  # it asks d, numbered 3, meanwhile
                    return await ask(client, "b?")

                return await asyncio.gather(one(), two())

        with fd.Deck(path, mode="resume") as deck:
            first, second = asyncio.run(resumed(deck))
        assert asked(upstream) == ["d?"]  # only the call the killed run never reached
    assert first[:2] == [a, c]
    assert second == b
    sources = [(call.seq, call.source) for call in deck.calls]
    assert sorted(sources) == [(1, "replay"), (2, "replay"), (3, "live"), (4, "replay")]
    final = fd.load(path)
    assert len(final.entries) == 4
    assert not final.interrupted


def test_a_request_nobody_else_asks_before_is_still_a_miss(tmp_path: Path) -> None:
    # One task alone: after a, it asks c's place with a new request while b and c remain.
    path = tmp_path / "run.jsonl"
    with Upstream() as upstream:
        killed_after_three(path, upstream.url)
        upstream.reset()

        async def resumed(deck: fd.Deck) -> None:
            async with openai_async(upstream.url, deck, None) as client:
                await ask(client, "a?")
                await ask(client, "d?")

        with fd.Deck(path, mode="resume") as deck, pytest.raises(fd.ReplayMiss, match="seq 2"):
            asyncio.run(resumed(deck))
        assert asked(upstream) == []
