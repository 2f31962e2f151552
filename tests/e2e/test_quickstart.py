"""docs/quickstart.md, followed as a new user follows it: in an empty folder, each file the
page shows is written, each diff applied and each command run, in order, against the local
fake OpenAI upstream (the page's one liberty: ``OPENAI_BASE_URL`` points at it); each
command must exit as the page says (0, or the ``# exits N`` its line ends with), and each
output block's lines must show in what the commands before it printed. ``…`` in an output
line stands for what a real model's answers, keys and folders make differ."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from tests.support import ROOT
from tests.support.children import child_env
from tests.support.fake_upstream import Upstream
from tests.support.sdk import OPENAI_KEY

PAGE = ROOT / "docs" / "quickstart.md"
FENCE = re.compile(r"^```(\w+)(?: title=\"([^\"]+)\")?\n(.*?)^```$", re.M | re.S)
BIN = str(Path(sys.executable).parent)
FILE_KINDS = ("python", "toml")
EXITS = re.compile(r"#.*\bexits (\d+)\b")
IMPORTS_FAULTDECK = re.compile(r"^\s*(?:import|from)\s+faultdeck\b", re.M)


@dataclass(frozen=True, slots=True)
class Block:
    """One fenced block of the page: its language, the file it names, its text."""

    lang: str
    title: str | None
    text: str


def page_blocks() -> list[Block]:
    return [Block(m[1], m[2], m[3]) for m in FENCE.finditer(PAGE.read_text("utf-8"))]


def apply_diff(path: Path, diff: str) -> None:
    """Replace each ``-`` line of ``diff`` (found exactly once in the file) by its ``+``."""
    lines = diff.splitlines()
    old = [line[1:] for line in lines if line.startswith("-")]
    new = [line[1:] for line in lines if line.startswith("+")]
    assert len(old) == len(new) > 0, diff
    text = path.read_text("utf-8")
    for before, after in zip(old, new, strict=True):
        assert text.count(before + "\n") == 1, f"{path.name} has no single line {before!r}"
        text = text.replace(before + "\n", after + "\n")
    path.write_text(text, "utf-8")


def shown(expected: str, output: str) -> bool:
    """Whether one line of ``output`` holds ``expected``'s pieces (split at ``…``) in order,
    spaces collapsed."""
    pieces = [" ".join(piece.split()) for piece in expected.split("…")]
    for line in output.splitlines():
        line, at = " ".join(line.split()), 0
        for piece in pieces:
            at = line.find(piece, at)
            if at < 0:
                break
            at += len(piece)
        else:
            return True
    return False


class User:
    """A shell in one folder: ``export`` and ``unset`` change its environment (a key the
    page leaves as ``sk-...`` is a real-shaped one), ``pip install`` is what this
    checkout's venv did already, every other line runs."""

    def __init__(self, folder: Path, base_url: str) -> None:
        self.folder = folder
        self.env = child_env(
            OPENAI_BASE_URL=base_url, PATH=os.pathsep.join([BIN, os.environ["PATH"]])
        )
        for name in ("OPENAI_API_KEY", "CI", "COLUMNS"):
            self.env.pop(name, None)
        # The dev install's other pytest plugins, which a new user's install does not have.
        self.env["PYTEST_ADDOPTS"] = "-p no:hypothesispytest -p no:anyio -p no:cacheprovider"
        self.ran: list[str] = []

    def run(self, line: str) -> str:
        words = shlex.split(line, comments=True)
        if not words:
            return ""
        if words[0] == "export":
            name, _, value = words[1].partition("=")
            self.env[name] = OPENAI_KEY if value == "sk-..." else value
            return ""
        if words[0] == "unset":
            self.env.pop(words[1], None)
            return ""
        if words[:2] == ["pip", "install"]:
            assert "faultdeck[http]" in words, line
            return ""
        done = subprocess.run(
            words,
            cwd=self.folder,
            env=self.env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
        said = EXITS.search(line)
        expected = int(said[1]) if said else 0
        assert done.returncode == expected, f"{line}\n{done.stdout}\n{done.stderr}"
        self.ran.append(" ".join(words[:2]))
        return done.stdout


def test_the_quickstart_runs_as_written(tmp_path: Path) -> None:
    blocks = page_blocks()
    with Upstream() as upstream:
        user = User(tmp_path, f"{upstream.url}/v1")
        printed = ""
        for block in blocks:
            if block.lang == "sh":
                printed = "".join(user.run(line) for line in block.text.splitlines())
            elif block.lang == "text":
                for line in filter(None, block.text.splitlines()):
                    assert shown(line, printed), f"{line!r} is not in:\n{printed}"
            elif block.lang == "diff" and block.title:
                apply_diff(tmp_path / block.title, block.text)
            elif block.lang in FILE_KINDS and block.title:
                assert not (tmp_path / block.title).exists(), f"{block.title} written twice"
                (tmp_path / block.title).write_text(block.text, "utf-8")
            else:
                raise AssertionError(f"a {block.lang} block the test cannot follow")
        requests = upstream.requests
    commands = ("init", "record", "replay", "rehearse", "diff")
    assert {f"faultdeck {command}" for command in commands} <= set(user.ran)
    assert "pytest --block-network" in user.ran
    # The zero-code path: the agent the page records, replays and rehearses never imports faultdeck.
    assert not IMPORTS_FAULTDECK.search((tmp_path / "agent.py").read_text("utf-8"))
    # Two recordings of two calls each: replaying, testing and rehearsing sent nothing upstream.
    assert [(r["method"], r["path"]) for r in requests] == [("POST", "/v1/chat/completions")] * 4
    assert all(r["headers"]["authorization"] == f"Bearer {OPENAI_KEY}" for r in requests)
    for cassette in ("base", "new"):
        assert OPENAI_KEY not in (tmp_path / "runs" / f"{cassette}.jsonl").read_text("utf-8")
