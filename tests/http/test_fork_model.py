"""A fork onto another model, however the request is sent: the real SDKs through
``fd.http.Transport`` and ``AsyncTransport``, and httpx, requests, urllib and aiohttp
routed by ``fd.intercept``. Every call after the fork point reaches the upstream asking for
the fork's model, is recorded as sent, and the fork replays offline with the program
unchanged (it still asks for its own model).

The upstream is the fake LLM upstream on 127.0.0.1, which answers with the model it was
asked for.
"""

from __future__ import annotations

import asyncio
import json
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import httpx
import pytest
import requests
import urllib3

import faultdeck as fd
from tests.support.fake_upstream import Upstream
from tests.support.sdk import anthropic_sync, openai_async, openai_sync

QUESTIONS = ("Hello?", "And again?")
OTHER = "other-model"

Send = Callable[[fd.Deck, str, str], str]
"""Ask the upstream at a base URL one question through a deck; the model that answered."""


def _chat(question: str) -> dict[str, Any]:
    return {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": question}]}


def openai_sdk(deck: fd.Deck, url: str, question: str) -> str:
    with openai_sync(url, deck, None) as client:
        reply = client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": question}]
        )
    return reply.model


def openai_sdk_async(deck: fd.Deck, url: str, question: str) -> str:
    async def ask() -> str:
        async with openai_async(url, deck, None) as client:
            reply = await client.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": question}]
            )
        return reply.model

    return asyncio.run(ask())


def anthropic_sdk(deck: fd.Deck, url: str, question: str) -> str:
    with anthropic_sync(url, deck, None) as client:
        reply = client.messages.create(
            model="claude-fake", max_tokens=64, messages=[{"role": "user", "content": question}]
        )
    return reply.model


def httpx_routed(deck: fd.Deck, url: str, question: str) -> str:
    with fd.intercept(deck), httpx.Client() as client:
        reply = client.post(f"{url}/v1/chat/completions", json=_chat(question))
    return str(reply.json()["model"])


def requests_routed(deck: fd.Deck, url: str, question: str) -> str:
    with fd.intercept(deck):
        reply = requests.post(f"{url}/v1/chat/completions", json=_chat(question), timeout=30)
    return str(reply.json()["model"])


def urllib_routed(deck: fd.Deck, url: str, question: str) -> str:
    request = urllib.request.Request(
        f"{url}/v1/chat/completions",
        data=json.dumps(_chat(question)).encode(),
        headers={"Content-Type": "application/json"},
    )
    with fd.intercept(deck), urllib.request.urlopen(request, timeout=30) as reply:
        return str(json.loads(reply.read())["model"])


def urllib3_routed(deck: fd.Deck, url: str, question: str) -> str:
    with fd.intercept(deck):
        reply = urllib3.request("POST", f"{url}/v1/chat/completions", json=_chat(question))
    return str(reply.json()["model"])


def aiohttp_routed(deck: fd.Deck, url: str, question: str) -> str:
    async def ask() -> str:
        async with aiohttp.ClientSession() as session:
            async with session.post(f"{url}/v1/chat/completions", json=_chat(question)) as reply:
                return str((await reply.json())["model"])

    with fd.intercept(deck):
        return asyncio.run(ask())


SENDERS: dict[str, tuple[Send, str]] = {
    "openai-transport": (openai_sdk, "gpt-4o-mini"),
    "openai-async-transport": (openai_sdk_async, "gpt-4o-mini"),
    "anthropic-transport": (anthropic_sdk, "claude-fake"),
    "httpx-intercepted": (httpx_routed, "gpt-4o-mini"),
    "requests-intercepted": (requests_routed, "gpt-4o-mini"),
    "urllib-intercepted": (urllib_routed, "gpt-4o-mini"),
    "urllib3-intercepted": (urllib3_routed, "gpt-4o-mini"),
    "aiohttp-intercepted": (aiohttp_routed, "gpt-4o-mini"),
}


@pytest.fixture(scope="module")
def upstream() -> Iterator[Upstream]:
    with Upstream() as running:
        yield running


@pytest.mark.parametrize("how", SENDERS)
def test_a_fork_sends_its_live_calls_to_its_model(
    how: str, upstream: Upstream, tmp_path: Path
) -> None:
    send, asked = SENDERS[how]
    base, new = tmp_path / "base.jsonl", tmp_path / "new.jsonl"
    with fd.Deck(base, mode="record") as deck:
        assert [send(deck, upstream.url, q) for q in QUESTIONS] == [asked, asked]
    upstream.reset()

    with fd.Deck(new, mode="fork", parent=base, at=1, model=OTHER) as deck:
        assert [send(deck, upstream.url, q) for q in QUESTIONS] == [asked, OTHER]
    sent = upstream.requests
    assert [(r["json"]["model"], r["json"]["messages"][-1]["content"]) for r in sent] == [
        (OTHER, QUESTIONS[1])
    ]
    compact = json.dumps(sent[0]["json"], separators=(",", ":")).encode()  # as it was sent
    assert int(sent[0]["headers"]["content-length"]) == len(compact)
    recording = fd.load(new)
    assert [e.args["body"]["model"] for e in recording.entries] == [asked, OTHER]
    assert recording.entries[1].value["body"]["model"] == OTHER
    assert recording.header.extra["parent"]["model"] == OTHER

    upstream.reset()
    with fd.Deck(new, mode="replay") as deck:  # the program unchanged: it asks for `asked`
        assert [send(deck, upstream.url, q) for q in QUESTIONS] == [asked, OTHER]
    report = deck.report()
    assert (report.used, report.live, report.misses) == (2, 0, ())
    assert upstream.requests == []


def test_a_fork_without_a_model_sends_what_the_program_asks(
    upstream: Upstream, tmp_path: Path
) -> None:
    base, new = tmp_path / "base.jsonl", tmp_path / "new.jsonl"
    with fd.Deck(base, mode="record") as deck:
        [openai_sdk(deck, upstream.url, q) for q in QUESTIONS]
    upstream.reset()
    with fd.Deck(new, mode="fork", parent=base, at=1) as deck:
        assert [openai_sdk(deck, upstream.url, q) for q in QUESTIONS] == ["gpt-4o-mini"] * 2
    assert [r["json"]["model"] for r in upstream.requests] == ["gpt-4o-mini"]
    assert "model" not in fd.load(new).header.extra["parent"]


def test_a_fork_of_a_fork_keeps_the_model_its_parent_was_sent_to(
    upstream: Upstream, tmp_path: Path
) -> None:
    base, one, two = (tmp_path / f"{name}.jsonl" for name in ("base", "one", "two"))
    questions = (*QUESTIONS, "Once more?")
    with fd.Deck(base, mode="record") as deck:
        [openai_sdk(deck, upstream.url, q) for q in questions]
    with fd.Deck(one, mode="fork", parent=base, at=1, model=OTHER) as deck:
        [openai_sdk(deck, upstream.url, q) for q in questions]
    upstream.reset()
    # Call 2 replays from `one`, where it was sent to OTHER; call 3 goes on to OTHER.
    with fd.Deck(two, mode="fork", parent=one, at=2) as deck:
        assert [openai_sdk(deck, upstream.url, q) for q in questions] == [
            "gpt-4o-mini",
            OTHER,
            OTHER,
        ]
    assert [r["json"]["model"] for r in upstream.requests] == [OTHER]
    parent = fd.load(two).header.extra["parent"]
    assert (parent["model"], parent["shared_models"]) == (OTHER, [{"after": 1, "model": OTHER}])
    # A third model from the fork point on; the shared call 2 stays as it was sent.
    upstream.reset()
    three = tmp_path / "three.jsonl"
    with fd.Deck(three, mode="fork", parent=two, at=2, model="third-model") as deck:
        answered = [openai_sdk(deck, upstream.url, q) for q in questions]
    assert answered == ["gpt-4o-mini", OTHER, "third-model"]
    upstream.reset()
    for path in (two, three):
        with fd.Deck(path, mode="replay") as deck:
            [openai_sdk(deck, upstream.url, q) for q in questions]
        assert (deck.report().used, deck.report().misses) == (3, ())
    assert upstream.requests == []


@pytest.mark.parametrize(
    ("options", "says"),
    [
        ({"model": ""}, "model='' names no model"),
        ({"model": "  "}, "names no model"),
        ({"model": OTHER, "mode": "record"}, "model= is for mode 'fork', not 'record'"),
    ],
)
def test_a_model_that_cannot_be_used_is_refused(
    options: dict[str, Any], says: str, tmp_path: Path
) -> None:
    kwargs: dict[str, Any] = {"mode": "fork", "parent": tmp_path / "base.jsonl", "at": 1}
    kwargs.update(options)
    if kwargs["mode"] != "fork":
        del kwargs["parent"], kwargs["at"]
    with pytest.raises(fd.ConfigError, match=says):
        fd.Deck(tmp_path / "new.jsonl", **kwargs)
    assert list(tmp_path.iterdir()) == []
