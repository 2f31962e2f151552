"""The replay proxy through a real ``faultdeck serve`` process: the openai and anthropic
SDKs and plain httpx record through it against a local fake provider, then replay through
a replay-mode server with the provider gone; misses, faults and shutdown as clients see
them."""

from __future__ import annotations

import asyncio
import json
import signal
from pathlib import Path
from typing import Any

import anthropic
import httpx
import httpx2
import openai
import pytest

from faultdeck._cassette.reader import load
from tests.support.fake_upstream import DEFAULT_TEXT, TOOL_ARGUMENTS, Upstream
from tests.support.sdk import (
    ANTHROPIC_KEY,
    ANTHROPIC_MODEL,
    OPENAI_KEY,
    OPENAI_MODEL,
    QUESTION,
    assert_dead,
)

from .serving import STOP_TIMEOUT, Served, served

QUOTA = '{"fault": "quota", "retry_after": 2}'
TOOLS: list[Any] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]
ASKED: Any = [{"role": "user", "content": QUESTION}]


class Counted:
    """An httpx2 client that counts the requests it sends (an SDK's retries included)."""

    def __init__(self, **kwargs: Any) -> None:
        self.sent = 0
        self.client = httpx2.Client(event_hooks={"request": [self.count]}, **kwargs)

    def count(self, request: Any) -> None:
        self.sent += 1


def openai_client(server: Served, name: str, **kwargs: Any) -> openai.OpenAI:
    return openai.OpenAI(
        base_url=f"{server.base(name)}/v1", api_key=OPENAI_KEY, max_retries=0, **kwargs
    )


def run_all(server: Served) -> dict[str, Any]:
    """The same conversation through every client; what each one answered."""
    answers: dict[str, Any] = {}
    with openai_client(server, "sdk/openai") as client:
        answers.update(openai_sync(client))
    answers["openai_async"] = asyncio.run(tool_call(server))
    with anthropic.Anthropic(
        base_url=server.base("sdk/anthropic"), api_key=ANTHROPIC_KEY, max_retries=0
    ) as claude:
        answers.update(anthropic_sync(claude))
    answers["anthropic_async_stream"] = asyncio.run(claude_stream(server))
    plain = httpx.get(f"{server.base('plain')}/v1/models")
    answers["plain"] = [plain.status_code, [m["id"] for m in plain.json()["data"]]]
    return answers


def openai_sync(client: openai.OpenAI) -> dict[str, Any]:
    answers: dict[str, Any] = {}
    chat = client.chat.completions.create(model=OPENAI_MODEL, messages=ASKED)
    answers["openai_sync"] = chat.choices[0].message.content
    pieces = [
        chunk.choices[0].delta.content or ""
        for chunk in client.chat.completions.create(
            model=OPENAI_MODEL,
            messages=ASKED,
            stream=True,
        )
        if chunk.choices
    ]
    answers["openai_stream"] = "".join(pieces)
    return answers


async def tool_call(server: Served) -> Any:
    async with openai.AsyncOpenAI(
        base_url=f"{server.base('sdk/openai')}/v1", api_key=OPENAI_KEY, max_retries=0
    ) as aclient:
        done = await aclient.chat.completions.create(
            model=OPENAI_MODEL,
            messages=ASKED,
            tools=TOOLS,
        )
    call = done.choices[0].message.tool_calls[0]  # type: ignore[index]
    return [call.function.name, json.loads(call.function.arguments)]  # type: ignore[union-attr]


def anthropic_sync(claude: anthropic.Anthropic) -> dict[str, Any]:
    answers: dict[str, Any] = {}
    message = claude.messages.create(model=ANTHROPIC_MODEL, max_tokens=64, messages=ASKED)
    answers["anthropic_sync"] = message.content[0].text  # type: ignore[union-attr]
    with claude.messages.stream(
        model=ANTHROPIC_MODEL,
        max_tokens=64,
        messages=ASKED,
    ) as stream:
        answers["anthropic_stream"] = "".join(stream.text_stream)
    return answers


async def claude_stream(server: Served) -> str:
    async with anthropic.AsyncAnthropic(
        base_url=server.base("sdk/anthropic-async"), api_key=ANTHROPIC_KEY, max_retries=0
    ) as claude:
        async with claude.messages.stream(
            model=ANTHROPIC_MODEL, max_tokens=64, messages=ASKED
        ) as stream:
            return "".join([text async for text in stream.text_stream])


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """Every client recorded through a record-mode server; the server stopped by SIGTERM."""
    tmp = tmp_path_factory.mktemp("proxy")
    cassettes = tmp / "cassettes"
    with Upstream() as upstream:
        with served(
            tmp, "--cassettes", str(cassettes), "--mode", "record", "--upstream", upstream.url
        ) as server:
            answers = run_all(server)
            health = httpx.get(f"{server.url}/api/health").json()
            assert health["open"] == [
                "plain",
                "sdk/anthropic",
                "sdk/anthropic-async",
                "sdk/openai",
            ]
            assert server.stop() == 0
        assert len(upstream.requests) == 7
        url = upstream.url
    assert_dead(url)
    return cassettes, answers


def test_every_client_records_through_the_proxy(recorded: tuple[Path, dict[str, Any]]) -> None:
    _, answers = recorded
    assert answers == {
        "openai_sync": DEFAULT_TEXT,
        "openai_stream": DEFAULT_TEXT,
        "openai_async": ["get_weather", TOOL_ARGUMENTS],
        "anthropic_sync": DEFAULT_TEXT,
        "anthropic_stream": DEFAULT_TEXT,
        "anthropic_async_stream": DEFAULT_TEXT,
        "plain": [200, ["gpt-fake", "claude-fake"]],
    }


def test_sigterm_closes_every_cassette_with_its_end_line(
    recorded: tuple[Path, dict[str, Any]],
) -> None:
    cassettes, _ = recorded
    files = sorted(p.relative_to(cassettes).as_posix() for p in cassettes.rglob("*.jsonl"))
    assert files == [
        "plain.jsonl",
        "sdk/anthropic-async.jsonl",
        "sdk/anthropic.jsonl",
        "sdk/openai.jsonl",
    ]
    for path in cassettes.rglob("*.jsonl"):
        recording = load(path)
        assert recording.end is not None
        assert recording.end.get("status") == "ok"
    assert [len(load(cassettes / f).entries) for f in files] == [1, 1, 2, 3]
    assert not list(cassettes.rglob("*.lock"))


def test_the_cassettes_hold_no_api_key(recorded: tuple[Path, dict[str, Any]]) -> None:
    cassettes, _ = recorded
    for path in cassettes.rglob("*.jsonl"):
        text = path.read_text()
        assert OPENAI_KEY not in text
        assert ANTHROPIC_KEY not in text
        assert "authorization" not in text.lower()


def test_a_replay_server_answers_the_same_with_the_provider_gone(
    recorded: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    cassettes, answers = recorded
    with served(tmp_path, "--cassettes", str(cassettes)) as server:
        assert run_all(server) == answers
    for path in cassettes.rglob("*.jsonl"):
        assert load(path).end is not None  # replay left them as they were


def test_a_miss_is_a_404_the_sdk_raises_without_retrying(
    recorded: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    cassettes, _ = recorded
    counted = Counted()
    with served(tmp_path, "--cassettes", str(cassettes)) as server:
        client = openai_client(server, "sdk/openai", http_client=counted.client)
        with (
            client.with_options(max_retries=2) as retrying,
            pytest.raises(openai.NotFoundError) as raised,
        ):
            retrying.chat.completions.create(
                model=OPENAI_MODEL,
                messages=[{"role": "user", "content": "never recorded"}],
            )
    assert counted.sent == 1
    assert raised.value.response.headers["x-should-retry"] == "false"
    assert raised.value.body["type"] == "faultdeck_replay_miss"  # type: ignore[index]
    assert "openai.chat.completions" in raised.value.body["message"]  # type: ignore[index]


def test_a_fault_by_header_is_the_providers_429(
    recorded: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    cassettes, answers = recorded
    with served(tmp_path, "--cassettes", str(cassettes)) as server:
        faulted = openai_client(server, "sdk/openai", default_headers={"X-Faultdeck-Fault": QUOTA})
        with faulted, pytest.raises(openai.RateLimitError) as raised:
            faulted.chat.completions.create(model=OPENAI_MODEL, messages=ASKED)
        assert raised.value.response.headers["retry-after"] == "2"
        assert raised.value.code == "rate_limit_exceeded"
        # Without the header the same request gets its recorded answer.
        with openai_client(server, "sdk/openai") as client:
            chat = client.chat.completions.create(
                model=OPENAI_MODEL,
                messages=ASKED,
            )
        assert chat.choices[0].message.content == answers["openai_sync"]


def test_a_fault_plan_for_the_whole_server(
    recorded: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    cassettes, _ = recorded
    plan = tmp_path / "quota.json"
    plan.write_text(json.dumps({"faults": [json.loads(QUOTA)]}))
    with served(tmp_path, "--cassettes", str(cassettes), "--faults", str(plan)) as server:
        claude = anthropic.Anthropic(
            base_url=server.base("sdk/anthropic"), api_key=ANTHROPIC_KEY, max_retries=0
        )
        with claude, pytest.raises(anthropic.RateLimitError) as by_anthropic:
            claude.messages.create(model=ANTHROPIC_MODEL, max_tokens=64, messages=ASKED)
        client = openai_client(server, "sdk/openai")
        with client, pytest.raises(openai.RateLimitError) as by_openai:
            client.chat.completions.create(
                model=OPENAI_MODEL,
                messages=ASKED,
            )
    assert by_anthropic.value.response.headers["retry-after"] == "2"
    assert by_openai.value.response.headers["retry-after"] == "2"


def test_sigint_closes_the_cassette_too(tmp_path: Path) -> None:
    cassettes = tmp_path / "cassettes"
    with Upstream() as upstream:
        args = ("--cassettes", str(cassettes), "--mode", "record", "--upstream", upstream.url)
        with served(tmp_path, *args) as server:
            assert httpx.get(f"{server.base('ctrl-c')}/v1/models").status_code == 200
            server.proc.send_signal(signal.SIGINT)
            assert server.proc.wait(STOP_TIMEOUT) == 0
    recording = load(cassettes / "ctrl-c.jsonl")
    assert len(recording.entries) == 1
    assert recording.end is not None


@pytest.mark.parametrize(
    "fault", ['{"fault": "stream_cut", "after": 1}', '{"fault": "reset"}', '{"fault": "timeout"}']
)
def test_a_broken_connection_by_header_is_a_connection_error(
    recorded: tuple[Path, dict[str, Any]], tmp_path: Path, fault: str
) -> None:
    cassettes, answers = recorded
    with served(tmp_path, "--cassettes", str(cassettes)) as server:
        broken = openai_client(server, "sdk/openai", default_headers={"X-Faultdeck-Fault": fault})
        with broken, pytest.raises(openai.APIConnectionError):
            for _ in broken.chat.completions.create(
                model=OPENAI_MODEL, messages=ASKED, stream=True
            ):
                pass
        # The server goes on: the next request gets its recorded answer.
        with openai_client(server, "sdk/openai") as client:
            chat = client.chat.completions.create(model=OPENAI_MODEL, messages=ASKED)
        assert chat.choices[0].message.content == answers["openai_sync"]


def test_the_server_also_serves_its_pages_and_its_json_api(
    recorded: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    cassettes, _ = recorded
    names = sorted(
        p.relative_to(cassettes).with_suffix("").as_posix() for p in cassettes.rglob("*.jsonl")
    )
    with served(tmp_path, "--cassettes", str(cassettes)) as server:
        with httpx.Client(base_url=server.url) as client:
            listed = client.get("/api/cassettes").json()["cassettes"]
            assert sorted(c["name"] for c in listed) == names
            page = client.get("/", follow_redirects=True)
            assert page.status_code == 200
            assert page.url.path == "/ui/"
            for name in names:
                assert name in page.text
            diff = client.get("/api/diff", params={"a": names[0], "b": names[0]}).json()
            assert diff["identical"] is True
