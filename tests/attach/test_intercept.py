"""``fd.intercept``: the clients a program makes, routed through a deck with no wiring.

Real SDKs and clients against the fake LLM upstream on 127.0.0.1; each recording is
replayed with the upstream stopped.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator
from pathlib import Path

import anthropic
import httpx
import httpx2
import openai
import pytest

import faultdeck as fd
from faultdeck.attach import ADAPTERS, Adapter
from tests.support.children import child_env, run
from tests.support.fake_upstream import Upstream

KEY = "sk-test-0123456789abcdefghijklmnopqrstuvwxyz"
ASK = [{"role": "user", "content": "hi"}]


@pytest.fixture
def upstream() -> Iterator[Upstream]:
    with Upstream() as up:
        yield up


def chat(base: str) -> str:
    """One chat completion, the client made as a user makes it (no transport given)."""
    with openai.OpenAI(base_url=f"{base}/v1", api_key=KEY, max_retries=0) as client:
        reply = client.chat.completions.create(model="gpt-4o-mini", messages=ASK)  # type: ignore[arg-type]
    return reply.choices[0].message.content or ""


def test_an_sdk_that_makes_its_own_client_records_and_replays_offline(
    tmp_path: Path, upstream: Upstream
) -> None:
    cassette, base = tmp_path / "run.jsonl", upstream.url
    with fd.Deck(cassette, mode="record") as deck, fd.intercept(deck):
        recorded = chat(base)
    assert [(c.kind, c.name) for c in deck.calls] == [("model", "openai.chat.completions")]
    assert KEY not in cassette.read_text("utf-8")
    upstream.stop()
    with fd.Deck(cassette) as deck, fd.intercept(deck):
        assert chat(base) == recorded
    assert deck.report().used == 1
    assert deck.report().live == 0


def test_the_key_is_the_one_the_explicit_transport_makes(
    tmp_path: Path, upstream: Upstream
) -> None:
    with fd.Deck(tmp_path / "a.jsonl", mode="record") as routed, fd.intercept(routed):
        chat(upstream.url)
    with fd.Deck(tmp_path / "b.jsonl", mode="record") as wired:
        http = httpx2.Client(transport=fd.http.Transport(wired, httpx=httpx2))
        with openai.OpenAI(base_url=f"{upstream.url}/v1", api_key=KEY, http_client=http) as client:
            client.chat.completions.create(model="gpt-4o-mini", messages=ASK)  # type: ignore[arg-type]
    assert [c.key for c in routed.calls] == [c.key for c in wired.calls]


def test_an_explicitly_wired_client_is_recorded_once_by_its_own_deck(
    tmp_path: Path, upstream: Upstream
) -> None:
    with fd.Deck(tmp_path / "outer.jsonl", mode="record") as outer, fd.intercept(outer):
        with fd.Deck(tmp_path / "own.jsonl", mode="record") as own:
            with httpx2.Client(transport=fd.http.Transport(own, httpx=httpx2)) as http:
                assert http.get(f"{upstream.url}/v1/models").status_code == 200
    assert len(own.calls) == 1
    assert outer.calls == ()


def test_async_clients_of_both_modules_are_routed(tmp_path: Path, upstream: Upstream) -> None:
    base = upstream.url

    async def both() -> list[int]:
        async with httpx.AsyncClient() as one, httpx2.AsyncClient() as two:
            first = await one.get(f"{base}/v1/models")
            second = await two.get(f"{base}/v1/models?page=2")
            return [first.status_code, second.status_code]

    with fd.Deck(tmp_path / "run.jsonl", mode="record") as deck, fd.intercept(deck):
        assert asyncio.run(both()) == [200, 200]
    assert len(deck.calls) == 2
    upstream.stop()
    with fd.Deck(tmp_path / "run.jsonl") as deck, fd.intercept(deck):
        assert asyncio.run(both()) == [200, 200]
    assert deck.report().used == 2


def test_anthropic_async_client_replays_a_fault_as_its_own_error(
    tmp_path: Path, upstream: Upstream
) -> None:
    base = upstream.url

    async def ask() -> str:
        async with anthropic.AsyncAnthropic(base_url=base, api_key=KEY, max_retries=0) as client:
            reply = await client.messages.create(
                model="claude-sonnet-4-5",
                max_tokens=64,
                messages=ASK,  # type: ignore[arg-type]
            )
        return reply.content[0].text  # type: ignore[union-attr]

    cassette = tmp_path / "run.jsonl"
    with fd.Deck(cassette, mode="record") as deck, fd.intercept(deck):
        recorded = asyncio.run(ask())
    upstream.stop()
    with fd.Deck(cassette) as deck, fd.intercept(deck):
        assert asyncio.run(ask()) == recorded
    unavailable = [fd.faults.transient(503).at(seq=1)]
    with fd.Deck(cassette, faults=unavailable) as deck, fd.intercept(deck):
        with pytest.raises(anthropic.APIStatusError) as raised:
            asyncio.run(ask())
    assert raised.value.status_code == 503


def test_blocks_nest_and_nothing_stays_patched(tmp_path: Path, upstream: Upstream) -> None:
    originals = (httpx.HTTPTransport.handle_request, httpx2.AsyncHTTPTransport.handle_async_request)
    with fd.Deck(tmp_path / "a.jsonl", mode="record") as outer, fd.intercept(outer):
        with fd.Deck(tmp_path / "b.jsonl", mode="record") as inner, fd.intercept(inner):
            httpx.get(f"{upstream.url}/v1/models")
        httpx.get(f"{upstream.url}/v1/models?after=inner")
    assert (len(outer.calls), len(inner.calls)) == (1, 1)
    assert (httpx.HTTPTransport.handle_request, httpx2.AsyncHTTPTransport.handle_async_request) == (
        originals
    )
    assert (
        "handle_request" not in vars(httpx.HTTPTransport)
        or vars(httpx.HTTPTransport)["handle_request"] is originals[0]
    )


def test_a_library_imported_inside_the_block_is_routed_and_none_is_imported_for_it(
    tmp_path: Path, upstream: Upstream
) -> None:
    program = f"""
import sys
import faultdeck as fd
with fd.Deck({str(tmp_path / "run.jsonl")!r}, mode="record") as deck, fd.intercept(deck):
    eager = sorted(m for m in ("httpx", "httpx2", "aiohttp", "requests") if m in sys.modules)
    import httpx2
    httpx2.get({upstream.url + "/v1/models"!r})
print(eager, len(deck.calls))
"""
    done = run([sys.executable, "-c", program], env=child_env())
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["[]", "1"]


def test_a_version_it_does_not_know_is_named_with_what_to_do() -> None:
    known = next(a for a in ADAPTERS if a.library == "httpx")
    assert known.unknown_version() is None
    future = Adapter("httpx", "httpx", (9,), (10,), known.route)
    said = future.unknown_version()
    assert said is not None
    assert f"httpx {httpx.__version__}" in said
    assert ">=9,<10" in said
    assert "fd.http.Transport" in said
