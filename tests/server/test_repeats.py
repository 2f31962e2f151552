"""A replay server answers every run of a program, not only the first: a two-turn openai
agent recorded through ``faultdeck serve``, then run again and again against a replay
server with the provider gone; ``--repeats strict`` turns the second run into a miss, and
``POST /api/cassettes/{name}/rewind`` starts a cassette over."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from faultdeck._cassette.reader import load
from faultdeck.server._config import ServerConfig
from tests.support.fake_upstream import TOOL_ARGUMENTS, Upstream
from tests.support.sdk import OPENAI_KEY, OPENAI_MODEL, QUESTION, assert_dead

from .runs import serving
from .serving import Served, served

TOKEN = "rewind-token-for-the-tests"
TOOLS: list[Any] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]


def agent(server: Served, name: str = "agent") -> list[Any]:
    """Two turns: the model asks for a tool, gets its result, answers. What it saw, ids
    included (a replay gives the recorded ones)."""
    client = openai.OpenAI(base_url=f"{server.base(name)}/v1", api_key=OPENAI_KEY, max_retries=0)
    with client:
        messages: list[Any] = [{"role": "user", "content": QUESTION}]
        first = client.chat.completions.create(model=OPENAI_MODEL, messages=messages, tools=TOOLS)
        call = first.choices[0].message.tool_calls[0]  # type: ignore[index]
        messages.append(first.choices[0].message.model_dump(exclude_none=True))
        messages.append({"role": "tool", "tool_call_id": call.id, "content": "18 C"})
        second = client.chat.completions.create(model=OPENAI_MODEL, messages=messages, tools=TOOLS)
    arguments = json.loads(call.function.arguments)  # type: ignore[union-attr]
    return [first.id, call.id, arguments, second.id, second.choices[0].message.content]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Any]]:
    """The agent run once through a record-mode server; the provider then stopped."""
    tmp = tmp_path_factory.mktemp("repeats")
    cassettes = tmp / "cassettes"
    with Upstream() as upstream:
        args = ("--cassettes", str(cassettes), "--mode", "record", "--upstream", upstream.url)
        with served(tmp, *args) as server:
            answers = agent(server)
        url = upstream.url
    assert_dead(url)
    assert answers[2] == TOOL_ARGUMENTS
    assert answers[4] == "It is 18 C in Paris."
    assert len(load(cassettes / "agent.jsonl").entries) == 2
    return cassettes, answers


def rewind(server: Served, name: str, **headers: str) -> httpx.Response:
    return httpx.post(f"{server.url}/api/cassettes/{name}/rewind", headers=headers)


def test_every_run_gets_the_recorded_answers_by_default(
    recorded: tuple[Path, list[Any]], tmp_path: Path
) -> None:
    cassettes, answers = recorded
    with served(tmp_path, "--cassettes", str(cassettes)) as server:
        runs = [agent(server) for _ in range(3)]
        health = httpx.get(f"{server.url}/api/health").json()
    assert runs == [answers, answers, answers]
    assert health["repeats"] == "cycle"


def test_strict_makes_the_second_run_a_miss_until_the_cassette_is_rewound(
    recorded: tuple[Path, list[Any]], tmp_path: Path
) -> None:
    cassettes, answers = recorded
    with served(tmp_path, "--cassettes", str(cassettes), "--repeats", "strict") as server:
        assert agent(server) == answers
        with pytest.raises(openai.NotFoundError) as raised:
            agent(server)
        started_over = rewind(server, "agent")
        again = agent(server)
    body: Any = raised.value.body
    assert body["type"] == "faultdeck_replay_miss"
    assert "recorded 1 time and is now asked a 2nd time: a retry storm" in body["message"]
    assert started_over.status_code == 200
    assert started_over.json() == {"ok": True, "cassette": "agent", "open": True}
    assert again == answers


def test_a_miss_names_the_serve_command_that_records(
    recorded: tuple[Path, list[Any]], tmp_path: Path
) -> None:
    cassettes, _ = recorded
    with served(tmp_path, "--cassettes", str(cassettes)) as server:
        client = openai.OpenAI(base_url=f"{server.base('agent')}/v1", api_key=OPENAI_KEY)
        with client, pytest.raises(openai.NotFoundError) as raised:
            client.chat.completions.create(
                model=OPENAI_MODEL, messages=[{"role": "user", "content": "never recorded"}]
            )
    message: str = raised.value.body["message"]  # type: ignore[index]
    folder = f"--cassettes {cassettes}"
    assert f"re-record with faultdeck serve {folder} --mode record --upstream URL," in message
    assert f"new calls with faultdeck serve {folder} --mode append --upstream URL" in message
    assert "faultdeck record" not in message


# -- the rewind route, in process on 127.0.0.1 -------------------------------------------


def test_rewinding_an_unknown_cassette_is_a_404(tmp_path: Path) -> None:
    with serving(ServerConfig(cassettes=tmp_path)) as url:
        unknown = httpx.post(f"{url}/api/cassettes/nowhere/rewind")
        escape = httpx.post(f"{url}/api/cassettes/..%2Fup/rewind")
    assert unknown.status_code == 404
    assert "\n" not in unknown.text
    assert unknown.json() == {
        "error": {
            "type": "faultdeck_not_found",
            "message": "no cassette named 'nowhere' in the cassettes folder",
        }
    }
    assert escape.status_code in (400, 404)


def test_a_cassette_not_asked_yet_rewinds_as_it_is(recorded: tuple[Path, list[Any]]) -> None:
    cassettes, _ = recorded
    with serving(ServerConfig(cassettes=cassettes)) as url:
        answer = httpx.post(f"{url}/api/cassettes/agent/rewind")
        health = httpx.get(f"{url}/api/health").json()
    assert answer.status_code == 200
    assert answer.json() == {"ok": True, "cassette": "agent", "open": False}
    assert health["open"] == []  # a rewind opens nothing


def test_a_rewind_needs_the_token_when_the_server_has_one(
    recorded: tuple[Path, list[Any]],
) -> None:
    cassettes, _ = recorded
    with serving(ServerConfig(cassettes=cassettes, token=TOKEN)) as url:
        bare = httpx.post(f"{url}/api/cassettes/agent/rewind")
        wrong = httpx.post(
            f"{url}/api/cassettes/agent/rewind", headers={"X-Faultdeck-Token": "not-it"}
        )
        right = httpx.post(
            f"{url}/api/cassettes/agent/rewind", headers={"X-Faultdeck-Token": TOKEN}
        )
    assert (bare.status_code, wrong.status_code) == (401, 401)
    assert bare.json()["error"]["type"] == "faultdeck_unauthorized"
    assert right.status_code == 200


def test_a_cassette_being_recorded_does_not_rewind(tmp_path: Path) -> None:
    cassettes = tmp_path / "cassettes"
    with Upstream() as upstream:
        args = ("--cassettes", str(cassettes), "--mode", "record", "--upstream", upstream.url)
        with served(tmp_path, *args) as server:
            assert httpx.get(f"{server.base('live')}/v1/models").status_code == 200
            answer = rewind(server, "live")
            unopened = rewind(server, "live2")
    assert answer.status_code == 409
    message = answer.json()["error"]["message"]
    assert "'live' is recorded into (mode record)" in message
    assert "--mode replay" in message
    assert unopened.status_code == 404  # nothing by that name, and nothing is made
    assert not (cassettes / "live2.jsonl").exists()
    assert len(load(cassettes / "live.jsonl").entries) == 1
