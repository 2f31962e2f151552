"""The pytest plugin, tested with real inner pytest runs (pytester)."""

from __future__ import annotations

import socketserver
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

import faultdeck as fd
from faultdeck import faults
from faultdeck.pytest_plugin import Resolved, cassette_name, rerecord_command, resolve
from tests.support import GOLDEN

DEFAULT = Path("/proj/tests/cassettes/test_mod/test_a.jsonl")


def settle(
    option: dict[str, object] | None = None,
    marker: dict[str, object] | None = None,
    config: dict[str, object] | None = None,
    ci: bool = False,
) -> Resolved:
    return resolve(
        option=option or {},
        marker=marker or {},
        config=config or {},
        default_cassette=DEFAULT,
        test_dir=Path("/proj/tests"),
        ci=ci,
    )


# -- precedence: command line, then marker, then faultdeck_config, then default -------------


@pytest.mark.parametrize(
    ("option", "marker", "config", "expected"),
    [
        ({}, {}, {}, "replay"),
        ({}, {}, {"mode": "once"}, "once"),
        ({}, {"mode": "append"}, {"mode": "once"}, "append"),
        ({"mode": "record"}, {"mode": "append"}, {"mode": "once"}, "record"),
        ({"mode": None}, {"mode": None}, {"mode": "off"}, "off"),
    ],
)
def test_mode_precedence(
    option: dict[str, object], marker: dict[str, object], config: dict[str, object], expected: str
) -> None:
    assert settle(option, marker, config).mode == expected


def test_precedence_of_every_setting() -> None:
    plan = [faults.timeout()]
    marker = {"cassette": "m.jsonl", "match": "strict", "faults": plan, "strict": True}
    config = {"cassette": "c.jsonl", "match": "keyed", "faults": "nope.json", "strict": False}
    resolved = settle({}, marker, config)
    assert resolved.cassette == Path("/proj/tests/m.jsonl")
    assert resolved.match == "strict"
    assert resolved.faults is not None
    assert resolved.faults.faults == tuple(plan)
    assert resolved.strict is True
    assert settle({}, {}, {"cassette": "/abs/c.jsonl"}).cassette == Path("/abs/c.jsonl")
    assert settle().cassette == DEFAULT
    assert settle({"strict": True}, {"strict": False}).strict is True
    assert settle().clock == "virtual"
    assert settle(config={"clock": "system", "allow_side_effects": True}).allow_side_effects


def test_with_ci_set_a_miss_never_records() -> None:
    assert settle(marker={"mode": "append"}, ci=True).mode == "replay"
    assert settle(marker={"mode": "append"}, ci=False).mode == "append"
    assert settle(option={"mode": "record"}, ci=True).mode == "record"


@pytest.mark.parametrize(
    ("marker", "config", "says"),
    [
        ({"casette": "x"}, {}, "marker: unknown key 'casette'"),
        ({}, {"modes": "x"}, "faultdeck_config: unknown key 'modes'"),
        ({"mode": "recrod"}, {}, "faultdeck mode 'recrod' is not one of"),
        ({"faults": 3}, {}, "faults 3 is not a fault"),
    ],
)
def test_bad_settings_are_named(
    marker: dict[str, object], config: dict[str, object], says: str
) -> None:
    with pytest.raises(fd.ConfigError, match=says):
        settle({}, marker, config)


# -- naming ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("nodeid", "name"),
    [
        ("tests/test_mod.py::test_a", "test_a.jsonl"),
        ("tests/test_mod.py::test_a[1-x]", "test_a[1-x].jsonl"),
        ("tests/test_mod.py::test_a[a/b c:d]", "test_a[a_b_c_d].jsonl"),
        ("tests/test_mod.py::TestThing::test_b", "TestThing.test_b.jsonl"),
    ],
)
def test_cassette_names(nodeid: str, name: str) -> None:
    assert cassette_name(nodeid) == name


def test_long_names_are_shortened_with_a_hash() -> None:
    long_a = cassette_name("t.py::test_x[" + "a" * 300 + "]")
    long_b = cassette_name("t.py::test_x[" + "a" * 299 + "b]")
    assert len(long_a) <= 106
    assert long_a != long_b
    assert long_a.startswith("test_x[aaaa")


def test_rerecord_command_quotes_the_node_id() -> None:
    assert (
        rerecord_command("t.py::test_a[x y]")
        == "pytest 't.py::test_a[x y]' --faultdeck-mode=record"
    )


# -- inner pytest runs ----------------------------------------------------------------------

TWO_CALLS = """
import pytest

def live(value):
    def run():
        if RECORDING:
            return value
        raise AssertionError("went live while replaying")
    return run

RECORDING = {recording}

def test_two(deck):
    assert deck.call("tool", "search", {{"q": "retry"}}, live([1, 2])) == [1, 2]
    {second}

@pytest.mark.parametrize("n", [1, 2])
def test_param(deck, n):
    assert deck.call("tool", "square", {{"n": n}}, live(n * n)) == n * n
"""


def write(pytester: pytest.Pytester, recording: bool, second: str) -> None:
    pytester.makepyfile(test_agent=TWO_CALLS.format(recording=recording, second=second))


SECOND = 'assert deck.call("tool", "read", {"path": "a.md"}, live("text")) == "text"'


def test_record_then_replay_with_one_cassette_per_test(pytester: pytest.Pytester) -> None:
    write(pytester, True, SECOND)
    pytester.runpytest("--faultdeck-mode=record").assert_outcomes(passed=3)
    folder = pytester.path / "cassettes" / "test_agent"
    assert sorted(p.name for p in folder.iterdir()) == [
        "test_param[1].jsonl",
        "test_param[2].jsonl",
        "test_two.jsonl",
    ]
    assert len(fd.load(folder / "test_two.jsonl").entries) == 2
    write(pytester, False, SECOND)
    result = pytester.runpytest("--strict-markers")
    result.assert_outcomes(passed=3)


def test_the_projects_cassette_dir_holds_every_tests_cassettes(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml('[tool.faultdeck]\ncassette_dir = "recorded"\n')
    (pytester.path / "suite").mkdir()
    (pytester.path / "suite" / "test_agent.py").write_text(
        TWO_CALLS.format(recording=True, second=SECOND), "utf-8"
    )
    pytester.runpytest("--faultdeck-mode=record", "suite").assert_outcomes(passed=3)
    folder = pytester.path / "recorded" / "suite" / "test_agent"
    assert sorted(p.name for p in folder.iterdir()) == [
        "test_param[1].jsonl",
        "test_param[2].jsonl",
        "test_two.jsonl",
    ]
    assert not (pytester.path / "suite" / "cassettes").exists()
    (pytester.path / "suite" / "test_agent.py").write_text(
        TWO_CALLS.format(recording=False, second=SECOND), "utf-8"
    )
    pytester.runpytest("suite").assert_outcomes(passed=3)


def test_a_cassette_dir_that_is_not_relative_stops_each_test_saying_so(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyprojecttoml('[tool.faultdeck]\ncassette_dir = "/elsewhere"\n')
    write(pytester, True, SECOND)
    result = pytester.runpytest("--faultdeck-mode=record")
    result.assert_outcomes(errors=3)
    result.stdout.fnmatch_lines(["*cassette_dir '/elsewhere' must be a folder relative to*"])


def test_strict_fails_a_test_that_leaves_calls_unused(pytester: pytest.Pytester) -> None:
    write(pytester, True, SECOND)
    pytester.runpytest("--faultdeck-mode=record").assert_outcomes(passed=3)
    write(pytester, False, "pass")
    pytester.runpytest().assert_outcomes(passed=3)
    result = pytester.runpytest("--faultdeck-strict")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*--faultdeck-strict: 1 recorded call never asked for:",
            "*seq 2 tool read (tool:*), *test_two.jsonl:3",
            "*pytest test_agent.py::test_two --faultdeck-mode=record",
        ]
    )


def test_the_terminal_summary_lists_decks_that_are_off(pytester: pytest.Pytester) -> None:
    write(pytester, True, SECOND)
    pytester.runpytest("--faultdeck-mode=record")
    write(pytester, False, "pass")
    result = pytester.runpytest()
    result.stdout.fnmatch_lines(
        ["*= faultdeck =*", "test_agent.py::test_two: 0 missed, 1 unused, 0 repeated (*)"]
    )


MISSING = """
import pytest

@pytest.mark.faultdeck(mode="{mode}")
def test_new_call(deck):
    deck.call("tool", "brand_new", {{"x": 1}}, lambda: 1)
"""


def test_with_ci_set_a_miss_fails_with_the_command_to_re_record(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_ci=MISSING.format(mode="append"))
    (pytester.path / "cassettes" / "test_ci").mkdir(parents=True)
    with fd.Deck(pytester.path / "cassettes" / "test_ci" / "test_new_call.jsonl", mode="record"):
        pass
    monkeypatch.setenv("CI", "true")
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*ReplayMiss: replay miss at seq 1: tool brand_new*",
            "*re-record with pytest test_ci.py::test_new_call --faultdeck-mode=record "
            "(locally: with CI set a test never records)*",
        ]
    )
    monkeypatch.delenv("CI")
    pytester.runpytest().assert_outcomes(passed=1)  # locally, append records the miss


def test_with_ci_set_once_never_records_a_missing_cassette(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_ci=MISSING.format(mode="once"))
    monkeypatch.setenv("CI", "1")
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)  # a test not recorded yet fails; it never records in CI
    result.stdout.fnmatch_lines(
        ["*no such cassette; record it first with *(locally: with CI set a test never records)"]
    )
    assert not (pytester.path / "cassettes").exists()


class _Echo(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        self.request.sendall(b"hi")


@pytest.fixture
def server() -> Iterator[int]:
    with socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Echo) as srv:
        thread = threading.Thread(target=srv.serve_forever, daemon=True)
        thread.start()
        yield srv.server_address[1]
        srv.shutdown()


CONNECTS = """
import socket

def test_connects(deck):
    with socket.create_connection(("127.0.0.1", {port}), timeout=5) as conn:
        assert conn.recv(2) == b"hi"
"""


def test_block_network_blocks_replay_and_allows_recording(
    pytester: pytest.Pytester, server: int
) -> None:
    pytester.makepyfile(test_net=CONNECTS.format(port=server))
    pytester.runpytest("--block-network", "--faultdeck-mode=record").assert_outcomes(passed=1)
    result = pytester.runpytest("--block-network")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*NetworkBlocked: test_net.py::test_connects tried to connect to ('127.0.0.1', *"]
    )
    pytester.runpytest().assert_outcomes(passed=1)  # without the flag, nothing is blocked


WORKSHOP = """
import pytest
import faultdeck as fd
from faultdeck import faults
from faultdeck.testing import assert_invariants, assert_violates
from faultdeck.workshop import POLICY, Workshop

GOLDEN = {golden!r}
QUOTA = faults.quota().on(kind="tool", name="read_file", nth=1)


def drops_partial_work(step, ops, policy, *, clock, repair=None):
    outcomes = fd.run_steps(step, ops, policy, clock=clock, repair=repair)
    return outcomes[-1:] if outcomes[-1].status == "stopped" else outcomes


@pytest.mark.faultdeck(cassette=GOLDEN, faults=[QUOTA])
def test_the_loop_stops_on_quota_and_keeps_its_work(deck, virtual_clock):
    outcomes = Workshop(deck).run(POLICY, clock=virtual_clock)
    assert [(o.op, o.status) for o in outcomes] == [("plan", "ok"), ("read", "stopped")]
    assert_invariants(outcomes, policy=POLICY, deck=deck, clock=virtual_clock)


@pytest.mark.faultdeck(cassette=GOLDEN, faults=[QUOTA])
def test_a_loop_that_drops_work_is_caught(deck, virtual_clock):
    outcomes = Workshop(deck).run(POLICY, clock=virtual_clock, runner=drops_partial_work)
    assert_violates("partial_work", outcomes, policy=POLICY, deck=deck)
    assert_invariants(outcomes, policy=POLICY, deck=deck, clock=virtual_clock)
"""


def test_a_faults_marker_on_the_workshop(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_workshop=WORKSHOP.format(golden=str(GOLDEN)))
    result = pytester.runpytest("--strict-markers")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*partial_work: op 'plan': completed at seq 1*"])


def test_the_command_line_plan_wins_over_the_marker(pytester: pytest.Pytester) -> None:
    plan = pytester.path / "timeout.json"
    plan.write_text('{"faults": [{"fault": "timeout", "on": {"name": "read_file", "nth": 1}}]}')
    pytester.makepyfile(
        test_override=WORKSHOP.format(golden=str(GOLDEN)).split("def drops_partial_work")[0]
        + """
@pytest.mark.faultdeck(cassette=GOLDEN, faults=[QUOTA])
def test_which_fault(deck, virtual_clock):
    outcomes = Workshop(deck).run(POLICY, clock=virtual_clock)
    assert outcomes[1].attempts == 2, "the command line's timeout, not the marker's quota"
"""
    )
    pytester.runpytest(f"--faultdeck-faults={plan}").assert_outcomes(passed=1)
    pytester.runpytest().assert_outcomes(failed=1)


def test_faultdeck_config_is_overridable(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        """
import pytest

@pytest.fixture
def faultdeck_config():
    return {"mode": "off"}
"""
    )
    pytester.makepyfile(
        test_cfg="""
def test_off(deck):
    assert deck.mode == "off"
    assert deck.call("tool", "t", {}, lambda: 7) == 7
"""
    )
    pytester.runpytest().assert_outcomes(passed=1)
    assert not (pytester.path / "cassettes").exists()


def test_the_deck_runs_on_the_tests_clock_or_on_its_own(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_clock="""
import pytest
import faultdeck as fd

def test_held(deck, virtual_clock):
    assert deck.clock is virtual_clock

def test_own(deck):
    assert isinstance(deck.clock, fd.VirtualClock)
    deck.clock.sleep(3600)  # returns at once
    assert deck.clock.waited == 3600

def test_the_default_config_is_shared_so_read_only(faultdeck_config):
    assert dict(faultdeck_config) == {}
    with pytest.raises(TypeError):
        faultdeck_config["mode"] = "off"
"""
    )
    pytester.runpytest("--faultdeck-mode=off", "-p", "no:cacheprovider").assert_outcomes(passed=3)


def test_a_bad_marker_fails_the_test_with_one_line(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_bad="""
import pytest

@pytest.mark.faultdeck(casette="x.jsonl")
def test_bad(deck):
    pass
"""
    )
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*faultdeck: marker: unknown key 'casette'; known keys:*"])
