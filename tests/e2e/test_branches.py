"""A real agent rehearsed off its recorded path: branches end to end.

``agents/reads_errors_back.py`` is an openai-SDK tool loop that reads its tool's errors back
to the model (the local fake model answers from whatever the tool said), as a user writes
one. A fault at the tool's request leads it to a model request the recording never made:
those cells are ``~ off the recorded path``. ``rehearse --branches record`` with the fakes
up records where each one leads; with the fakes stopped, every cell is then judged offline,
on the golden cassette or on its branch, and none is left off the path.
"""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path

import faultdeck as fd
from tests.e2e.test_unmodified_agents import AGENTS, environment, faultdeck
from tests.support.fake_upstream import Upstream
from tests.support.httpbin import httpbin

COMMAND = ["--", sys.executable, str(AGENTS / "reads_errors_back.py")]


def cells(ran: object) -> dict[tuple[str, int | None], dict[str, object]]:
    matrix = json.loads(ran.stdout)  # type: ignore[attr-defined]
    return {(c["label"], c["seq"]): c for c in matrix["cells"]}


def test_a_loop_that_reads_its_errors_back_is_judged_on_its_branches(tmp_path: Path) -> None:
    with contextlib.ExitStack() as up:
        llm = up.enter_context(Upstream())
        weather = up.enter_context(httpbin())
        env = environment(llm.url, weather)
        recorded = faultdeck("record", "base.jsonl", *COMMAND, cwd=tmp_path, env=env)
        assert recorded.code == 0, recorded.said()
        branching = faultdeck(
            "rehearse", "base.jsonl", "--branches", "record", "--format", "json", *COMMAND,
            cwd=tmp_path, env=env,
        )  # fmt: skip
    assert branching.code in (0, 1), branching.said()
    # The cells that left the path: each recorded where it led, and was judged there.
    off_path = {
        (branch["cell"], branch["seq"])
        for branch in json.loads(
            faultdeck("show", "base.jsonl", "--format", "json", cwd=tmp_path, env=env).stdout
        )["branches"]
    }
    assert {label for label, _ in off_path} >= {"timeout", "transient 503"}  # the weather call
    assert all(cells(branching)[place]["status"] == "held" for place in off_path)
    timeout = next(p for p in (tmp_path / "base.branches").glob("timeout@*.jsonl"))
    recording = fd.load(timeout)
    parent = recording.header.extra["parent"]
    assert parent["branch"]["cell"] == "timeout"
    # Where the error led: the model asked again with the tool's error in the request.
    last_ask = recording.entries[-1].args["body"]["messages"][-1]
    assert last_ask["role"] == "tool"
    assert last_ask["content"].startswith("error: the weather service failed")

    # The fakes are stopped: every cell replays, on the golden cassette or on its branch.
    after = faultdeck("rehearse", "base.jsonl", "--format", "json", *COMMAND, cwd=tmp_path, env=env)
    judged = cells(after)
    assert [place for place, c in judged.items() if c["status"] == "miss"] == [], after.said()
    for place in off_path:
        assert judged[place]["status"] == "held", (place, judged[place])
    assert judged == cells(branching)
    assert after.waits == []
