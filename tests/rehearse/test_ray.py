"""Rehearsals and replays on a Ray cluster give what the local executor gives.

One local Ray (2 CPUs, on 127.0.0.1, no dashboard) is started for the module in a child
Python and joined by ``address=``; each call connects to it and disconnects after.
"""

from __future__ import annotations

import json
import os
import select
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

import faultdeck as fd
from faultdeck import faults
from faultdeck._rehearse.command import rehearse_command
from faultdeck._rehearse.inprocess import rehearse
from faultdeck._rehearse.ray import INSTALL, run_replays
from faultdeck._rehearse.render import matrix_json
from faultdeck.cli._child import run_child
from tests.support import GOLDEN, ROOT, SRC
from tests.support.children import child_env, run
from tests.support.fake_upstream import Upstream
from tests.support.sdk import OPENAI_KEY

ENTRY = "examples.workshop.rehearsal"
WAIT = 120.0
"""The longest a Ray call here may take before the test calls it a hang."""
# Before ray is imported here too: the cluster and its drivers listen on loopback only, and
# without a token file (a private cluster needs none).
RAY_ENV = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_AUTH_MODE": "disabled"}
HEAD = """
import sys, ray
context = ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
print(context.address_info["address"], flush=True)
sys.stdin.read()
ray.shutdown()
"""


@pytest.fixture(scope="module")
def address() -> Iterator[str]:
    saved = {name: os.environ.get(name) for name in RAY_ENV}
    os.environ.update(RAY_ENV)
    env = child_env(**RAY_ENV)
    head = subprocess.Popen(
        [sys.executable, "-c", HEAD],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert head.stdout is not None
        assert head.stdin is not None
        ready, _, _ = select.select([head.stdout], [], [], WAIT)
        line = head.stdout.readline().strip() if ready else "(no address in time)"
        assert line.startswith("127.0.0.1:"), line
        yield line
        head.stdin.close()  # the head shuts its cluster down and exits
        head.wait(timeout=WAIT)
    finally:
        if head.poll() is None:
            head.kill()
            head.wait(timeout=30)
        for stream in (head.stdin, head.stdout):
            if stream is not None:
                stream.close()
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def bounded(call: Callable[[], Any]) -> Any:
    """``call()``, failing the test if it has not returned within ``WAIT`` seconds."""
    got: list[Any] = []
    worker = threading.Thread(target=lambda: got.append(call()), daemon=True)
    worker.start()
    worker.join(WAIT)
    assert not worker.is_alive(), f"no answer in {WAIT:.0f} s"
    assert got, "the call raised (see the thread's traceback above)"
    return got[0]


# -- in-process rehearsal ----------------------------------------------------------------------


@pytest.mark.parametrize(("name", "ok"), [("good", True), ("retry_on_quota", False)])
def test_the_workshop_matrix_on_ray_is_the_local_one(address: str, name: str, ok: bool) -> None:
    local = rehearse(f"{ENTRY}:{name}", GOLDEN)
    seen: list[tuple[int, int]] = []
    remote = bounded(
        lambda: rehearse(
            f"{ENTRY}:{name}",
            GOLDEN,
            executor="ray",
            address=address,
            progress=lambda *a: seen.append(a),
        )
    )
    assert matrix_json(remote) == matrix_json(local)
    assert remote == local
    assert remote.ok is local.ok is ok
    total = len(local.cells)
    assert [done for done, _ in seen] == list(range(1, total + 1))
    assert {t for _, t in seen} == {total}


DYING = """
import json
import os
from examples.workshop.rehearsal import POLICY, good


def dies_on_transient(deck, clock):
    outcomes = good(deck, clock)
    if any(call.fault == "transient" for call in deck.calls):
        os._exit(1)  # the worker's process is gone, mid-cell
    return outcomes
"""


def test_a_worker_that_dies_mid_cell_is_that_cells_error(address: str, tmp_path: Path) -> None:
    (tmp_path / "dying_loop.py").write_text(DYING, "utf-8")
    plans = {
        "quota": fd.FaultPlan([faults.quota(retry_after=1).at(seq=2)]),
        "transient": fd.FaultPlan([faults.transient().at(seq=2)]),
    }
    sys.path.insert(0, str(tmp_path))  # the driver's path goes to the workers
    try:
        matrix = bounded(
            lambda: rehearse(
                "dying_loop:dies_on_transient", GOLDEN, plans, executor="ray", address=address
            )
        )
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("dying_loop", None)
    cells = {c.label: c for c in matrix.cells}
    assert cells["transient"].status == "raised"
    assert "the Ray worker running it died" in cells["transient"].detail
    assert cells["quota"].status == "held", cells["quota"]
    assert cells["replay (x2)"].status == "held"
    assert not matrix.ok


# -- a program under -- CMD ----------------------------------------------------------------------

AGENT = f"""
import sys
sys.path.insert(0, {str(ROOT)!r})
import faultdeck as fd
from examples.openai_agent.agent import client_for, run

deck = fd.Deck.from_env()
with deck, client_for(deck) as client:
    print(run(client, "What's the weather in Paris?"))
"""


def test_an_http_cassette_rehearses_on_ray_as_it_does_here(address: str, tmp_path: Path) -> None:
    program = tmp_path / "agent.py"
    program.write_text(AGENT, "utf-8")
    command = [sys.executable, str(program)]
    cassette = tmp_path / "weather.jsonl"
    with Upstream() as upstream:
        env = child_env(OPENAI_BASE_URL=f"{upstream.url}/v1", OPENAI_API_KEY=OPENAI_KEY)
        done = run(
            [sys.executable, "-m", "faultdeck", "record", str(cassette), "--", *command], env=env
        )
    assert done.returncode == 0, done.stderr
    assert OPENAI_KEY not in cassette.read_text("utf-8")
    plans = {
        "quota": fd.FaultPlan([faults.quota(code="insufficient_quota").at(seq=1)]),
        "crash": fd.FaultPlan([faults.crash().at(seq=2)]),
    }
    local = rehearse_command(command, cassette, plans, jobs=2)
    remote = bounded(
        lambda: rehearse_command(command, cassette, plans, executor="ray", address=address)
    )
    assert matrix_json(remote) == matrix_json(local)
    assert remote == local
    statuses = {c.label: c.status for c in remote.cells}
    # The SDK retries a 429 at once: an early retry, a finding on either executor.
    assert statuses == {"replay (x2)": "held", "quota": "broke", "crash": "killed"}
    assert remote.ok is local.ok is False


PROGRAM = """
import os, sys
import faultdeck as fd

deck = fd.Deck.from_env()
with deck:
    for n in range(2):
        deck.call("tool", "fetch", {"n": n}, lambda: n)
run = os.environ.get("FAULTDECK_RUN")
print("run", run, "of", os.environ["FAULTDECK_CASSETTE"], file=sys.stderr)
"""


def test_replays_on_ray_are_the_local_runs(address: str, tmp_path: Path) -> None:
    program = tmp_path / "prog.py"
    program.write_text(PROGRAM, "utf-8")
    command = [sys.executable, str(program)]
    cassette = tmp_path / "run.jsonl"
    done = run([sys.executable, "-m", "faultdeck", "record", str(cassette), "--", *command])
    assert done.returncode == 0, done.stderr
    plan = tmp_path / "quota.json"
    plan.write_bytes(orjson.dumps(fd.FaultPlan([faults.quota().at(seq=2)]).to_json()))
    # A virtual clock, so that two runs of the same replay report the same times.
    envs = [{"FAULTDECK_RUN": str(i), "FAULTDECK_CLOCK": "virtual"} for i in range(3)]
    envs[2]["FAULTDECK_FAULTS"] = str(plan)
    saved = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = SRC  # for run_child's program, as the workers have it
    try:
        local = [run_child(command, str(cassette), "replay", extra=e, capture=True) for e in envs]
    finally:
        if saved is None:
            os.environ.pop("PYTHONPATH")
        else:
            os.environ["PYTHONPATH"] = saved
    remote = bounded(lambda: run_replays(command, cassette, envs, address=address))
    assert remote == local
    assert [code for code, _, _ in remote] == [0, 0, 1]
    assert f"run 1 of {cassette}" in remote[1][2]
    assert "QuotaExhausted" in remote[2][2]
    report = remote[0][1]
    assert report is not None
    assert report["cassette"] == str(cassette)


# -- without Ray ---------------------------------------------------------------------------------

WITHOUT_RAY = f"""
import sys
sys.modules["ray"] = None  # as if it were not installed
import faultdeck as fd
from faultdeck._rehearse.ray import run_replays

calls = [
    lambda: fd.rehearse("{ENTRY}:good", {str(GOLDEN)!r}, executor="ray"),
    lambda: run_replays([sys.executable, "-c", "pass"], {str(GOLDEN)!r}, [{{}}]),
]
for call in calls:
    try:
        call()
    except fd.ConfigError as exc:
        print(exc)
"""


def test_without_ray_the_error_says_how_to_install_it() -> None:
    done = run(
        [sys.executable, "-c", WITHOUT_RAY],
        cwd=ROOT,
        env=child_env(PYTHONPATH=f"{SRC}{os.pathsep}{ROOT}"),
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [INSTALL, INSTALL]


def test_an_unknown_executor_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(fd.ConfigError, match=r"^executor must be 'local' or 'ray', got 'dask'$"):
        rehearse(f"{ENTRY}:good", GOLDEN, executor="dask")  # type: ignore[arg-type]
    with pytest.raises(fd.ConfigError, match=r"^executor must be 'local' or 'ray', got 'dask'$"):
        rehearse_command([sys.executable, "-c", "pass"], GOLDEN, executor="dask")  # type: ignore[arg-type]


def test_an_address_where_no_cluster_answers_is_a_config_error() -> None:
    with socket.socket() as free:  # a port just freed: nothing listens there
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    with pytest.raises(fd.ConfigError, match=f"^no Ray cluster answers at 127.0.0.1:{port}; "):
        rehearse(f"{ENTRY}:good", GOLDEN, executor="ray", address=f"127.0.0.1:{port}")


def test_json_stdout_holds_only_the_json_when_a_ray_worker_dies() -> None:
    # A local Ray the command starts: the raylet says a worker died, on stderr, not stdout.
    done = run(
        [
            sys.executable, "-m", "faultdeck", "rehearse", str(GOLDEN),
            "--entrypoint", "tests.support.dying:dies_on_timeout",
            "--executor", "ray", "--jobs", "2", "--format", "json",
        ],
        env=child_env(**RAY_ENV),
        cwd=ROOT,
        timeout=WAIT,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    matrix = json.loads(done.stdout)  # nothing but the JSON
    died = [c for c in matrix["cells"] if c["label"] == "timeout"]
    assert died
    assert all(c["status"] == "raised" for c in died)
