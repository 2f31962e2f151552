"""What the tests of ``fork --model`` and ``compare`` share: an openai-SDK tool loop with no
faultdeck in it, recorded against the fake upstream by the real command line and forked
onto another model; the upstream is stopped after, so every later run is offline."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from tests.support.children import child_env
from tests.support.fake_upstream import RecordedRequest, Upstream

EXE = str(Path(sys.executable).parent / "faultdeck")
KEY = "sk-proj-" + "ForkOntoAnotherModel0123456789abcdef"
DEAD = "http://127.0.0.1:9"
"""A port nothing listens on: where a request for anywhere else goes."""
MODEL, OTHER = "gpt-4o-mini", "other-model"

AGENT = '''\
"""A weather agent: two model turns around a tool call. With --expect MODEL it exits 1
when the answer came from another model."""

import sys

import openai

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]

client = openai.OpenAI()
messages = [{"role": "user", "content": "What is the weather in Paris?"}]
for _ in range(4):
    reply = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=TOOLS)
    message = reply.choices[0].message
    if not message.tool_calls:
        break
    messages.append(message.model_dump(exclude_none=True))
    for call in message.tool_calls:
        messages.append({"role": "tool", "tool_call_id": call.id, "content": "sunny"})
print(message.content, "from", reply.model)
if sys.argv[1:2] == ["--expect"] and reply.model != sys.argv[2]:
    sys.exit(f"the answer came from {reply.model}, not {sys.argv[2]}")
'''
ANSWER = "It is sunny in Paris. from"


def program(*args: str) -> list[str]:
    """The agent, with ``args``."""
    return [sys.executable, "agent.py", *args]


@dataclass(frozen=True)
class Runs:
    """A project with ``runs/base.jsonl`` recorded and ``runs/other.jsonl`` forked from it at
    1 onto ``OTHER``; what each command said and what reached the upstream while forking."""

    folder: Path
    env: dict[str, str]
    recorded: subprocess.CompletedProcess[str]
    forked: subprocess.CompletedProcess[str]
    sent: list[RecordedRequest]

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        """A ``faultdeck`` command in the project, with the upstream stopped."""
        return faultdeck(*args, cwd=self.folder, env=self.env)


def faultdeck(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The real command line, as a user runs it."""
    return subprocess.run(
        [EXE, *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        timeout=240,
        check=False,
    )


def record_and_fork(folder: Path) -> Runs:
    """Record the agent, then fork it at 1 onto ``OTHER``, against a fake upstream."""
    (folder / "pyproject.toml").write_text('[project]\nname = "demo"\n', "utf-8")
    (folder / "agent.py").write_text(AGENT, "utf-8")
    (folder / "runs").mkdir()
    with Upstream() as upstream:
        env = child_env(
            COLUMNS="200",
            OPENAI_BASE_URL=f"{upstream.url}/v1",
            OPENAI_API_KEY=KEY,
            HTTP_PROXY=DEAD,
            HTTPS_PROXY=DEAD,
            NO_PROXY="127.0.0.1,localhost",
        )
        recorded = faultdeck("record", "runs/base.jsonl", "--", *program(), cwd=folder, env=env)
        upstream.reset()
        forked = faultdeck(
            "fork",
            "runs/base.jsonl",
            "--at",
            "1",
            "--model",
            OTHER,
            "-o",
            "runs/other.jsonl",
            "--",
            *program(),
            cwd=folder,
            env=env,
        )
        sent = upstream.requests
    return Runs(folder, env, recorded, forked, sent)
