"""MCP servers nobody here wrote, what they said on the wire, and a host that reads raw JSON.

The servers: ``mcp-server-time`` and ``mcp-server-git`` from PyPI, the reference
``@modelcontextprotocol/server-filesystem`` from npm (``make servers`` installs it under
``tests/node``). A missing one fails the test that needs it, saying how to install it.

Each runs behind ``python -m tests.mcp.real LOG -- COMMAND...``, a tee on its stdio: every
line the client writes and every line the server answers is appended to ``LOG`` as it
passes, so a test compares what a host got with what the server itself sent (``Wire``).
``Host`` is an MCP host with no SDK: it writes JSON-RPC lines to a command's stdin and
reads the answers from its stdout, so nothing between the wire and the test reshapes them.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
FILESYSTEM = ROOT / "tests/node/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"
VERSION = "2025-11-25"
"""The protocol version the host asks for: the one the SDK's handshake asks for too."""

Request = tuple[str, dict[str, Any]]


@dataclass(frozen=True)
class Real:
    """A real server: how to start it and what a session asks it."""

    name: str
    command: list[str]
    requests: list[Request]


def _tool(name: str, arguments: dict[str, Any]) -> Request:
    return "tools/call", {"name": name, "arguments": arguments}


def _python_server(module: str, package: str) -> None:
    if importlib.util.find_spec(module) is None:
        pytest.fail(f"{package} is not installed in {sys.executable}: pip install -e '.[dev]'")


def time_server() -> Real:
    """``mcp-server-time``: tools with ``outputSchema`` and ``annotations``, results with
    ``structuredContent``, and an ``isError`` result."""
    _python_server("mcp_server_time", "mcp-server-time")
    return Real(
        "time",
        [sys.executable, "-m", "mcp_server_time"],
        [
            ("tools/list", {}),
            _tool("get_current_time", {"timezone": "Asia/Tokyo"}),
            _tool(
                "convert_time",
                {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"},
            ),
            _tool("get_current_time", {"timezone": "Nowhere/Atlantis"}),
        ],
    )


def git_server(tmp_path: Path) -> Real:
    """``mcp-server-git`` on a repository made here with one commit."""
    _python_server("mcp_server_git", "mcp-server-git")
    if shutil.which("git") is None:
        pytest.fail("git is not on PATH: mcp-server-git needs it")
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "notes.txt").write_text("buy milk\n")
    git = ["git", "-c", "user.name=Ada", "-c", "user.email=ada@example.com", "-C", str(repo)]
    for args in (
        ["init", "-q", "-b", "main"],
        ["add", "notes.txt"],
        ["commit", "-q", "-m", "notes"],
    ):
        subprocess.run([*git, *args], check=True, capture_output=True, timeout=60)
    where = {"repo_path": str(repo)}
    return Real(
        "git",
        [sys.executable, "-m", "mcp_server_git", "--repository", str(repo)],
        [
            ("tools/list", {}),
            _tool("git_status", where),
            _tool("git_log", where),
            _tool("git_show", {**where, "revision": "HEAD"}),
            _tool("git_status", {"repo_path": str(tmp_path / "elsewhere")}),
        ],
    )


# A 1x1 PNG: the filesystem server answers it as an image content block.
_PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c63f8cfc0f00f0003860180"
    "5a347d6b0000000049454e44ae426082"
)


def filesystem_server(tmp_path: Path) -> Real:
    """``@modelcontextprotocol/server-filesystem`` on a folder made here: tools with
    ``title``, ``annotations``, ``execution`` and ``outputSchema``; text and image results;
    an ``isError`` result; a JSON-RPC error (it serves no resources)."""
    node = shutil.which("node")
    if node is None or not FILESYSTEM.exists():
        pytest.fail(f"no node, or no {FILESYSTEM.relative_to(ROOT)}: run `make servers`")
    folder = tmp_path / "files"
    folder.mkdir()
    (folder / "notes.txt").write_text("buy milk\n")
    (folder / "dot.png").write_bytes(_PNG)
    return Real(
        "filesystem",
        [node, str(FILESYSTEM), str(folder)],
        [
            ("tools/list", {}),
            _tool("read_text_file", {"path": str(folder / "notes.txt")}),
            _tool("list_directory", {"path": str(folder)}),
            _tool("read_media_file", {"path": str(folder / "dot.png")}),
            _tool("read_text_file", {"path": "/etc/hostname"}),
            ("resources/list", {}),
        ],
    )


def tapped(server: Real, log: Path) -> list[str]:
    """The command that runs ``server`` with its stdio teed into ``log``."""
    return [sys.executable, "-m", "tests.mcp.real", str(log), "--", *server.command]


@dataclass
class Wire:
    """What passed between a client and the server, read from a tee's log.

    Attributes:
        requests: the client's requests, in order: ``(id, method, params)``.
        answers: the server's answers by request id: each JSON-RPC message without
            ``jsonrpc`` and ``id`` (``{"result": ...}`` or ``{"error": ...}``).
    """

    requests: list[tuple[Any, str, dict[str, Any]]] = field(default_factory=list)
    answers: dict[Any, dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def read(cls, log: Path) -> Wire:
        wire = cls()
        for line in log.read_text().splitlines():
            way, _, text = line.partition(" ")
            message = json.loads(text)
            if way == ">" and "method" in message and "id" in message:
                wire.requests.append((message["id"], message["method"], message.get("params")))
            elif way == "<" and "id" in message and "method" not in message:
                wire.answers[message["id"]] = _answer(message)
        return wire

    def answer(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """The server's answer to the last request of ``method`` with ``params`` (the
        client's own ``_meta`` aside)."""
        for request_id, asked, sent in reversed(self.requests):
            if asked == method and (params is None or _own(sent) == _own(params)):
                return self.answers[request_id]
        raise AssertionError(f"the server was never asked {method} {params}: {self.requests}")


def _own(params: dict[str, Any] | None) -> dict[str, Any]:
    return {k: v for k, v in (params or {}).items() if k != "_meta"}


def _answer(message: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in message.items() if k not in ("jsonrpc", "id")}


class Host:
    """An MCP host over stdio with no SDK: raw JSON-RPC lines in, raw answers out.

    Args:
        command: the MCP server to run (here, a ``faultdeck mcp`` command).
    """

    def __init__(self, command: list[str]) -> None:
        self.process = subprocess.Popen(
            command,
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self._id = 0

    def ask(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Send one request; its answer (``{"result": ...}`` or ``{"error": ...}``)."""
        self._id += 1
        self._send({"jsonrpc": "2.0", "id": self._id, "method": method, "params": params})
        assert self.process.stdout is not None
        for line in self.process.stdout:
            message = json.loads(line)
            if message.get("id") == self._id and "method" not in message:
                return _answer(message)
        raise AssertionError(f"{method}: no answer; stderr: {self.close()[1]}")

    def open(self) -> dict[str, Any]:
        """The handshake: ``initialize``'s answer, then ``notifications/initialized``."""
        info = {"name": "raw-host", "version": "1.0"}
        opened = self.ask(
            "initialize", {"protocolVersion": VERSION, "capabilities": {}, "clientInfo": info}
        )
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return opened

    def close(self) -> tuple[int, str]:
        """Close the command's stdin (the host goes away); its exit code and stderr."""
        assert self.process.stdin is not None
        assert self.process.stderr is not None
        if not self.process.stdin.closed:
            self.process.stdin.close()
        code = self.process.wait(timeout=60)
        stderr = self.process.stderr.read()
        self.process.stderr.close()
        if self.process.stdout is not None:
            self.process.stdout.close()
        return code, stderr

    def _send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message) + "\n")
        self.process.stdin.flush()


def _copy(source: IO[bytes], sink: IO[bytes], log: IO[bytes], way: bytes, lock: Any) -> None:
    for line in iter(source.readline, b""):
        with lock:
            log.write(way + b" " + line if line.endswith(b"\n") else way + b" " + line + b"\n")
            log.flush()
        sink.write(line)
        sink.flush()
    sink.close()


def tee(log_path: str, command: list[str]) -> int:
    """Run ``command`` with this process's stdio, each line also logged (``>`` to the
    server, ``<`` from it); its exit code."""
    child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert child.stdin is not None
    assert child.stdout is not None
    lock = threading.Lock()
    with open(log_path, "ab") as log:
        into = threading.Thread(
            target=_copy, args=(sys.stdin.buffer, child.stdin, log, b">", lock), daemon=True
        )
        into.start()
        _copy(child.stdout, sys.stdout.buffer, log, b"<", lock)
        return child.wait()


if __name__ == "__main__":
    sys.exit(tee(sys.argv[1], sys.argv[sys.argv.index("--") + 1 :]))
