"""`faultdeck rehearse` on an agent whose tools come over MCP: every MCP fault lands on each
tool call, reaches the program as MCP delivers it, and the invariants judge the run."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import faultdeck as fd
from tests.mcp.servers import ROOT
from tests.support import SRC

AGENT = """
import asyncio

import faultdeck as fd
import faultdeck.mcp
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError
from tests.mcp.servers import weather_server

BASE_DELAY = 0.5
ATTEMPTS = 3


async def main() -> None:
    deck = fd.Deck.from_env()
    with deck:
        server = weather_server() if deck.active_mode != "replay" else None
        async with faultdeck.mcp.Client(deck, server, read_timeout_seconds=5) as client:
            for city in ("Paris", "Oslo"):
                for attempt in range(10 if NAIVE else ATTEMPTS):
                    try:
                        result = await client.call_tool("get_weather", {"city": city})
                    except MCPError as exc:
                        if exc.code == -32000:
                            return  # the server is gone: keep what is done
                        await deck.clock.asleep(BASE_DELAY * 2**attempt)
                        continue
                    except (RuntimeError, ValidationError):
                        break  # a result it cannot read: skip this city
                    if not result.is_error:
                        break
                    await deck.clock.asleep(BASE_DELAY * 2**attempt)


asyncio.run(main())
"""

POLICY = fd.Policy(max_attempts=3, base_delay=0.5, max_delay=2, max_total_wait=10)
MCP_ROWS = ("tool error", "malformed result", "disconnect", "timeout")


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """The agent's program and its recording, made through ``faultdeck record`` once for
    the module (the tests only read them), with the program's imports on PYTHONPATH."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setenv("PYTHONPATH", os.pathsep.join((SRC, str(ROOT))))
        folder = tmp_path_factory.mktemp("weather")
        yield record(folder)


def record(folder: Path) -> tuple[Path, Path]:
    """The careful agent written into ``folder``, and its run recorded there."""
    program = folder / "agent.py"
    program.write_text("NAIVE = False\n" + AGENT, "utf-8")
    cassette = folder / "weather.jsonl"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "faultdeck",
            "record",
            str(cassette),
            "--",
            sys.executable,
            str(program),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return program, cassette


def test_each_mcp_fault_lands_on_each_tool_call_and_a_careful_loop_holds(
    recorded: tuple[Path, Path],
) -> None:
    program, cassette = recorded
    matrix = fd.rehearse_command([sys.executable, str(program)], cassette, policy=POLICY, jobs=2)
    assert matrix.positions == ((1, "tool get_weather"), (2, "tool get_weather"))
    cells = {(c.label, c.seq): c for c in matrix.cells}
    for label in MCP_ROWS:
        for seq in (1, 2):
            assert cells[label, seq].status == "held", cells[label, seq]
    assert matrix.findings == ()
    # What each fault looked like to the program, as the deck logged it.
    assert {c.status for c in matrix.cells} <= {"held", "killed"}


def test_a_loop_that_retries_tool_errors_past_its_attempts_breaks_the_budget(
    recorded: tuple[Path, Path],
) -> None:
    program, cassette = recorded
    naive = program.with_name("naive.py")
    naive.write_text("NAIVE = True\n" + AGENT, "utf-8")  # up to 10 attempts, not 3
    plans = {
        "tool error x5": fd.FaultPlan(
            [fd.faults.tool_error().on(kind="tool", name="get_weather").times(5)]
        )
    }
    matrix = fd.rehearse_command([sys.executable, str(naive)], cassette, plans, policy=POLICY)
    [cell] = [c for c in matrix.cells if c.label == "tool error x5"]
    assert cell.status == "broke", cell
    # Six calls for Paris where three attempts were allowed (and backoffs past max_delay).
    assert {v.invariant for v in cell.violations} == {"call_budget", "bounded_waiting"}
    # The careful loop, under the same plan, stops at its three attempts and holds.
    careful = fd.rehearse_command([sys.executable, str(program)], cassette, plans, policy=POLICY)
    assert [c.status for c in careful.cells if c.label == "tool error x5"] == ["held"]
