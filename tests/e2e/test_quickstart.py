"""docs/quickstart.md, followed as a new user follows it: in an empty folder, each file the
page shows is written, each diff applied and each command run, in order, in a fresh venv
made by the page's own install line (this checkout in place of the faultdeck it names), with
``faultdeck fake`` as the model the page starts; each command must exit as the page says
(0, or the ``# exits N`` its line ends with), and each output block's lines must show in
what the commands before it printed. ``…`` in an output line stands for what a real model's
answers, keys and folders make differ."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import venv
from dataclasses import dataclass
from pathlib import Path

from tests.support import ROOT
from tests.support.sdk import OPENAI_KEY

PAGE = ROOT / "docs" / "quickstart.md"
FENCE = re.compile(r"^```(\w+)(?: title=\"([^\"]+)\")?\n(.*?)^```$", re.M | re.S)
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
    """A shell in one folder, on a venv of its own: ``export`` (of one name or several) and
    ``unset`` change its environment (a key the page leaves as ``sk-...`` is a real-shaped
    one), ``pip install`` installs into the venv (this checkout for faultdeck), a line
    ending in ``&`` starts in the background (its first line is what it printed), every
    other line runs."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.venv = folder.parent / "venv"
        venv.create(self.venv, with_pip=True)
        self.env = dict(os.environ)
        self.env["PATH"] = os.pathsep.join([str(self.venv / "bin"), os.environ["PATH"]])
        for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "CI", "COLUMNS", "PYTHONPATH"):
            self.env.pop(name, None)
        for name in [n for n in self.env if n.startswith(("FAULTDECK_", "PYTEST_"))]:
            self.env.pop(name)
        self.ran: list[str] = []
        self.background: list[subprocess.Popen[str]] = []

    def run(self, line: str) -> str:
        words = shlex.split(line, comments=True)
        if not words:
            return ""
        if words[0] == "export":
            for assignment in words[1:]:
                name, _, value = assignment.partition("=")
                self.env[name] = OPENAI_KEY if value == "sk-..." else value
            return ""
        if words[0] == "unset":
            self.env.pop(words[1], None)
            return ""
        if words[:2] == ["pip", "install"]:
            assert "faultdeck[http]" in words, line
            words = [f"{ROOT}[http]" if w == "faultdeck[http]" else w for w in words]
            words = [str(self.venv / "bin" / "pip"), "install", "--quiet", *words[2:]]
        if words[-1] == "&":
            return self.start(words[:-1])
        done = subprocess.run(
            words,
            cwd=self.folder,
            env=self.env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        said = EXITS.search(line)
        expected = int(said[1]) if said else 0
        assert done.returncode == expected, f"{line}\n{done.stdout}\n{done.stderr}"
        self.ran.append(" ".join(words[:2]))
        return done.stdout

    def start(self, words: list[str]) -> str:
        process = subprocess.Popen(
            words, cwd=self.folder, env=self.env, stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        self.background.append(process)
        assert process.stdout is not None
        first = process.stdout.readline()  # printed once it listens
        assert first, process.communicate(timeout=30)
        self.ran.append(" ".join(words[:2]))
        return first

    def stop(self) -> None:
        for process in self.background:
            process.terminate()
            process.communicate(timeout=30)
            assert process.returncode == 0


def test_the_quickstart_runs_as_written(tmp_path: Path) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    user = User(folder)
    try:
        printed = ""
        for block in page_blocks():
            if block.lang == "sh":
                printed = "".join(user.run(line) for line in block.text.splitlines())
            elif block.lang == "text":
                for line in filter(None, block.text.splitlines()):
                    assert shown(line, printed), f"{line!r} is not in:\n{printed}"
            elif block.lang == "diff" and block.title:
                apply_diff(folder / block.title, block.text)
            elif block.lang in FILE_KINDS and block.title:
                assert not (folder / block.title).exists(), f"{block.title} written twice"
                (folder / block.title).write_text(block.text, "utf-8")
            else:
                raise AssertionError(f"a {block.lang} block the test cannot follow")
    finally:
        user.stop()
    commands = ("init", "fake", "record", "replay", "rehearse", "diff")
    assert {f"faultdeck {command}" for command in commands} <= set(user.ran)
    assert "pytest --block-network" in user.ran
    # The zero-code path: the agent the page records, replays and rehearses never imports faultdeck.
    assert not IMPORTS_FAULTDECK.search((folder / "agent.py").read_text("utf-8"))
    # The faultdeck that ran is the one the page's install line put in the venv.
    where = subprocess.run(
        [str(user.venv / "bin" / "python"), "-c", "import faultdeck; print(faultdeck.__file__)"],
        capture_output=True, text=True, check=True, env=user.env,
    )  # fmt: skip
    assert str(user.venv) in where.stdout
