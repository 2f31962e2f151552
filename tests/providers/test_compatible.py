"""OpenAI-compatible servers through the openai SDK: a local server's ``/v1`` (vLLM, LM
Studio) is ``openai.chat.completions``; a known service's host names the call after it
(``openrouter.chat.completions``) while its answers and faults stay OpenAI's wire. Each
turn replays offline, streamed and not, and the bearer key never reaches disk."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx2
import openai
import pytest
from openai.types.chat import ChatCompletionMessageParam
from starlette.applications import Starlette
from starlette.routing import Mount

import faultdeck as fd
from faultdeck import faults
from faultdeck.faults._shapes import OWN_SHAPES, wire_of
from faultdeck.http import Transport
from faultdeck.http._providers import ROUTES
from faultdeck.http._shapes import name_of
from tests.support.fake_upstream import OPENAI_TOOLS, Upstream, create_app
from tests.support.plants import rand
from tests.support.sdk import tool_turn

URLSAFE = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-"
KEY = "sk-or-v1-" + rand("openrouter", "0123456789abcdef", 64)
DEAD = "http://127.0.0.1:9"  # nothing listens: a replay that went live would fail loudly
ASK: list[ChatCompletionMessageParam] = [{"role": "user", "content": "What is the weather?"}]
SERVERS = {
    # name: (the base under the server, the Host header sent, the call's name)
    "vllm": ("/v1", None, "openai.chat.completions"),
    "openrouter": ("/api/v1", "openrouter.ai", "openrouter.chat.completions"),
}


def client(deck: fd.Deck, url: str, server: str, key: str = "EMPTY") -> openai.OpenAI:
    base, host, _ = SERVERS[server]
    http = httpx2.Client(transport=Transport(deck, httpx=httpx2))
    headers = {"Host": host} if host else None
    return openai.OpenAI(
        base_url=url + base, api_key=key, http_client=http, default_headers=headers
    )


def turn(client: openai.OpenAI, *, stream: bool) -> str:
    return tool_turn(client, model="m", stream=stream)


def server_app() -> Starlette:
    """The fake upstream at ``/v1`` and under ``/api`` (OpenRouter's base is ``/api/v1``)."""
    inner = create_app()
    app = Starlette(routes=[Mount("/api", app=inner), Mount("/", app=inner)])
    app.state.requests = inner.state.requests
    return app


@pytest.fixture(scope="module")
def cassettes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("compatible")
    paths: dict[str, Path] = {}
    with Upstream(app=server_app()) as upstream:
        for server in SERVERS:
            for stream in (False, True):
                path = paths[f"{server}-{stream}"] = folder / f"{server}-{stream}.jsonl"
                with fd.Deck(path, mode="record", clock=fd.SystemClock()) as deck:
                    with client(deck, upstream.url, server, KEY) as chat:
                        assert turn(chat, stream=stream) == "It is sunny in Paris."
        sent = upstream.requests[-1]["headers"]
        assert sent["host"] == "openrouter.ai"
        assert sent["authorization"] == f"Bearer {KEY}"
    return paths


def replay(path: Path, *plan: fd.Fault) -> fd.Deck:
    return fd.Deck(path, mode="replay", faults=list(plan), clock=fd.VirtualClock())


@pytest.mark.parametrize("server", list(SERVERS))
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_tool_calling_turn_is_named_and_replays_offline(
    cassettes: dict[str, Path], server: str, stream: bool
) -> None:
    path = cassettes[f"{server}-{stream}"]
    rows = [json.loads(line) for line in path.read_text("utf-8").splitlines()]
    names = [(r["kind"], r["name"]) for r in rows if "seq" in r and "kind" in r]
    assert names == [("model", SERVERS[server][2])] * 2
    data = path.read_bytes()
    assert KEY.encode() not in data
    assert b"authorization" not in data.lower()
    deck = replay(path)
    with deck, client(deck, DEAD, server) as chat:
        assert turn(chat, stream=stream) == "It is sunny in Paris."
    assert [c.source for c in deck.report().calls] == ["replay", "replay"]


@pytest.mark.parametrize("server", list(SERVERS))
def test_faults_keep_openais_wire(cassettes: dict[str, Path], server: str) -> None:
    path = cassettes[f"{server}-False"]
    deck = replay(path, faults.quota(retry_after=2).at(seq=1))
    with deck, client(deck, DEAD, server) as chat:
        chat = chat.with_options(max_retries=0)
        with pytest.raises(openai.RateLimitError) as raised:
            turn(chat, stream=False)
    assert raised.value.code == "rate_limit_exceeded"
    assert raised.value.response.headers["retry-after-ms"] == "2000"
    deck = replay(path, faults.refusal(text="No.").at(seq=1))
    with deck, client(deck, DEAD, server) as chat:
        message = (
            chat.chat.completions.create(model="m", messages=ASK, tools=OPENAI_TOOLS)
            .choices[0]
            .message
        )
    assert (message.refusal, message.content, message.tool_calls) == ("No.", None, None)


def test_a_cut_stream_at_a_named_service(cassettes: dict[str, Path]) -> None:
    deck = replay(cassettes["openrouter-True"], faults.stream_cut(after=2).at(seq=1))
    seen: list[Any] = []
    with deck, client(deck, DEAD, "openrouter") as chat:
        stream = chat.with_options(max_retries=0).chat.completions.create(
            model="m", messages=ASK, tools=OPENAI_TOOLS, stream=True
        )
        with pytest.raises(openai.APIConnectionError):
            seen.extend(stream)
    assert len(seen) == 2


@pytest.mark.parametrize(
    ("path", "host", "agent", "name"),
    [
        ("/v1/chat/completions", "localhost", "OpenAI/Python 3.63.0", "openai.chat.completions"),
        ("/v1/chat/completions", "api.openai.com", None, "openai.chat.completions"),
        ("/v1/responses", "127.0.0.1", None, "openai.responses"),
        ("/v1/messages", "api.anthropic.com", None, "anthropic.messages"),
        (
            "/openai/deployments/gpt-4o/chat/completions",
            "127.0.0.1",
            None,
            "azure.chat.completions",
        ),
        ("/openai/deployments/emb/embeddings", "x.openai.azure.com", None, "azure.embeddings"),
        ("/openai/v1/chat/completions", "x.openai.azure.com", None, "azure.chat.completions"),
        ("/openai/v1/responses", "x.cognitiveservices.azure.com", None, "azure.responses"),
        ("/v1/chat/completions", "api.mistral.ai", None, "mistral.chat.completions"),
        (
            "/v1/fim/completions",
            "127.0.0.1",
            "mistral-client-python/3.7.0",
            "mistral.fim.completions",
        ),
        ("/openai/v1/chat/completions", "api.groq.com", None, "groq.chat.completions"),
        ("/api/v1/chat/completions", "openrouter.ai", None, "openrouter.chat.completions"),
        ("/v1/chat/completions", "api.together.xyz", None, "together.chat.completions"),
        ("/chat/completions", "api.deepseek.com", None, "deepseek.chat.completions"),
        # A known service's host on a route it does not serve is named by the route alone.
        ("/v1/chat/completions", "openrouter.ai", None, "openai.chat.completions"),
    ],
)
def test_requests_are_named_by_route_host_and_sdk(
    path: str, host: str, agent: str | None, name: str
) -> None:
    assert name_of("POST", path, host=host, agent=agent) == ("model", name)
    assert name_of("GET", path, host=host, agent=agent) == ("http", f"GET {path}")


def test_every_named_provider_speaks_a_wire_the_faults_know() -> None:
    for route in ROUTES:
        wire = wire_of(route.name)
        own = route.name.partition(".")[0] in OWN_SHAPES  # a provider with errors of its own
        assert own or wire.split(".")[0] in ("openai", "anthropic"), route.name
