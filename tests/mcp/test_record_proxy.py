"""``faultdeck mcp record``: a proxy that records an MCP session while a host uses it.

The real ``faultdeck`` command runs as a subprocess in front of the weather server (a stdio
subprocess of its own, or streamable HTTP on 127.0.0.1), driven by the SDK's client; then
``faultdeck mcp serve`` answers the same from the cassette with the server gone.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp
import pytest
from mcp import StdioServerParameters

from faultdeck.mcp._client import as_json
from tests.mcp.servers import ROOT, http_server
from tests.mcp.test_serve import http_serve, refused, serve_params
from tests.support.calls import rules

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def record_params(cassette: Path, *args: str) -> StdioServerParameters:
    """``faultdeck mcp record CASSETTE ARGS...`` as a stdio server the SDK client starts."""
    command = ["-m", "faultdeck", "mcp", "record", str(cassette), *args]
    return StdioServerParameters(command=sys.executable, args=command, cwd=str(ROOT))


async def use(client: mcp.Client) -> list[dict[str, Any]]:
    """A host's session: what each request answered, as MCP JSON without ``_meta``."""
    answers = [
        await client.list_tools(),
        await client.call_tool("get_weather", {"city": "Oslo"}),
        await client.call_tool("search_notes", {"query": "rain"}),
        await client.read_resource("notes://today"),
        await client.get_prompt("greet", {"name": "Ann"}),
    ]
    return [{k: v for k, v in as_json(a).items() if k != "_meta"} for a in answers]


def ended(cassette: Path) -> dict[str, Any]:
    """The cassette's end line."""
    last = json.loads(cassette.read_bytes().splitlines()[-1])
    assert "end" in last, last
    end: dict[str, Any] = last["end"]
    return end


async def test_record_over_stdio_then_serve_without_the_server(tmp_path: Path) -> None:
    cassette = tmp_path / "tools.jsonl"
    upstream = ["--", sys.executable, "-m", "tests.mcp.servers"]
    async with mcp.Client(record_params(cassette, *upstream), read_timeout_seconds=60) as client:
        recorded = await use(client)
    # The host closed the proxy's stdin: the recording ended cleanly.
    assert ended(cassette) == {"calls": 5, "status": "ok", "rules": rules()}
    assert recorded[1]["structuredContent"] == {"result": "sunny in Oslo"}
    assert recorded[3]["contents"][0]["text"] == "buy milk"

    async with mcp.Client(serve_params(cassette), read_timeout_seconds=60) as client:
        assert await use(client) == recorded


async def test_record_from_a_url_over_http_stops_on_sigterm(tmp_path: Path) -> None:
    cassette = tmp_path / "tools.jsonl"
    with http_server() as url:
        with http_serve("record", str(cassette), "--upstream", url) as (proxy, process):
            async with mcp.Client(proxy, read_timeout_seconds=60) as client:
                recorded = await use(client)
            process.send_signal(signal.SIGTERM)
            assert process.wait(timeout=60) == 0
    assert ended(cassette) == {"calls": 5, "status": "ok", "rules": rules()}
    assert recorded[2]["structuredContent"]["hits"] == ["rain: bring an umbrella"]

    # The upstream is gone; the cassette answers alone.
    async with mcp.Client(serve_params(cassette), read_timeout_seconds=60) as client:
        assert await use(client) == recorded


async def test_a_failed_recording_leaves_the_good_cassette(tmp_path: Path) -> None:
    cassette = tmp_path / "tools.jsonl"
    upstream = ["--", sys.executable, "-m", "tests.mcp.servers"]
    async with mcp.Client(record_params(cassette, *upstream), read_timeout_seconds=60) as client:
        await client.list_tools()
    good = cassette.read_bytes()
    # A server that dies at once: the proxy cannot start the session.
    dies = ["--", sys.executable, "-c", "raise SystemExit(3)"]
    done = await anyio.to_thread.run_sync(
        lambda: subprocess.run(
            [sys.executable, "-m", "faultdeck", "mcp", "record", str(cassette), *dies],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith("faultdeck: error: cannot reach")
    assert cassette.read_bytes() == good


def test_record_bad_input(tmp_path: Path) -> None:
    cassette = tmp_path / "tools.jsonl"
    cassette.write_bytes(b'{"faultdeck":1,"match":"keyed"}\n{"end":{"calls":0,"status":"ok"}}\n')
    before = cassette.read_bytes()
    plan = tmp_path / "plan.json"
    plan.write_text('{"faults": [{"fault": "timeout", "at": "soon"}]}')
    record = ["record", str(cassette)]
    refused(
        [
            ([*record, "--upstream", "http://127.0.0.1:9/mcp", "--", "python"], "not both"),
            (record, "not neither"),
            ([*record, "--upstream", "127.0.0.1:9/mcp"], "http(s)://"),
            ([*record, "--transport", "http", "--host", "0.0.0.0", "--", "python"], "--token"),
            ([*record, "--transport", "carrier-pigeon", "--", "python"], "--transport"),
            ([*record, "--faults", str(plan), "--", "python"], "plan.json"),
            ([*record, "--", "no-such-server-command"], "no such command"),
        ]
    )
    assert cassette.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plan.json", "tools.jsonl"]


def test_mcp_needs_the_extra(tmp_path: Path) -> None:
    # A Python whose mcp cannot be imported: a module named mcp that fails, first on the path.
    (tmp_path / "mcp.py").write_text("raise ImportError('no mcp here')\n")
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; sys.path.insert(0, sys.argv[1]); "
            "from faultdeck.cli import main; sys.exit(main(['mcp', 'serve', 'x.jsonl']))",
            str(tmp_path),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == (
        "faultdeck: error: faultdeck mcp needs mcp: pip install 'faultdeck[mcp]'"
    )
