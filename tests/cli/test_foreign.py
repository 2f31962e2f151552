"""Programs that are not Python: ``faultdeck record/replay -- node agent.mjs`` serves the
program's deck through a proxy on loopback that the SDK's base-URL variable points at.

The agent (``node_agent.mjs``) is the OpenAI Node SDK as a user writes it, with nothing of
faultdeck: it reads ``OPENAI_BASE_URL`` as the SDK does by default. The upstream is the
local fake provider; once it is stopped, a replay that reached for the network would fail.
"""

from __future__ import annotations

import hashlib
import json
import os
import select
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import pytest

from faultdeck._base.bootstrap import is_python
from faultdeck._bootstrap.foreign import PROVIDERS, foreign_deck
from faultdeck._cassette.reader import load
from faultdeck._deck.deck import Deck
from faultdeck.http import Transport
from tests.server.clients import NODE_MODULES, need
from tests.server.upstream import SQUEEZED, Gate, create_world
from tests.support.children import child_env, run
from tests.support.fake_upstream import ANTHROPIC_TOOLS, DEFAULT_TEXT, Upstream

AGENT = Path(__file__).with_name("node_agent.mjs")
KEY = "sk-proj-Record0nlyKey4Tests0000000000000000"
"""The key the recording runs with: forwarded to the upstream, never stored."""
OTHER_KEY = "sk-proj-Replay0therKey4Tests000000000000000"
TURNS = ['tool get_weather {"city":"Paris"}', "answer It is sunny in Paris."]
"""What the agent prints of its two turns."""
READ_TIMEOUT = 30.0


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A user's project: the agent, and the OpenAI Node SDK where its ``import`` finds it
    (an ES module resolves beside itself, never through NODE_PATH)."""
    need("node")
    shutil.copy(AGENT, tmp_path / "agent.mjs")
    (tmp_path / "node_modules").symlink_to(NODE_MODULES, target_is_directory=True)
    return tmp_path


def environment(base_url: str, key: str = KEY) -> dict[str, str]:
    """The environment the user runs faultdeck in: the SDK's key and base URL, and no other
    provider's variable from the caller's."""
    env = child_env(OPENAI_API_KEY=key)
    for provider in PROVIDERS:
        env.pop(provider.variable, None)
    env["OPENAI_BASE_URL"] = base_url
    return env


def faultdeck(
    project: Path, *args: str, base_url: str, key: str = KEY
) -> subprocess.CompletedProcess[str]:
    """``faultdeck ARGS`` run in ``project`` as a user would."""
    return run(
        [sys.executable, "-m", "faultdeck", *args],
        env=environment(base_url, key),
        cwd=project,
        timeout=120,
    )


def printed(done: subprocess.CompletedProcess[str], prefix: str) -> list[str]:
    return [line for line in done.stdout.splitlines() if line.startswith(prefix)]


def entries(path: Path) -> list[Any]:
    return list(load(path).entries)


def test_a_node_agent_is_recorded_then_replayed_with_no_upstream(project: Path) -> None:
    cassette = project / "agent.jsonl"
    with Upstream() as upstream:
        base_url = f"{upstream.url}/v1"
        recorded = faultdeck(
            project, "record", str(cassette), "--", "node", "agent.mjs", base_url=base_url
        )
        reached = upstream.requests
    assert recorded.returncode == 0, recorded.stderr
    assert printed(recorded, "tool") + printed(recorded, "answer") == TURNS
    assert "recorded 2 calls (2 live)" in recorded.stdout
    # The upstream got the program's requests, on its own paths, with the program's key.
    assert [(r["method"], r["path"]) for r in reached] == [("POST", "/v1/chat/completions")] * 2
    assert {r["headers"]["authorization"] for r in reached} == {f"Bearer {KEY}"}
    calls = entries(cassette)
    assert [(c.kind, c.name, c.args["path"]) for c in calls] == [
        ("model", "openai.chat.completions", "/v1/chat/completions")
    ] * 2
    assert calls[1].args["body"]["messages"][-1] == {
        "role": "tool",
        "tool_call_id": "«id:2»",
        "content": "sunny",
    }
    assert KEY not in cassette.read_text("utf-8")

    # The upstream is gone (its port closed): a call that went out would fail the program.
    replayed = faultdeck(
        project,
        "replay",
        str(cassette),
        "--",
        "node",
        "agent.mjs",
        base_url=base_url,
        key=OTHER_KEY,
    )
    assert replayed.returncode == 0, replayed.stderr
    assert printed(replayed, "tool") + printed(replayed, "answer") == TURNS
    assert "2 recorded, 2 used, 0 live, 0 unused, 0 repeated, 0 missed" in replayed.stdout


def read_until(proc: subprocess.Popen[str], wanted: str) -> list[str]:
    """The lines ``proc`` printed, read as they come until one starts with ``wanted``."""
    assert proc.stdout is not None
    lines: list[str] = []
    while not any(line.startswith(wanted) for line in lines):
        ready, _, _ = select.select([proc.stdout], [], [], READ_TIMEOUT)
        line = proc.stdout.readline() if ready else ""
        if not line:
            proc.kill()
            pytest.fail(f"no {wanted!r} line in {READ_TIMEOUT} s; so far {lines}")
        lines.append(line.rstrip("\n"))
    return lines


def test_a_stream_reaches_the_program_chunk_by_chunk_and_replays(project: Path) -> None:
    cassette = project / "stream.jsonl"
    gate = Gate()
    with Upstream(app=create_world(gate)) as upstream:
        base_url = f"{upstream.url}/v1"
        command = [sys.executable, "-m", "faultdeck", "record", str(cassette), "--"]
        gate.arm()
        proc = subprocess.Popen(
            [*command, "node", "agent.mjs", "--stream"],
            env=environment(base_url),
            cwd=project,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        first = read_until(proc, "chunk")
        # The upstream holds the stream's rest until the first chunk is in the program's
        # hands: a proxy that buffered would have delivered it only after the rest.
        held = not gate.released
        gate.open()
        rest, err = proc.communicate(timeout=READ_TIMEOUT)
    assert proc.returncode == 0, err
    assert held
    out = first + rest.splitlines()
    chunks = [json.loads(line.removeprefix("chunk ")) for line in out if line.startswith("chunk")]
    assert "".join(chunks) == DEFAULT_TEXT
    streamed = entries(cassette)[-1]
    assert (streamed.result, streamed.args["body"]["stream"]) == ("stream", True)

    replayed = faultdeck(
        project, "replay", str(cassette), "--", "node", "agent.mjs", "--stream", base_url=base_url
    )
    assert replayed.returncode == 0, replayed.stderr
    assert printed(replayed, "chunk") == [line for line in out if line.startswith("chunk")]
    assert "3 recorded, 3 used, 0 live" in replayed.stdout


@pytest.fixture
def recorded(project: Path) -> tuple[Path, str]:
    """The agent's two turns recorded, and the base URL of the upstream (stopped since)."""
    cassette = project / "agent.jsonl"
    with Upstream() as upstream:
        base_url = f"{upstream.url}/v1"
        done = faultdeck(
            project, "record", str(cassette), "--", "node", "agent.mjs", base_url=base_url
        )
    assert done.returncode == 0, done.stderr
    return cassette, base_url


def test_a_quota_fault_reaches_the_node_program(project: Path, recorded: tuple[Path, str]) -> None:
    cassette, base_url = recorded
    plan = project / "quota.json"
    faults = [{"fault": "quota", "retry_after": 0, "on": {"kind": "model"}}]
    plan.write_text(json.dumps({"faults": faults}), "utf-8")
    done = faultdeck(
        project,
        "replay",
        str(cassette),
        "--faults",
        str(plan),
        "--format",
        "json",
        "--",
        "node",
        "agent.mjs",
        base_url=base_url,
    )
    assert done.returncode == 1
    assert "error 429" in done.stderr  # the SDK raised the 429, after its own two retries
    report = json.loads(done.stdout)["reports"][0]
    assert [(c["source"], c["fault"], c["error"]) for c in report["calls"]] == [
        ("fault", "quota", "RateLimitError")
    ] * 3


def test_a_call_the_cassette_lacks_is_a_miss_the_program_sees(
    project: Path, recorded: tuple[Path, str]
) -> None:
    cassette, base_url = recorded
    done = faultdeck(
        project, "replay", str(cassette), "--", "node", "agent.mjs", "--stream", base_url=base_url
    )
    assert done.returncode == 1
    assert printed(done, "answer") == TURNS[1:]
    assert "error 404" in done.stderr
    assert "replay miss at seq 3" in done.stderr
    assert "miss: seq 3 model openai.chat.completions" in done.stdout


def test_a_base_url_that_is_not_a_url_is_one_line_and_the_program_runs(
    project: Path, recorded: tuple[Path, str]
) -> None:
    cassette, _ = recorded
    done = faultdeck(
        project, "replay", str(cassette), "--", "node", "agent.mjs", base_url="localhost:8080"
    )
    said = [line for line in done.stderr.splitlines() if line.startswith("faultdeck:")]
    assert said == [
        "faultdeck: warning: OPENAI_BASE_URL=localhost:8080 is not an http(s) URL, so the "
        "program's calls through it go as they are, neither recorded nor replayed; set it to "
        "one, e.g. OPENAI_BASE_URL=http://localhost:8080"
    ]
    # Left as it was, the value is the SDK's to meet: it fails to connect, and says so.
    assert done.returncode == 1
    assert "Connection error" in done.stderr
    assert "2 recorded, 0 used, 0 live, 2 unused" in done.stdout


@pytest.mark.parametrize(
    ("variable", "value", "upstream"),
    [
        ("OPENAI_BASE_URL", "", "https://api.openai.com/v1"),
        ("OPENAI_BASE_URL", " http://127.0.0.1:9/v1 ", "http://127.0.0.1:9/v1"),
        ("OPENAI_BASE_URL", "localhost:8080", None),
        ("OPENAI_BASE_URL", "ftp://files.example/v1", None),
        ("OPENAI_BASE_URL", "http://127.0.0.1:port/v1", None),
        ("GOOGLE_GEMINI_BASE_URL", "", "https://generativelanguage.googleapis.com/"),
        ("OLLAMA_HOST", "", "http://127.0.0.1:11434"),
        ("OLLAMA_HOST", "0.0.0.0", "http://0.0.0.0:11434"),
        ("OLLAMA_HOST", ":5000", "http://127.0.0.1:5000"),
        ("OLLAMA_HOST", "box:5000/ollama", "http://box:5000/ollama"),
        ("OLLAMA_HOST", "https://box", "https://box"),
        ("OLLAMA_HOST", "ftp://box", None),
    ],
)
def test_a_variable_names_its_upstream_as_its_sdk_reads_it(
    variable: str, value: str, upstream: str | None
) -> None:
    provider = next(p for p in PROVIDERS if p.variable == variable)
    assert provider.upstream(value) == upstream


def deck_env(cassette: Path, **variables: str) -> dict[str, str]:
    report = cassette.with_suffix(".report.json")
    return {
        "FAULTDECK_CASSETTE": str(cassette),
        "FAULTDECK_MODE": "record",
        "FAULTDECK_REPORT": str(report),
        **variables,
    }


def ask(claude: anthropic.Anthropic) -> None:
    asked: list[Any] = [{"role": "user", "content": "Weather in Paris?"}]
    claude.messages.create(
        model="claude-fake", max_tokens=64, messages=asked, tools=ANTHROPIC_TOOLS
    )


def test_a_request_through_the_proxy_is_the_call_the_transport_makes(tmp_path: Path) -> None:
    proxied, direct = tmp_path / "proxied.jsonl", tmp_path / "direct.jsonl"
    with Upstream() as upstream:
        env = deck_env(proxied, ANTHROPIC_BASE_URL=upstream.url)
        with foreign_deck(env) as served:
            base_url = served.env["ANTHROPIC_BASE_URL"]
            with anthropic.Anthropic(api_key=KEY, base_url=base_url, max_retries=0) as claude:
                ask(claude)
            served.finish(0)
        with (
            Deck(direct, mode="record") as deck,
            httpx2.Client(transport=Transport(deck, httpx=httpx2)) as http,
        ):
            ask(anthropic.Anthropic(api_key=KEY, base_url=upstream.url, http_client=http))
    through, beside = entries(proxied), entries(direct)
    assert [(c.kind, c.name, c.key, c.args) for c in through] == [
        (c.kind, c.name, c.key, c.args) for c in beside
    ]
    assert through[0].name == "anthropic.messages"
    # The report is the one the program's own deck writes, where FAULTDECK_REPORT says.
    report = json.loads(Path(env["FAULTDECK_REPORT"]).read_text("utf-8"))
    assert (report["mode"], report["stored"], report["ok"]) == ("record", 1, True)
    assert [c["key"] for c in report["calls"]] == [beside[0].key]


def test_a_gzipped_answer_and_a_chunked_upload_go_through_and_replay(tmp_path: Path) -> None:
    cassette = tmp_path / "c.jsonl"
    pieces = [b"\x00\xff" * 300, b"tail"]

    def use(served: Any) -> tuple[Any, str | None, Any]:
        base_url = served.env["OPENAI_BASE_URL"]
        with httpx2.Client(trust_env=False) as http:
            squeezed = http.get(f"{base_url}/squeezed", headers={"accept-encoding": "gzip"})
            uploaded = http.post(f"{base_url}/uploads", content=iter(pieces))  # chunked
        served.finish(0)
        return squeezed.json(), squeezed.headers.get("content-encoding"), uploaded.json()

    with Upstream(app=create_world(Gate())) as upstream:
        base_url = f"{upstream.url}/v1"
        with foreign_deck(deck_env(cassette, OPENAI_BASE_URL=base_url)) as served:
            live = use(served)
    replay = deck_env(cassette, OPENAI_BASE_URL=base_url, FAULTDECK_MODE="replay")
    with foreign_deck(replay) as served:
        replayed = use(served)
    digest = hashlib.sha256(b"".join(pieces)).hexdigest()
    assert live == (SQUEEZED, "gzip", {"size": 604, "sha256": digest, "head": "00ff00ff"})
    # Replayed whole, the body comes decoded, with its own length.
    assert replayed == (SQUEEZED, None, live[2])


def test_each_provider_has_its_prefix_and_keeps_its_base_path(tmp_path: Path) -> None:
    env = deck_env(tmp_path / "c.jsonl", OPENAI_BASE_URL="http://127.0.0.1:9/gateway/v1")
    with foreign_deck(env) as served:
        origin = served.env["OPENAI_BASE_URL"].removesuffix("/openai/gateway/v1")
        assert served.env == {
            "OPENAI_BASE_URL": f"{origin}/openai/gateway/v1",
            "ANTHROPIC_BASE_URL": f"{origin}/anthropic",
            "GROQ_BASE_URL": f"{origin}/groq",
            "GOOGLE_GEMINI_BASE_URL": f"{origin}/gemini/",
            "OLLAMA_HOST": f"{origin}/ollama",
        }
        assert origin.startswith("http://127.0.0.1:")
        assert served.target("/openai/gateway/v1/chat/completions?a=1") == (
            "http://127.0.0.1:9/gateway/v1/chat/completions?a=1"
        )
        assert served.target("/groq/openai/v1/models") == "https://api.groq.com/openai/v1/models"
        assert served.target("/elsewhere/v1") is None
        answer = httpx2.get(f"{origin}/elsewhere/v1/models", trust_env=False)
        assert answer.status_code == 404
        assert answer.json()["error"]["message"].startswith("no provider at /elsewhere/v1")
        served.finish(0)


def test_a_variable_that_is_not_a_url_is_said_once_with_no_secret_in_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    env = deck_env(
        tmp_path / "c.jsonl", OPENAI_BASE_URL="ftp://files.example/v1", GROQ_BASE_URL=KEY
    )
    for _ in range(2):  # as `replay --repeat 2` runs it
        with foreign_deck(env) as served:
            served.finish(0)
    assert sorted(served.env) == ["ANTHROPIC_BASE_URL", "GOOGLE_GEMINI_BASE_URL", "OLLAMA_HOST"]
    said = capsys.readouterr().err.splitlines()
    assert said[0] == (
        "faultdeck: warning: OPENAI_BASE_URL=ftp://files.example/v1 is not an http(s) URL, so "
        "the program's calls through it go as they are, neither recorded nor replayed; set it "
        "to one, e.g. OPENAI_BASE_URL=https://files.example/v1"
    )
    assert said[1].startswith("faultdeck: warning: GROQ_BASE_URL=«redacted:")
    assert len(said) == 2
    assert KEY not in said[1]


def test_a_deck_left_without_finish_is_closed_as_failed(tmp_path: Path) -> None:
    cassette = tmp_path / "c.jsonl"
    env = deck_env(cassette)
    with pytest.raises(FileNotFoundError, match="no such program"), foreign_deck(env):
        raise FileNotFoundError("no such program")
    assert (load(cassette).end or {}).get("status") == "error"
    assert not Path(env["FAULTDECK_REPORT"]).exists()


def test_a_program_that_cannot_be_found_opens_no_deck(tmp_path: Path) -> None:
    cassette = tmp_path / "c.jsonl"
    command = [sys.executable, "-m", "faultdeck", "record", str(cassette), "--", "no-such-tool"]
    done = run(command, cwd=tmp_path)
    assert done.returncode == 2
    assert "no such program: no-such-tool" in done.stderr
    assert not cassette.exists()


def script(path: Path, first_line: str) -> str:
    path.write_text(f"{first_line}\nprint('hi')\n", "utf-8")
    path.chmod(0o755)
    return str(path)


def test_what_counts_as_python(tmp_path: Path) -> None:
    link = tmp_path / "interpreter"
    link.symlink_to(sys.executable)
    assert is_python(["python", "agent.py"])
    assert is_python(("python3.11", "-m", "agent"))
    assert is_python([sys.executable, "-c", "pass"])
    assert is_python([str(link), "agent.py"])
    assert is_python(["/usr/bin/env", "python3", "agent.py"])
    assert is_python(["env", "LOG=1", "-u", "HOME", "python3", "agent.py"])
    assert is_python(["uv", "run", "python", "agent.py"])
    assert is_python(["uv", "run", "--with", "httpx", "agent.py"])
    assert is_python(["poetry", "run", "python", "-m", "agent"])
    assert is_python(["pipx", "run", "pycowsay"])
    assert is_python([script(tmp_path / "a", "#!/usr/bin/env python3")])
    assert is_python([script(tmp_path / "b", f"#!{sys.executable} -u")])


def test_what_does_not_count_as_python(tmp_path: Path) -> None:
    assert not is_python([])
    assert not is_python(["node", "agent.mjs"])
    assert not is_python(["npx", "tsx", "agent.ts"])
    assert not is_python(["bash", "run.sh"])
    assert not is_python(["uv", "run", "node", "agent.js"])
    assert not is_python(["uv", "pip", "install", "x"])
    assert not is_python(["/usr/bin/env", "node", "agent.mjs"])
    assert not is_python(["no-such-program-anywhere"])
    assert not is_python([script(tmp_path / "a", "#!/bin/sh")])
    assert not is_python([script(tmp_path / "b", "#!/usr/bin/env node")])
    looping = tmp_path / "c"
    assert not is_python([script(looping, f"#!{looping}")])
    unrunnable = script(tmp_path / "d", "#!/usr/bin/env python3")
    os.chmod(unrunnable, 0o644)  # not found as a program, so not Python
    assert not is_python([unrunnable])
