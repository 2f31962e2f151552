"""Setting faultdeck.mcp up wrong says what to do, in one line."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

import faultdeck as fd
import faultdeck.mcp
from tests.support.children import child_env


def test_without_the_sdk_the_import_names_the_extra() -> None:
    code = "import sys; sys.modules['mcp'] = None; import faultdeck.mcp"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=child_env(), check=False
    )
    assert done.returncode == 1
    assert "ImportError: faultdeck.mcp needs the mcp SDK" in done.stderr
    assert "pip install 'faultdeck[mcp]'" in done.stderr


@pytest.mark.parametrize("mode", ["record", "append"])
def test_a_mode_that_reaches_the_server_needs_one(tmp_path: Path, mode: fd.config.Mode) -> None:
    path = tmp_path / "tools.jsonl"
    if mode == "append":
        with fd.Deck(path, mode="record"):
            pass

    async def enter() -> None:
        with fd.Deck(path, mode=mode) as deck:
            async with faultdeck.mcp.Client(deck):
                pass

    with pytest.raises(fd.ConfigError, match=rf"mode '{mode}' reaches the MCP server"):
        asyncio.run(enter())
    if mode == "append":
        assert fd.load(path).entries == (), "the cassette is as it was"
