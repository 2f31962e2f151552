"""A Node program on the deck's virtual clock, and a crash fault that kills it.

``clock.cjs`` is what the proxy loads into a Node program on a virtual clock: its timers fire
at once, in the order of their virtual deadlines, its readings of time move with them, and
each wait is told in the file the proxy reads onto the deck's clock. A timer set while a
request of the program is in flight waits for real: the request's own timeout does not fire
early. Under ``rehearse``, the whole program: a crash fault kills it at the call.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from faultdeck._bootstrap.foreign import CLOCK_SCRIPT
from tests.cli.test_foreign import faultdeck, project, recorded  # noqa: F401 - fixtures
from tests.server.clients import need
from tests.support.children import child_env

TIMERS = """\
import { setTimeout as sleep } from "node:timers/promises";
const start = Date.now(), perf = performance.now();
const fired = [];
setTimeout(() => fired.push("3 s"), 3000);
setTimeout(() => fired.push("1 s"), 1000);
const never = setTimeout(() => fired.push("cleared"), 500);
clearTimeout(never);
setTimeout(() => fired.push("2 s"), 2000);
setTimeout(() => fired.push("at once"), 0);
await sleep(60000);
const forever = new Date();
console.log(JSON.stringify({
  fired, date: Date.now() - start, perf: performance.now() - perf,
  constructed: forever.getTime() - start, isDate: forever instanceof Date,
}));
"""

IN_FLIGHT = """\
import http from "node:http";
const server = http.createServer((q, r) => setTimeout(() => r.end("late"), 300));
server.listen(0, "127.0.0.1", async () => {
  const ticks = [];
  const tick = setTimeout(() => ticks.push("tick"), 100); // due while the request is out
  const controller = new AbortController();
  const abort = setTimeout(() => controller.abort(), 600000); // the SDKs' request timeout
  const url = `http://127.0.0.1:${server.address().port}/`;
  const answer = await fetch(url, { signal: controller.signal });
  clearTimeout(abort);
  console.log(JSON.stringify({ body: await answer.text(), ticks }));
  server.close();
});
"""


def run_node(tmp_path: Path, source: str) -> tuple[dict[str, object], list[str]]:
    """Run ``source`` under the clock: what it printed, and the waits it told (a wait is
    told only when time jumped over it: one that passed for real is not)."""
    script, told = tmp_path / "program.mjs", tmp_path / "slept"
    script.write_text(source, "utf-8")
    env = child_env(FAULTDECK_SLEPT=str(told), NODE_OPTIONS=f'--require "{CLOCK_SCRIPT}"')
    done = subprocess.run(
        [need("node"), str(script)], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout), told.read_text("utf-8").split()


def test_timers_fire_in_deadline_order_and_take_no_real_time(tmp_path: Path) -> None:
    printed, told = run_node(tmp_path, TIMERS)
    assert printed["fired"] == ["at once", "1 s", "2 s", "3 s"]
    for reading in ("date", "perf", "constructed"):
        assert printed[reading] == pytest.approx(60000, abs=50), reading
    assert printed["isDate"] is True
    assert told[0] == "node"  # the proxy learns the program keeps the deck's clock
    waits = [float(w) for w in told[1:]]
    # A minute of waits, each jumped over (told), none of it waited for real.
    assert waits == pytest.approx([1000, 1000, 1000, 57000], abs=50)


def test_a_timer_due_while_a_request_is_out_waits_for_real(tmp_path: Path) -> None:
    printed, told = run_node(tmp_path, IN_FLIGHT)
    # The request's 600 s timeout did not jump ahead of its answer; the 100 ms timer fell
    # due in real time while the request was out, so it is no wait of the program's.
    assert printed == {"body": "late", "ticks": ["tick"]}
    assert told == ["node"]


def test_a_crash_fault_kills_the_node_program_and_a_fresh_run_finishes(
    project: Path,  # noqa: F811 - the fixture
    recorded: tuple[Path, str],  # noqa: F811 - the fixture
) -> None:
    cassette, base_url = recorded
    plan = project / "crash.json"
    fault = {"fault": "crash", "on": {"kind": "model", "nth": 2}}
    plan.write_text(json.dumps({"faults": [fault]}), "utf-8")
    done = faultdeck(
        project,
        *("rehearse", str(cassette), "--faults", str(plan), "--format", "json"),
        *("--", "node", "agent.mjs"),
        base_url=base_url,
    )
    assert done.returncode == 0, done.stderr
    cells = {cell["label"]: cell for cell in json.loads(done.stdout)["cells"]}
    crash = cells["crash"]
    assert crash["status"] == "killed", crash
    assert crash["detail"] == "killed at seq 2; a fresh run then finished as the clean run did"


def test_a_node_program_under_replay_faults_waits_on_the_deck_clock(
    project: Path,  # noqa: F811 - the fixture
    recorded: tuple[Path, str],  # noqa: F811 - the fixture
) -> None:
    cassette, base_url = recorded
    plan = project / "quota.json"
    fault = {"fault": "quota", "retry_after": 45, "on": {"kind": "model", "nth": 1}}
    plan.write_text(json.dumps({"faults": [fault]}), "utf-8")
    done = faultdeck(
        project,
        *("replay", str(cassette), "--faults", str(plan), "--format", "json"),
        *("--", "node", "agent.mjs"),
        base_url=base_url,
    )
    assert done.returncode == 0, done.stderr
    # The SDK's 45 s sleep is on the deck's clock as the program's clock told it, having
    # jumped over it: a sleep waited for real is never told.
    report = json.loads(done.stdout[done.stdout.index("\n{") + 1 :])["reports"][0]
    assert (report["sleeps"], report["waited"]) == ([45.0], 45.0)
    assert [c["source"] for c in report["calls"]] == ["fault", "replay", "replay"]


@pytest.fixture(autouse=True)
def _no_inherited_node_options(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NODE_OPTIONS", raising=False)
    assert "FAULTDECK_SLEPT" not in os.environ
