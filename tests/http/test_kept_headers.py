"""Which request headers key an HTTP call: the provider's version and beta headers, and
those a transport is asked to keep, in any case, a repeated one with every value; no
other header, however it is spelled. Real httpx and httpx2 clients against the local fake
upstream, then replayed with the network shut.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest

import faultdeck as fd
from faultdeck.http import Transport
from tests.support.fake_upstream import Upstream
from tests.support.sdk import NetworkGuard

BODY = b'{"model": "m", "messages": [{"role": "user", "content": "hi"}]}'


def headers(version: str) -> list[tuple[str, str]]:
    return [
        ("Anthropic-Version", version),
        ("OpenAI-Beta", "assistants=v2"),
        ("openai-beta", "responses=v1"),  # repeated: both values are kept
        ("X-Trace-Tag", "t-1"),  # kept only when asked for
        ("X-Other", "not kept"),
        ("Authorization", "Bearer not-a-real-key-at-all"),
    ]


def post(module: Any, deck: fd.Deck, url: str, version: str, **options: Any) -> Any:
    transport = Transport(deck, httpx=module, keep_headers=("x-trace-tag",), **options)
    with module.Client(base_url=url, transport=transport) as client:
        return client.post("/v1/chat/completions", content=BODY, headers=headers(version))


@pytest.mark.parametrize("module", [httpx, httpx2], ids=["httpx", "httpx2"])
def test_kept_headers_key_the_call_and_no_others(tmp_path: Path, module: Any) -> None:
    path = tmp_path / "c.jsonl"
    with Upstream() as upstream, fd.Deck(path, mode="record") as deck:
        url = upstream.url
        assert post(module, deck, url, "2023-06-01").status_code == 200
    (entry,) = fd.load(path).entries
    assert entry.args["headers"] == {
        "anthropic-version": "2023-06-01",
        "openai-beta": "assistants=v2, responses=v1",
        "x-trace-tag": "t-1",
    }
    guard = NetworkGuard()
    with fd.Deck(path, mode="replay", clock=fd.VirtualClock()) as deck:
        assert post(module, deck, url, "2023-06-01", transport=guard).status_code == 200
    with (
        fd.Deck(path, mode="replay", clock=fd.VirtualClock()) as deck,
        pytest.raises(fd.ReplayMiss, match="anthropic-version"),
    ):
        post(module, deck, url, "2024-01-01", transport=guard)
    assert guard.calls == 0
