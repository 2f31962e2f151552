"""Clients that are not Python, run as children: the OpenAI Node SDK (``node_client.mjs``)
and curl. Each reads its answer as it comes; the one stream in each run is read chunk by
chunk, and its ``Gate`` opened only once the first chunk is in the client's hands.

A missing ``node``, ``curl`` or ``tests/node/node_modules`` fails the test that needs it
with what to install.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.support.children import child_env

from .upstream import Gate

READ_TIMEOUT = 30.0
"""How long a client may take to print its next piece (the upstream holds a stream at most
``GATE_TIMEOUT``)."""

HERE = Path(__file__).parent
NODE_SCRIPT = HERE / "node_client.mjs"
NODE_MODULES = HERE.parent / "node" / "node_modules"
# Framing and volatile headers, set per hop: never compared.
HOP = frozenset({"date", "server", "connection", "keep-alive", "transfer-encoding"})


def need(program: str) -> str:
    """The path of ``program``, or the test fails saying how to get it."""
    found = shutil.which(program)
    if found is None:
        hint = "Node 20 (and `make servers` for tests/node)" if program == "node" else program
        pytest.fail(f"{program} is not on PATH: these tests run it; install {hint}")
    if program == "node" and not (NODE_MODULES / "openai" / "package.json").exists():
        pytest.fail(f"the OpenAI Node SDK is not in {NODE_MODULES}: run `make servers`")
    return found


def comparable(headers: Sequence[Sequence[str]], *, drop: frozenset[str] = HOP) -> list[Any]:
    """Headers as sorted (lower-case name, value) pairs, without the ones set per hop."""
    return sorted((name.lower(), value) for name, value in headers if name.lower() not in drop)


def _read_until(proc: subprocess.Popen[bytes], done: Callable[[bytes], bool]) -> bytes:
    """What ``proc`` printed, read as it comes until ``done(output)`` or its end."""
    assert proc.stdout is not None
    out = b""
    fd = proc.stdout.fileno()
    while not done(out):
        ready, _, _ = select.select([fd], [], [], READ_TIMEOUT)
        if not ready:
            proc.kill()
            pytest.fail(f"no output from {proc.args!r} in {READ_TIMEOUT} s; so far {out!r}")
        piece = os.read(fd, 65536)
        if not piece:
            break
        out += piece
    return out


def _finish(proc: subprocess.Popen[bytes], out: bytes) -> tuple[bytes, str]:
    rest, err = proc.communicate(timeout=READ_TIMEOUT)
    return out + rest, err.decode("utf-8", "replace")


@dataclass
class NodeRun:
    """What the Node SDK printed, by step; ``chunks`` in the order they came."""

    code: int
    steps: dict[str, Any]
    chunks: list[Any]
    stderr: str
    rest_sent_first: bool | None = None
    """Whether the upstream had sent the stream's rest before its first chunk reached the
    client (``None``: there was no upstream to ask)."""


def run_node(base_url: str, key: str, gate: Gate | None) -> NodeRun:
    """Run ``node_client.mjs`` against an OpenAI base URL."""
    node = need("node")
    if gate is not None:
        gate.arm()
    proc = subprocess.Popen(
        [node, str(NODE_SCRIPT), base_url],
        env=child_env(OPENAI_API_KEY=key),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    first = _read_until(proc, lambda out: b'"step":"chunk"' in out)
    rest_sent_first = None if gate is None else gate.released
    if gate is not None:
        gate.open()
    out, err = _finish(proc, first)
    lines = [json.loads(line) for line in out.decode().splitlines() if line.strip()]
    for line in lines:  # JSON's lists as the (name, value) pairs they are
        if "headers" in line:
            line["headers"] = [(name, value) for name, value in line["headers"]]
    steps = {line["step"]: line for line in lines if line["step"] != "chunk"}
    chunks = [line["chunk"] for line in lines if line["step"] == "chunk"]
    return NodeRun(proc.returncode, steps, chunks, err, rest_sent_first)


@dataclass
class Fetched:
    """What curl got: the status, every header as sent, the body's bytes."""

    status: int
    headers: list[tuple[str, str]]
    body: bytes
    rest_sent_first: bool | None = field(default=None)

    def json(self) -> Any:
        return json.loads(self.body)


def _head(dump: str) -> tuple[int, list[tuple[str, str]]]:
    lines = [line for line in dump.splitlines() if line]
    status = int(lines[0].split()[1])
    pairs = [line.split(":", 1) for line in lines[1:]]
    return status, [(name.strip(), value.strip()) for name, value in pairs]


def curl(
    tmp: Path,
    url: str,
    *args: str,
    key: str,
    gate: Gate | None = None,
    first: bytes = b"",
) -> Fetched:
    """``curl URL ARGS`` with the API key, following no redirect. With ``first``, the body
    is read as it comes: once it holds ``first``, the gate (if any) is opened."""
    program = need("curl")
    dump = tmp / f"curl-{len(list(tmp.glob('curl-*.head')))}.head"
    command = [program, "-sS", "-N", "--noproxy", "*", "-D", str(dump), *args, url]
    command += ["-H", f"Authorization: Bearer {key}"]
    if gate is not None:
        gate.arm()
    proc = subprocess.Popen(
        command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    out = _read_until(proc, lambda seen: bool(first) and first in seen) if first else b""
    rest_sent_first = None if gate is None else gate.released
    if gate is not None:
        gate.open()
    body, err = _finish(proc, out)
    assert proc.returncode == 0, f"curl {url} exited {proc.returncode}: {err}"
    status, headers = _head(dump.read_text("latin-1"))
    return Fetched(status, headers, body, rest_sent_first)
