"""The plugin under pytest-xdist: inner sessions run with ``-n 2``, in subprocesses.

xdist runs the tests in worker processes and reports them in the controller; these tests
check what a user sees there: every test's cassette recorded whole and in its own file, the
command line's options honoured by the workers, failures that say what they say without
xdist, and one terminal summary that holds the decks of every worker.
"""

from __future__ import annotations

import re
import socketserver
import threading
from collections.abc import Callable, Iterator

import pytest

import faultdeck as fd

# Generous: a bound on a hung inner session, not a measure of speed.
TIMEOUT = 600
# The inner tests use no hypothesis; its plugin costs each inner session about a second.
QUIET = ("-p", "no:hypothesispytest")
TESTS = [f"test_agent.py::test_square[{n}]" for n in range(6)]

AGENT = """
import pytest

RECORDING = {recording}
CHANGED = {changed}
DROPPED = {dropped}


def live(value):
    def run():
        if RECORDING:
            return value
        raise AssertionError("went live while replaying")
    return run


@pytest.mark.parametrize("n", range(6))
def test_square(deck, n):
    asked = n + 100 if n == CHANGED else n
    assert deck.call("tool", "square", {{"n": asked}}, live(n * n)) == n * n
    if n not in DROPPED:
        assert deck.call("tool", "cube", {{"n": n}}, live(n**3)) == n**3
"""


def agent(
    pytester: pytest.Pytester,
    *,
    recording: bool = False,
    changed: int | None = None,
    dropped: tuple[int, ...] = (),
) -> None:
    """Write the six tests: recording or replaying, one argument changed, calls dropped."""
    source = AGENT.format(recording=recording, changed=changed, dropped=dropped)
    pytester.makepyfile(test_agent=source)


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """An inner session with two workers."""
    return pytester.runpytest_subprocess(*QUIET, "-n", "2", *args, timeout=TIMEOUT)


def recorded(pytester: pytest.Pytester) -> None:
    """The six tests, replaying, and their cassettes recorded here (recording them under
    xdist has its own test; an inner session costs seconds)."""
    agent(pytester)
    for n in range(6):
        path = pytester.path / "cassettes" / "test_agent" / f"test_square[{n}].jsonl"
        with fd.Deck(path, mode="record") as deck:
            deck.call("tool", "square", {"n": n}, answer(n * n))
            deck.call("tool", "cube", {"n": n}, answer(n**3))


def answer(value: int) -> Callable[[], int]:
    """A live call that answers ``value``."""
    return lambda: value


def workers(result: pytest.RunResult) -> dict[str, str]:
    """Which worker ran each test, from ``-v`` lines like ``[gw1] [ 50%] PASSED t.py::x``."""
    ran = {}
    for line in result.outlines:
        found = re.match(r"\[(gw\d+)\] \[ *\d+%\] [A-Z]+ (\S+)", line)
        if found:
            ran[found.group(2)] = found.group(1)
    return ran


def test_recording_under_two_workers_writes_each_tests_cassette_whole(
    pytester: pytest.Pytester,
) -> None:
    agent(pytester, recording=True)
    result = run(pytester, "--faultdeck-mode=record", "-v")
    result.assert_outcomes(passed=6)
    assert set(workers(result).values()) == {"gw0", "gw1"}
    folder = pytester.path / "cassettes" / "test_agent"
    names = sorted(p.name for p in folder.iterdir())
    assert names == [f"test_square[{n}].jsonl" for n in range(6)]  # no lock, no partial left
    for n in range(6):
        recording = fd.load(folder / f"test_square[{n}].jsonl")
        assert recording.end is not None
        # Only this test's calls: no other worker wrote into its file.
        assert [(e.name, e.args, e.value) for e in recording.entries] == [
            ("square", {"n": n}, n * n),
            ("cube", {"n": n}, n**3),
        ]
    agent(pytester)
    run(pytester, "--strict-markers").assert_outcomes(passed=6)


def test_a_changed_argument_fails_with_the_miss(pytester: pytest.Pytester) -> None:
    recorded(pytester)
    agent(pytester, changed=3)
    result = run(pytester)
    result.assert_outcomes(passed=5, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*ReplayMiss: replay miss at seq 1: tool square *test_square[[]3[]].jsonl",
            "*args.n: recorded 3, now 103",
            "*re-record with pytest 'test_agent.py::test_square[[]3[]]' --faultdeck-mode=record*",
        ]
    )
    # The report crosses from the worker whole: --tb=line still names the test's line.
    line = run(pytester, "--tb=line")
    line.assert_outcomes(passed=5, failed=1)
    line.stdout.fnmatch_lines(["test_agent.py:*: ReplayMiss: replay miss at seq 1: tool square *"])


def test_strict_fails_a_test_that_leaves_a_call_unused(pytester: pytest.Pytester) -> None:
    recorded(pytester)
    agent(pytester, dropped=(4,))
    run(pytester).assert_outcomes(passed=6)
    result = run(pytester, "--faultdeck-strict")
    result.assert_outcomes(passed=5, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*--faultdeck-strict: 1 recorded call never asked for:",
            "*seq 2 tool cube (tool:*), *test_square[[]4[]].jsonl:3",
            "*FAILED test_agent.py::test_square[[]4[]]*",
        ]
    )


def test_the_summary_gathers_the_decks_of_both_workers(pytester: pytest.Pytester) -> None:
    recorded(pytester)
    agent(pytester, dropped=tuple(range(6)))
    result = run(pytester, "-v")
    result.assert_outcomes(passed=6)
    ran = workers(result)
    assert sorted(ran) == sorted(TESTS)
    assert set(ran.values()) == {"gw0", "gw1"}
    section = [i for i, line in enumerate(result.outlines) if "= faultdeck =" in line]
    assert len(section) == 1, "one summary, the controller's"
    listed = [
        line.split(": ", 1)
        for line in result.outlines[section[0] + 1 :]
        if line.startswith("test_agent.py::")
    ]
    # Each test once, from both workers.
    assert sorted(nodeid for nodeid, _ in listed) == sorted(TESTS)
    for nodeid, said in listed:
        cassette = pytester.path / "cassettes" / "test_agent" / f"{nodeid.split('::')[1]}.jsonl"
        assert said == f"0 missed, 1 unused, 0 repeated ({cassette})"


def test_the_summary_without_xdist(pytester: pytest.Pytester) -> None:
    recorded(pytester)
    agent(pytester, dropped=(1,))
    result = pytester.runpytest_subprocess(*QUIET, "-p", "no:xdist", timeout=TIMEOUT)
    result.assert_outcomes(passed=6)
    result.stdout.fnmatch_lines(
        ["*= faultdeck =*", "test_agent.py::test_square[[]1[]]: 0 missed, 1 unused, 0 repeated (*)"]
    )


def test_a_fault_plan_on_the_command_line_reaches_the_workers(pytester: pytest.Pytester) -> None:
    recorded(pytester)
    plan = pytester.path / "timeout.json"
    plan.write_text('{"faults": [{"fault": "timeout", "on": {"name": "cube", "nth": 1}}]}')
    result = run(pytester, f"--faultdeck-faults={plan}")
    result.assert_outcomes(failed=6)
    result.stdout.fnmatch_lines(["*TransientError: injected timeout: no answer in time"])


class _Echo(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        self.request.sendall(b"hi")


@pytest.fixture
def server() -> Iterator[int]:
    """A listening socket on 127.0.0.1 that answers ``hi``; its port."""
    with socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Echo) as srv:
        thread = threading.Thread(target=srv.serve_forever, daemon=True)
        thread.start()
        yield srv.server_address[1]
        srv.shutdown()
        thread.join()


CONNECTS = """
import socket

import pytest


@pytest.mark.parametrize("n", range(4))
def test_connects(deck, n):
    if n == 2:
        with socket.create_connection(("127.0.0.1", {port}), timeout=30) as conn:
            assert conn.recv(2) == b"hi"
"""


def test_block_network_fails_a_test_that_connects(pytester: pytest.Pytester, server: int) -> None:
    pytester.makepyfile(test_net=CONNECTS.format(port=server))
    recording = run(pytester, "--block-network", "--faultdeck-mode=record")
    recording.assert_outcomes(passed=4)  # while recording, connections are allowed
    result = run(pytester, "--block-network")
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*NetworkBlocked: test_net.py::test_connects[[]2[]] tried to connect to "
            "('127.0.0.1', *) while replaying with --block-network*",
        ]
    )
    run(pytester).assert_outcomes(passed=4)


# pytest-recording's plugin registers this option, with this dest and meaning.
RECORDING_PLUGIN = """
def pytest_addoption(parser):
    group = parser.getgroup("recording")
    group.addoption("--block-network", action="store_true", default=False)
"""


@pytest.mark.parametrize("first", ["faultdeck", "pytest_recording", "faultdeck alone"])
def test_block_network_beside_pytest_recordings_option(
    pytester: pytest.Pytester, server: int, first: str
) -> None:
    """Installed beside pytest-recording, whose plugin registers ``--block-network`` too,
    pytest starts, whichever plugin loads first, and faultdeck reads that option; with
    pytest-recording installed but not loaded, faultdeck's own is there."""
    pytester.makepyfile(test_net=CONNECTS.format(port=server))
    pytester.mkpydir("pytest_recording")
    pytester.path.joinpath("pytest_recording", "plugin.py").write_text(RECORDING_PLUGIN)
    run(pytester, "--faultdeck-mode=record").assert_outcomes(passed=4)
    plugins = ["faultdeck.pytest_plugin", "pytest_recording.plugin"]
    if first == "pytest_recording":
        plugins.reverse()
    elif first == "faultdeck alone":
        plugins.pop()
    order = ["-p", "no:faultdeck"]
    for plugin in plugins:  # loaded in this order
        order += ["-p", plugin]
    result = run(pytester, *order, "--block-network")
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(["*NetworkBlocked: test_net.py::test_connects[[]2[]]*"])
