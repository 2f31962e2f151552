"""``faultdeck drift`` covers a cassette's branches, as a user runs it.

The agent falls back to a cache service on 127.0.0.1 when its search times out: a path the
golden run never takes. ``rehearse --branches record`` keeps where the timeout leads as
``base.branches/timeout.jsonl``; then the cache service answers otherwise (the world moved
under the branch only), and ``drift`` says so of the branch, not of the golden cassette.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

import faultdeck as fd
from tests.cli.test_drift_cli import leftovers
from tests.support.children import child_env, run

AGENT = """
import os, sys
from pathlib import Path
import httpx
import faultdeck as fd

if os.environ.get("NO_FORK") and os.environ.get("FAULTDECK_MODE") == "fork":
    os._exit(5)  # a branch's run that dies before its deck writes its report

deck = fd.Deck.from_env()

def page(to):
    Path(os.environ["MARKER"]).write_text(to)  # the side effect: it leaves a mark
    return {"paged": to}

pager = deck.tool(name="page", side_effect=True, dry_run=lambda to: {"paged": to})(page)
with deck:
    deck.call("model", "chat", {"q": "plan"}, lambda: os.environ.get("PLAN", "a plan"))
    try:
        deck.call("tool", "search", {"q": "docs"}, lambda: ["doc"], remote=True)
    except fd.TransientError:  # the fallback, taken only under a fault
        httpx.get(os.environ["CACHE_URL"], timeout=10).raise_for_status()
        pager(to="ops")
        if os.environ.get("FAIL_FALLBACK"):
            sys.exit(3)
    deck.call("model", "chat", {"q": "answer"}, lambda: "an answer")
"""

TIMEOUT = {"faults": [{"fault": "timeout", "on": {"kind": "tool", "name": "search"}}]}
BRANCH = Path("base.branches") / "timeout.jsonl"


class Cache(ThreadingHTTPServer):
    """The cache service: answers ``answer`` as JSON to any GET."""

    answer: dict[str, Any]


class _Answers(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        assert isinstance(self.server, Cache)
        body = json.dumps(self.server.answer).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""


@pytest.fixture(scope="module")
def cache() -> Iterator[Cache]:
    server = Cache(("127.0.0.1", 0), _Answers)
    server.answer = {"doc": "v1"}
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def faultdeck(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``faultdeck ARGS -- python agent.py`` in ``cwd``."""
    program = ["--", sys.executable, str(cwd / "agent.py")]
    return run(
        [sys.executable, "-m", "faultdeck", *args, *program],
        cwd=cwd,
        env=program_env(cwd, **(env or {})),
        timeout=120,
    )


def program_env(cwd: Path, **extra: str) -> dict[str, str]:
    """The agent's environment: the cache service here, traffic on 127.0.0.1 only."""
    return child_env(
        COLUMNS="200",
        CACHE_URL=(cwd / "cache-url").read_text(),
        MARKER=str(cwd / "paged.txt"),
        NO_PROXY="127.0.0.1,localhost",
        **extra,
    )


@pytest.fixture(scope="module")
def recorded_once(tmp_path_factory: pytest.TempPathFactory, cache: Cache) -> Path:
    """A golden cassette and its timeout branch, recorded once for the module."""
    folder = tmp_path_factory.mktemp("recorded")
    (folder / "agent.py").write_text(AGENT, "utf-8")
    (folder / "timeout.json").write_text(json.dumps(TIMEOUT), "utf-8")
    host, port = cache.server_address[:2]
    (folder / "cache-url").write_text(f"http://{host!s}:{port}/cache")
    cache.answer = {"doc": "v1"}
    done = faultdeck("record", "base.jsonl", cwd=folder)
    assert done.returncode == 0, done.stderr
    rehearse = ["rehearse", "base.jsonl", "--faults", "timeout.json", "--branches", "record"]
    done = faultdeck(*rehearse, "--format", "json", cwd=folder)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (folder / BRANCH).is_file()
    return folder


@pytest.fixture
def here(recorded_once: Path, tmp_path: Path, cache: Cache) -> Path:
    """A copy of the recordings for one test, the cache service answering as recorded."""
    folder = tmp_path / "project"
    shutil.copytree(recorded_once, folder)
    (folder / "paged.txt").unlink(missing_ok=True)  # rehearse paged for real, as record does
    cache.answer = {"doc": "v1"}
    return folder


def http_answers(path: Path) -> list[Any]:
    return [e.value["body"] for e in fd.load(path).entries if e.kind == "http"]


def test_a_branch_whose_live_part_is_unchanged_is_no_drift(here: Path) -> None:
    before = (here / BRANCH).read_bytes(), (here / "base.jsonl").read_bytes()
    done = faultdeck("drift", "base.jsonl", cwd=here)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no drift: base.jsonl still matches a live run" in done.stdout
    assert f"branch {BRANCH} (cell timeout, live from seq 3): no drift" in done.stdout
    assert ((here / BRANCH).read_bytes(), (here / "base.jsonl").read_bytes()) == before
    assert leftovers(here) == []


def test_the_world_moved_under_a_branch_only(here: Path, cache: Cache) -> None:
    before = (here / BRANCH).read_bytes(), (here / "base.jsonl").read_bytes()
    cache.answer = {"doc": "v2"}
    done = faultdeck("drift", "base.jsonl", cwd=here)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "no drift: base.jsonl still matches a live run" in done.stdout  # the golden
    section = done.stdout[done.stdout.index(f"branch {BRANCH}") :]
    assert section.startswith(f"branch {BRANCH} (cell timeout, live from seq 3): drifted\n")
    assert "  answers changed (the world moved): 1\n" in section
    assert "seq 3: http GET" in section
    assert 'out.body.doc "v1" → "v2"' in section
    assert "  calls changed (the code moved): 0\n" in section
    assert f"drifted: {BRANCH} is stale; review the changes above, then: " in section
    # Never written without --update.
    assert ((here / BRANCH).read_bytes(), (here / "base.jsonl").read_bytes()) == before
    assert leftovers(here) == []

    as_json = faultdeck("drift", "base.jsonl", "--format", "json", cwd=here)
    assert as_json.returncode == 1, as_json.stderr
    data = json.loads(as_json.stdout)
    assert data["drifted"] is False
    (branch,) = data["branches"]
    assert (branch["path"], branch["cell"], branch["seq"]) == (str(BRANCH), "timeout", None)
    assert branch["left_at"] == 3
    assert branch["drifted"] is True
    assert branch["error"] is None
    changed = [(row["kind"], row["changes"]) for row in branch["answers_changed"]]
    assert changed == [("http", [{"path": "out.body.doc", "recorded": "v1", "live": "v2"}])]
    assert branch["calls_changed"] == []
    assert branch["outcome"]["changed"] is False


def test_update_replaces_a_drifted_branch_and_keeps_it_fresh(here: Path, cache: Cache) -> None:
    golden = (here / "base.jsonl").read_bytes()
    cache.answer = {"doc": "v2"}
    done = faultdeck("drift", "base.jsonl", "--update", cwd=here)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "nothing to update: base.jsonl was left as it was" in done.stderr
    assert f"updated {BRANCH} with the live recording" in done.stderr
    assert http_answers(here / BRANCH) == [{"doc": "v2"}]
    assert (here / "base.jsonl").read_bytes() == golden
    assert leftovers(here) == []
    again = faultdeck("drift", "base.jsonl", cwd=here)  # the new branch is of this cassette
    assert again.returncode == 0, again.stdout + again.stderr
    assert "warning" not in again.stderr
    assert f"branch {BRANCH} (cell timeout, live from seq 3): no drift" in again.stdout


def test_a_branch_run_that_fails_is_a_finding_and_never_updates(here: Path, cache: Cache) -> None:
    before = (here / BRANCH).read_bytes()
    cache.answer = {"doc": "v2"}
    done = faultdeck("drift", "base.jsonl", "--update", cwd=here, env={"FAIL_FALLBACK": "1"})
    assert done.returncode == 1, done.stdout + done.stderr
    assert "outcome changed: the recorded run ended ok; the live run exited 3" in done.stdout
    assert f"not updated: the live run failed, so {BRANCH} was left as it was" in done.stderr
    assert f"drifted: {BRANCH} is stale, and its live run failed" in done.stdout
    assert (here / BRANCH).read_bytes() == before
    assert leftovers(here) == []


def test_a_branch_run_that_records_nothing_is_a_finding_and_never_updates(here: Path) -> None:
    before = (here / BRANCH).read_bytes()
    died = faultdeck("drift", "base.jsonl", "--update", cwd=here, env={"NO_FORK": "1"})
    assert died.returncode == 1, died.stdout + died.stderr
    program = f"{sys.executable} {here / 'agent.py'}"
    assert (
        f"branch {BRANCH} (cell timeout, live from seq 3): not compared, {program} exited with 5"
    ) in died.stdout
    assert f"no live recording of the branch; {BRANCH} was left as it was" in died.stdout
    as_json = faultdeck("drift", "base.jsonl", "--format", "json", cwd=here, env={"NO_FORK": "1"})
    assert as_json.returncode == 1
    (branch,) = json.loads(as_json.stdout)["branches"]
    assert branch["drifted"] is None
    assert "exited with 5" in branch["error"]
    assert (here / BRANCH).read_bytes() == before
    assert leftovers(here) == []


def test_replacing_the_cassette_leaves_its_branches_stale_and_not_run(
    here: Path, cache: Cache
) -> None:
    before = (here / BRANCH).read_bytes()
    cache.answer = {"doc": "v2"}  # the branch would drift, were it run
    done = faultdeck("drift", "base.jsonl", "--update", cwd=here, env={"PLAN": "b"})
    assert done.returncode == 1, done.stdout + done.stderr
    assert "updated base.jsonl with the live recording" in done.stderr
    stale = [line for line in done.stderr.splitlines() if "now stale" in line]
    assert stale == [
        "faultdeck: warning: base.jsonl was replaced, so its 1 branch in base.branches is "
        "now stale (not run); record it again with: faultdeck rehearse base.jsonl "
        f"--branches record -- {sys.executable} {here / 'agent.py'}"
    ]
    assert "branch base.branches" not in done.stdout
    assert (here / BRANCH).read_bytes() == before

    # From then on the stale branch is warned of in one line, and not run.
    again = faultdeck("drift", "base.jsonl", "--format", "json", cwd=here, env={"PLAN": "b"})
    assert again.returncode == 0, again.stdout + again.stderr
    assert again.stderr.splitlines() == [
        f"faultdeck: warning: {BRANCH}: a branch of an earlier base.jsonl (it changed since): "
        "not used; record it again with --branches record"
    ]
    assert json.loads(again.stdout)["branches"] == []
    assert (here / BRANCH).read_bytes() == before


def test_a_stray_file_in_the_branch_folder_is_one_line_and_runs_nothing(here: Path) -> None:
    shutil.copy(here / "base.jsonl", here / "base.branches" / "stray.jsonl")
    done = faultdeck("drift", "base.jsonl", cwd=here)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "faultdeck: error: base.branches/stray.jsonl: not a branch of base.jsonl (its header "
        "names no parent.branch); the folder base.branches holds only the branches rehearse, "
        "redteam and tests record: move it out"
    ]
    assert done.stdout == ""
    assert leftovers(here) == []


def test_a_branch_runs_its_side_effects_dry_unless_allowed(here: Path) -> None:
    done = faultdeck("drift", "base.jsonl", cwd=here)
    assert done.returncode == 0, done.stdout + done.stderr
    assert not (here / "paged.txt").exists()  # the stand-in ran, not the tool
    done = faultdeck("drift", "base.jsonl", "--allow-side-effects", cwd=here)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (here / "paged.txt").read_text() == "ops"
