"""Unmodified agent programs under the real command line: none of them imports faultdeck.

The programs in ``agents/`` are written as a user writes them: each reads its key and base URL
from the environment as its SDK does by default, and keeps the SDK's own retries. An openai
SDK tool loop, an anthropic SDK loop, an openai loop whose tool asks a weather service with
``requests``, the same on the async client with ``aiohttp``, a litellm loop, a LangGraph
agent on langchain-openai, and the openai tool loop in Node on the ``openai`` npm package
(its deck served through the proxy, its timers on the deck's clock). Each one is

1. recorded, ``faultdeck record run.jsonl -- python agent.py``, against the local fakes on
   127.0.0.1 (the fake LLM upstream, and httpbin as the weather service);
2. replayed with the fakes stopped, ``faultdeck replay``: the same output, nothing live;
3. rehearsed, ``faultdeck rehearse run.jsonl --faults PLAN -- python agent.py``, under a quota
   with Retry-After 30 s at its first model call, a timeout and a 503 (at that call too, or
   at the tool's request in the two programs that have one), and judged; then replayed under
   the same plan (``faultdeck replay --faults PLAN --format json``), whose report holds the
   waits the program made on the virtual clock.

What the libraries do, read in their source and seen here. The openai and anthropic SDKs
(and litellm and langchain-openai, which make openai clients with the default two retries)
sleep a 429's Retry-After (``retry-after-ms``) and send again; after a timeout or a 5xx they
sleep a backoff of 0.5 s less up to a quarter (jitter) and send again. requests and aiohttp
do not retry: a timeout or a 503 at the tool's request ends the program with the library's
own error, and the rehearsal says so.
"""

from __future__ import annotations

import base64
import contextlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import faultdeck as fd
from tests.server.clients import NODE_MODULES, need
from tests.support.children import child_env
from tests.support.fake_upstream import Upstream
from tests.support.httpbin import httpbin

AGENTS = Path(__file__).parent / "agents"
EXE = str(Path(sys.executable).parent / "faultdeck")
OPENAI_KEY = "sk-proj-" + "UnmodifiedAgents0123456789abcdefghij"
ANTHROPIC_KEY = "sk-ant-api03-" + "UnmodifiedAgents0123456789abcdefghij"
ANSWER = "It is sunny in Paris.\n"
# httpbin's /base64/ answers what its path decodes to: the weather service says "sunny".
WEATHER_PATH = "/base64/" + base64.urlsafe_b64encode(b"sunny").decode()

RETRY_AFTER = 30.0
FIRST_BACKOFF = (0.375, 0.5)
"""The openai and anthropic SDKs' first backoff: 0.5 s times ``1 - 0.25 * random()``."""
PROBE = Path(__file__).parent / "probe"
"""A ``sitecustomize`` that writes down each real wait of a second or more a program starts."""
DEAD = "http://127.0.0.1:9"
"""A port nothing listens on: the fakes' stand-in where a program has none."""

CHAT = ("model", "openai.chat.completions")
MESSAGES = ("model", "anthropic.messages")
FETCH = ("http", f"GET {WEATHER_PATH}")


@dataclass(frozen=True)
class Program:
    """An agent program in ``agents/``, the modules it needs (and the distribution each comes
    from) and the calls it makes."""

    name: str
    needs: tuple[tuple[str, str], ...]
    calls: tuple[tuple[str, str], ...]
    weather: bool = False
    node: bool = False

    @property
    def command(self) -> list[str]:
        if self.node:  # copied into the recording's folder, beside the npm packages
            return ["node", "agent.mjs"]
        return [sys.executable, str(AGENTS / f"{self.name}.py")]


@dataclass(frozen=True)
class Rehearsal:
    """A one-fault plan, where it lands among the program's calls, and what the program does
    under it: retries after ``waits`` (``retry_after`` or ``backoff``), or dies of ``raises``."""

    label: str
    fault: dict[str, Any]
    at: int
    waits: str | None = None
    raises: str | None = None

    def plan(self, folder: Path) -> Path:
        path = folder / f"{self.label}.json"
        path.write_text(json.dumps({"faults": [self.fault]}), "utf-8")
        return path


def _first(kind: str) -> dict[str, Any]:
    return {"on": {"kind": kind, "nth": 1}}


QUOTA = Rehearsal(
    "quota", {"fault": "quota", "retry_after": RETRY_AFTER, **_first("model")}, 0, "retry_after"
)
TIMEOUT = Rehearsal("timeout", {"fault": "timeout", **_first("model")}, 0, "backoff")
UNAVAILABLE = Rehearsal(
    "unavailable", {"fault": "transient", "status": 503, **_first("model")}, 0, "backoff"
)


def _tool_faults(timeout: str, unavailable: str) -> tuple[Rehearsal, ...]:
    """The quota at the model; the timeout and the 503 at the tool's request (the call after
    the first model turn), which the tool's library does not retry."""
    return (
        QUOTA,
        Rehearsal("timeout", {"fault": "timeout", **_first("http")}, 1, raises=timeout),
        Rehearsal(
            "unavailable",
            {"fault": "transient", "status": 503, **_first("http")},
            1,
            raises=unavailable,
        ),
    )


OPENAI = ("openai", "openai")
PROGRAMS: dict[Program, tuple[Rehearsal, ...]] = {
    Program("openai_tool_loop", (OPENAI,), (CHAT, CHAT)): (QUOTA, TIMEOUT, UNAVAILABLE),
    Program("anthropic_loop", (("anthropic", "anthropic"),), (MESSAGES, MESSAGES)): (
        QUOTA,
        TIMEOUT,
        UNAVAILABLE,
    ),
    Program(
        "requests_tool", (OPENAI, ("requests", "requests")), (CHAT, FETCH, CHAT), weather=True
    ): _tool_faults(
        "requests.exceptions.ReadTimeout: The read operation timed out",
        "requests.exceptions.HTTPError: 503 Server Error: Service Unavailable for url: ",
    ),
    Program(
        "aiohttp_tool", (OPENAI, ("aiohttp", "aiohttp")), (CHAT, FETCH, CHAT), weather=True
    ): _tool_faults(
        "aiohttp.client_exceptions.SocketTimeoutError: Timeout on reading data from socket",
        "aiohttp.client_exceptions.ClientResponseError: 503, message='Service Unavailable'",
    ),
    Program("litellm_call", (("litellm", "litellm"),), (CHAT, CHAT)): (
        QUOTA,
        TIMEOUT,
        UNAVAILABLE,
    ),
    Program(
        "langgraph_agent",
        (("langgraph", "langgraph"), ("langchain_openai", "langchain-openai")),
        (CHAT, CHAT),
    ): (QUOTA, TIMEOUT, UNAVAILABLE),
    Program("node_openai", (), (CHAT, CHAT), node=True): (QUOTA, TIMEOUT, UNAVAILABLE),
}

EACH_PROGRAM = [pytest.param(program, id=program.name) for program in PROGRAMS]
EACH_REHEARSAL = [
    pytest.param(program, rehearsal, id=f"{program.name}-{rehearsal.label}")
    for program, rehearsals in PROGRAMS.items()
    for rehearsal in rehearsals
]


# ------------------------------------------------------------------------ running them


@dataclass(frozen=True)
class Ran:
    """One ``faultdeck`` command: its exit code, its output, and the real waits of a second
    or more that the programs it ran started (``probe/sitecustomize.py``)."""

    code: int
    stdout: str
    stderr: str
    waits: list[str]

    def said(self) -> str:
        return (
            f"exit {self.code}\n--- stdout\n{self.stdout}\n--- stderr\n{self.stderr[-3000:]}"
            f"\n--- real waits\n{self.waits}"
        )


def faultdeck(*args: str, cwd: Path, env: dict[str, str], timeout: float = 240) -> Ran:
    """Run the real command line, as a user would."""
    waits = cwd / f".waits-{uuid.uuid4().hex}"
    env = {**env, "FAULTDECK_TEST_WAITS": str(waits)}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (env.get("PYTHONPATH"), str(PROBE)) if p)
    try:
        done = subprocess.run(
            [EXE, *args],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(
            f"faultdeck {' '.join(args)} did not finish in {timeout:g} s; stderr:\n{exc.stderr!r}"
        )
    said = waits.read_text("utf-8").splitlines() if waits.exists() else []
    waits.unlink(missing_ok=True)
    return Ran(done.returncode, done.stdout, done.stderr, said)


def environment(llm: str, weather: str) -> dict[str, str]:
    """What the programs are run with: their SDKs' own variables, pointed at the fakes."""
    return child_env(
        COLUMNS="200",
        OPENAI_BASE_URL=f"{llm}/v1",
        OPENAI_API_KEY=OPENAI_KEY,
        ANTHROPIC_BASE_URL=llm,
        ANTHROPIC_API_KEY=ANTHROPIC_KEY,
        WEATHER_URL=f"{weather}{WEATHER_PATH}",
        # litellm fetches its model cost map from GitHub as it is imported, unless told not
        # to; recorded, that fetch would be a call of the program's like any other.
        LITELLM_LOCAL_MODEL_COST_MAP="True",
        # A request for anywhere but 127.0.0.1 from a client that reads these fails at a dead
        # port instead of leaving the machine.
        HTTP_PROXY=DEAD,
        HTTPS_PROXY=DEAD,
        NO_PROXY="127.0.0.1,localhost",
    )


def needs(program: Program) -> None:
    """Fail, saying what to install, when a library the program imports is missing."""
    if program.node:
        need("node")
    for module, distribution in program.needs:
        if importlib.util.find_spec(module) is None:
            pytest.fail(
                f"{program.name} needs {distribution}, not installed in {sys.prefix}: "
                f"pip install -e '.[dev]' (or pip install {distribution})"
            )


def report_of(ran: Ran) -> tuple[str, dict[str, Any]]:
    """The program's own output and its deck's report, from ``replay --format json`` (which
    prints the program's output first, then the JSON)."""
    start = 0 if ran.stdout.startswith("{") else ran.stdout.find("\n{\n") + 1
    assert ran.stdout[start:].startswith("{"), ran.said()
    (report,) = json.loads(ran.stdout[start:])["reports"]
    return ran.stdout[:start], report


def cells_of(ran: Ran) -> dict[str, dict[str, Any]]:
    """The cells of ``rehearse --format json``, by row."""
    assert ran.code in (0, 1), ran.said()
    assert ran.stdout.startswith("{"), ran.said()
    matrix = json.loads(ran.stdout)
    return {cell["label"]: cell for cell in matrix["cells"]}


@dataclass(frozen=True)
class Recorded:
    """A program's recording: its folder, the environment it ran in (the fakes' addresses,
    stopped since) and what ``faultdeck record`` said."""

    program: Program
    folder: Path
    env: dict[str, str]
    ran: Ran

    @property
    def cassette(self) -> Path:
        return self.folder / "run.jsonl"

    def faultdeck(self, *args: str, cwd: Path | None = None, timeout: float = 240) -> Ran:
        """A command on the recording, with the program after ``--``."""
        command = [*args, "--", *self.program.command]
        return faultdeck(*command, cwd=cwd or self.folder, env=self.env, timeout=timeout)


@dataclass
class Recordings:
    """Each program recorded once (per test process) against fresh fakes, stopped after."""

    folders: pytest.TempPathFactory
    made: dict[str, Recorded] = field(default_factory=dict)

    def of(self, program: Program) -> Recorded:
        needs(program)
        if program.name not in self.made:
            self.made[program.name] = self._record(program)
        return self.made[program.name]

    def _record(self, program: Program) -> Recorded:
        folder = self.folders.mktemp(program.name)
        if program.node:  # an ES module finds its packages beside itself, never on NODE_PATH
            shutil.copy(AGENTS / f"{program.name}.mjs", folder / "agent.mjs")
            (folder / "node_modules").symlink_to(NODE_MODULES, target_is_directory=True)
        service = httpbin() if program.weather else contextlib.nullcontext(DEAD)
        with Upstream() as upstream, service as weather:
            env = environment(upstream.url, weather)
            ran = faultdeck("record", "run.jsonl", "--", *program.command, cwd=folder, env=env)
        return Recorded(program, folder, env, ran)


@pytest.fixture(scope="module")
def recordings(tmp_path_factory: pytest.TempPathFactory) -> Recordings:
    return Recordings(tmp_path_factory)


# ---------------------------------------------------------------------- record, replay


@pytest.mark.parametrize("program", EACH_PROGRAM)
def test_records_then_replays_with_the_fakes_stopped(
    program: Program, recordings: Recordings
) -> None:
    recorded = recordings.of(program)
    calls = len(program.calls)
    assert recorded.ran.code == 0, recorded.ran.said()
    assert recorded.ran.stdout == f"{ANSWER}recorded {calls} calls ({calls} live) into run.jsonl\n"
    recording = fd.load(recorded.cassette)
    assert [(entry.kind, entry.name) for entry in recording.entries] == list(program.calls)
    assert recording.end is not None
    assert recording.end["status"] == "ok"
    text = recorded.cassette.read_text("utf-8")
    assert OPENAI_KEY not in text
    assert ANTHROPIC_KEY not in text
    assert faultdeck("scan", "run.jsonl", cwd=recorded.folder, env=recorded.env).code == 0

    replayed = recorded.faultdeck("replay", "run.jsonl", "--format", "json")
    output, report = report_of(replayed)
    assert (replayed.code, output) == (0, ANSWER), replayed.said()
    assert (report["used"], report["live"]) == (calls, 0)
    assert report["misses"] == report["unused"] == report["repeats"] == []
    assert [(c["kind"], c["name"], c["source"]) for c in report["calls"]] == [
        (*call, "replay") for call in program.calls
    ]


@pytest.mark.parametrize("program", EACH_PROGRAM)
def test_the_bootstrap_says_nothing_while_it_records(
    program: Program, recordings: Recordings
) -> None:
    recorded = recordings.of(program)
    said = [line for line in recorded.ran.stderr.splitlines() if line.startswith("faultdeck:")]
    assert said == []


# ---------------------------------------------------------------------------- rehearse


@pytest.mark.parametrize(("program", "rehearsal"), EACH_REHEARSAL)
def test_rehearsed_and_judged_on_the_waits_it_made(
    program: Program, rehearsal: Rehearsal, recordings: Recordings, tmp_path: Path
) -> None:
    recorded = recordings.of(program)
    assert recorded.ran.code == 0, recorded.ran.said()
    plan = str(rehearsal.plan(tmp_path))

    judged = recorded.faultdeck(
        "rehearse", str(recorded.cassette), "--faults", plan, "--format", "json"
    )
    cells = cells_of(judged)
    assert cells["replay (x2)"]["status"] == "held", cells
    cell = cells[rehearsal.label]
    if rehearsal.raises is None:
        assert (judged.code, cell["status"], cell["violations"]) == (0, "held", []), cell
    else:
        assert (judged.code, cell["status"]) == (1, "raised"), cell
        assert cell["detail"].startswith(f"exit 1: {rehearsal.raises}"), cell
    # The program ran twice (the clean replay, then under the plan), and started no real
    # wait: its SDK's sleep was on the deck's clock.
    assert judged.waits == [], judged.said()

    timeout = RETRY_AFTER - 5 if rehearsal.waits == "retry_after" else 240
    faulted = recorded.faultdeck(
        "replay", "run.jsonl", "--faults", plan, "--format", "json", timeout=timeout
    )
    output, report = report_of(faulted)
    assert_calls(report, program, rehearsal)
    sleeps = report["sleeps"]
    assert faulted.waits == [], faulted.said()
    if rehearsal.waits == "retry_after":
        assert sleeps == [RETRY_AFTER]  # the SDK's own sleep, once, for the Retry-After
    elif rehearsal.waits == "backoff":
        (backoff,) = sleeps  # the SDK's own sleep before it sent again
        assert FIRST_BACKOFF[0] <= backoff <= FIRST_BACKOFF[1]
    else:
        assert sleeps == []  # nothing retried, nothing waited
    assert report["waited"] == pytest.approx(sum(sleeps))
    if rehearsal.raises is None:
        assert (faulted.code, output) == (0, ANSWER), faulted.said()
    else:
        assert (faulted.code, output) == (1, ""), faulted.said()
        assert rehearsal.raises in faulted.stderr


def assert_calls(report: dict[str, Any], program: Program, rehearsal: Rehearsal) -> None:
    """The calls under the plan: the recording's, the fault standing in for one of them, and
    after it the same call again when the library retried."""
    at = rehearsal.at
    before = [(*call, "replay") for call in program.calls[:at]]
    faulted = (*program.calls[at], "fault")
    after = [(*call, "replay") for call in program.calls[at:]] if rehearsal.raises is None else []
    assert [(c["kind"], c["name"], c["source"]) for c in report["calls"]] == [
        *before,
        faulted,
        *after,
    ]
    fault = report["calls"][at]
    if rehearsal.waits == "retry_after":
        assert (fault["fault"], fault["retry_after"]) == ("quota", RETRY_AFTER)
    if after:
        assert report["calls"][at + 1]["key"] == fault["key"]  # the same request, sent again


def test_the_judge_sees_the_30_seconds_the_sdk_slept(
    recordings: Recordings, tmp_path: Path
) -> None:
    """Judged by a policy that allows 29 s of waiting in all, the SDK's 30 s sleep breaks it:
    the wait the judge counts is the one the program made."""
    recorded = recordings.of(next(iter(PROGRAMS)))
    assert recorded.ran.code == 0, recorded.ran.said()
    (tmp_path / "judging.py").write_text(
        "import faultdeck as fd\n\nPOLICY = fd.Policy(max_total_wait=29)\n", "utf-8"
    )
    plan = str(QUOTA.plan(tmp_path))
    judged = recorded.faultdeck(
        "rehearse",
        str(recorded.cassette),
        "--faults",
        plan,
        "--policy",
        "judging:POLICY",
        "--format",
        "json",
        cwd=tmp_path,
    )
    cell = cells_of(judged)["quota"]
    assert (judged.code, cell["status"]) == (1, "broke"), cell
    assert [(v["invariant"], v["observed"]) for v in cell["violations"]] == [
        ("bounded_waiting", "waited 30s")
    ]


# ------------------------------------------------- what the bootstrap and the commands owe


def test_replay_with_faults_puts_the_programs_waits_on_the_virtual_clock(
    recordings: Recordings, tmp_path: Path
) -> None:
    """docs/attach.md: on ``replay --faults`` the program's own waits take no real time and
    advance the deck's clock, as under ``rehearse``."""
    recorded = recordings.of(next(iter(PROGRAMS)))
    assert recorded.ran.code == 0, recorded.ran.said()
    plan = tmp_path / "quota.json"
    plan.write_text(json.dumps({"faults": [{**QUOTA.fault, "retry_after": 3}]}), "utf-8")
    faulted = recorded.faultdeck("replay", "run.jsonl", "--faults", str(plan), "--format", "json")
    output, report = report_of(faulted)
    assert (faulted.code, output) == (0, ANSWER), faulted.said()
    assert (report["sleeps"], report["waited"]) == ([3.0], 3.0), (
        f"the SDK's 3 s sleep was not on the deck's clock (real waits: {faulted.waits})"
    )
    assert faulted.waits == []


URLLIB_AFTER_REQUESTS = """\
import os
import requests
import urllib.request

url = os.environ["WEATHER_URL"]
print(requests.get(url, timeout=10).text)
with urllib.request.urlopen(url, timeout=10) as answer:
    print(answer.read().decode())
"""


def test_urllib_is_routed_when_requests_was_imported_first(tmp_path: Path) -> None:
    """``import requests`` imports ``http.cookiejar``, which imports ``urllib.request``: routing
    it there must not take httpx2 for missing (LangGraph programs import requests so)."""
    (tmp_path / "agent.py").write_text(URLLIB_AFTER_REQUESTS, "utf-8")
    with httpbin() as weather:
        env = environment(DEAD, weather)
        ran = faultdeck(
            "record", "run.jsonl", "--", sys.executable, "agent.py", cwd=tmp_path, env=env
        )
    assert ran.code == 0, ran.said()
    said = [line for line in ran.stderr.splitlines() if line.startswith("faultdeck:")]
    recorded = "sunny\nsunny\nrecorded 2 calls (2 live) into run.jsonl\n"
    assert (said, ran.stdout) == ([], recorded)
