"""Replayed streams keep their recorded pacing on a real clock when asked
(``stream_timing=True``, as ``faultdeck serve`` asks), and come at once otherwise."""

from __future__ import annotations

from pathlib import Path

import httpx2
import openai
import orjson
import pytest
from openai.types.chat import ChatCompletionMessageParam

import faultdeck as fd
from faultdeck.http import Transport
from tests.support.fake_upstream import Upstream

ASK: list[ChatCompletionMessageParam] = [{"role": "user", "content": "hi"}]


class Paced:
    """A clock the transport takes for a real one (it is no ``VirtualClock``) that never
    waits: time moves by what it is asked to let pass, and each ask is kept."""

    def __init__(self) -> None:
        self.t = 0.0
        self.advanced: list[float] = []

    def now(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.t += max(seconds, 0.0)

    async def asleep(self, seconds: float) -> None:
        self.sleep(seconds)

    def advance(self, seconds: float) -> None:
        self.advanced.append(seconds)
        self.t += max(seconds, 0.0)

    async def aadvance(self, seconds: float) -> None:
        self.advance(seconds)

    @property
    def waited(self) -> float:
        return 0.0


@pytest.fixture(scope="module")
def paced_stream(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, float]:
    """A recorded stream whose events are rewritten to come 100 ms apart."""
    path = tmp_path_factory.mktemp("timing") / "stream.jsonl"
    with Upstream() as upstream, fd.Deck(path, mode="record") as deck:
        http = httpx2.Client(transport=Transport(deck, httpx=httpx2))
        with openai.OpenAI(base_url=f"{upstream.url}/v1", api_key="sk-x", http_client=http) as c:
            list(c.chat.completions.create(model="m", messages=ASK, stream=True))
    lines = [orjson.loads(line) for line in path.read_bytes().splitlines()]
    events = next(line for line in lines if "stream" in line)["stream"]["events"]
    for index, event in enumerate(events):
        event["ms"] = 100.0 * (index + 1)
    path.write_bytes(b"\n".join(orjson.dumps(line) for line in lines) + b"\n")
    return path, len(events) * 0.1


@pytest.mark.parametrize("timed", [True, False])
def test_a_replayed_stream_is_paced_as_recorded_only_when_asked(
    paced_stream: tuple[Path, float], timed: bool
) -> None:
    path, last = paced_stream
    clock = Paced()
    with fd.Deck(path, mode="replay", clock=clock) as deck:
        http = httpx2.Client(transport=Transport(deck, httpx=httpx2, stream_timing=timed))
        with openai.OpenAI(base_url="http://127.0.0.1:9/v1", api_key="sk-x", http_client=http) as c:
            chunks = list(c.chat.completions.create(model="m", messages=ASK, stream=True))
    assert chunks
    let_pass = sum(s for s in clock.advanced if s > 0)
    assert let_pass == pytest.approx(last if timed else 0.0, abs=1e-6)
