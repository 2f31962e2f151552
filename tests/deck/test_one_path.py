"""Every boundary call goes through ``Deck.begin``, once, whoever makes it and in every mode.

``Deck.begin`` is wrapped (a class attribute that counts, then calls the original) while a
program records through one entry point, then replays what it recorded: ``Deck.call``,
``Deck.acall``, a ``@deck.tool`` function (sync and async), ``Deck.env``, the HTTP
transports (sync and async, against the local fake upstream), and an MCP client session
against a real in-memory server. Each entry point's own calls through ``begin`` must equal
the calls the deck logged and the calls the program made; ``Deck.abegin`` is counted
through the ``begin`` it calls.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import faultdeck as fd
from faultdeck.mcp import Client
from tests.mcp.servers import weather_server
from tests.support.calls import returns
from tests.support.fake_upstream import Upstream
from tests.support.sdk import OPENAI_MODEL, QUESTION, NetworkGuard, async_client, sync_client

Program = Callable[[fd.Deck, str, bool], int]
"""A program run against a deck, the upstream's URL, and whether the world may be reached
(recording); it gives the number of boundary calls it made."""

CHAT = {"model": OPENAI_MODEL, "messages": [{"role": "user", "content": QUESTION}]}


def answers(value: Any) -> Callable[[], Awaitable[Any]]:
    """A live async call that returns ``value``."""

    async def run() -> Any:
        return value

    return run


def calls(deck: fd.Deck, url: str, live: bool) -> int:
    deck.call("model", "chat", {"q": "plan"}, returns({"text": "search"}))
    deck.call("tool", "search", {"q": "retry"}, returns({"hits": 2}))
    return 2


def acalls(deck: fd.Deck, url: str, live: bool) -> int:
    async def run() -> None:
        await deck.acall("model", "chat", {"q": "plan"}, answers({"text": "search"}))
        await deck.acall("tool", "search", {"q": "retry"}, answers({"hits": 2}))

    asyncio.run(run())
    return 2


def tool(deck: fd.Deck, url: str, live: bool) -> int:
    @deck.tool
    def search(q: str, top_k: int = 3) -> dict[str, int]:
        return {"hits": top_k}

    search("retry")
    search("budget", top_k=5)
    return 2


def async_tool(deck: fd.Deck, url: str, live: bool) -> int:
    @deck.tool
    async def fetch(path: str) -> str:
        return f"page {path}"

    async def run() -> None:
        await fetch("/a")
        await fetch("/b")

    asyncio.run(run())
    return 2


def env(deck: fd.Deck, url: str, live: bool) -> int:
    deck.env("HOME")
    deck.env("FAULTDECK_NEVER_SET")
    return 2


def http(deck: fd.Deck, url: str, live: bool) -> int:
    with sync_client(deck, None if live else NetworkGuard()) as client:
        client.get(f"{url}/v1/models")
        client.post(f"{url}/v1/chat/completions", json=CHAT)
        with client.stream("POST", f"{url}/v1/chat/completions", json=CHAT | {"stream": True}):
            pass
        client.get(f"{url}/nope")
    return 4


def async_http(deck: fd.Deck, url: str, live: bool) -> int:
    async def run() -> None:
        async with async_client(deck, None if live else NetworkGuard()) as client:
            await client.get(f"{url}/v1/models")
            await client.post(f"{url}/v1/chat/completions", json=CHAT)
            stream = CHAT | {"stream": True}
            async with client.stream("POST", f"{url}/v1/chat/completions", json=stream) as r:
                await r.aread()
            await client.get(f"{url}/nope")

    asyncio.run(run())
    return 4


def mcp(deck: fd.Deck, url: str, live: bool) -> int:
    async def run() -> None:
        async with Client(deck, weather_server() if live else None) as client:
            await client.list_tools()
            await client.call_tool("get_weather", {"city": "Paris"})
            await client.call_tool("search_notes", {"query": "rain"})

    asyncio.run(run())
    return 3


PROGRAMS: dict[str, Program] = {
    "call": calls,
    "acall": acalls,
    "tool": tool,
    "async tool": async_tool,
    "env": env,
    "http": http,
    "async http": async_http,
    "mcp": mcp,
}


@pytest.fixture(scope="module")
def upstream() -> Iterator[Upstream]:
    with Upstream() as server:
        yield server


@pytest.fixture
def begun(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The name of every call ``Deck.begin`` is asked to decide, from here on."""
    names: list[str] = []
    original = fd.Deck.begin

    def begin(self: fd.Deck, kind: str, name: str, args: Any, **options: Any) -> fd.Call:
        names.append(name)
        return original(self, kind, name, args, **options)

    monkeypatch.setattr(fd.Deck, "begin", begin)
    return names


def run(program: Program, path: Path, mode: fd.config.Mode, url: str) -> tuple[int, fd.Deck]:
    deck = fd.Deck(path, mode=mode, clock=fd.VirtualClock(), environ={"HOME": "/home/ada"})
    with deck:
        made = program(deck, url, mode == "record")
    return made, deck


@pytest.mark.parametrize("program", PROGRAMS.values(), ids=list(PROGRAMS))
@pytest.mark.parametrize("mode", ["record", "replay"])
def test_each_boundary_call_goes_through_begin_once(
    tmp_path: Path,
    upstream: Upstream,
    begun: list[str],
    program: Program,
    mode: fd.config.Mode,
) -> None:
    path = tmp_path / "one.jsonl"
    if mode == "replay":
        run(program, path, "record", upstream.url)
        begun.clear()
    made, deck = run(program, path, mode, upstream.url)
    assert len(begun) == len(deck.calls) == made
    assert begun == [c.name for c in deck.calls]
    assert {c.source for c in deck.calls} == {"live" if mode == "record" else "replay"}
