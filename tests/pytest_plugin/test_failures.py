"""How the plugin's failures read: a miss first, a missing cassette as a failing test, and
every hint in pytest's terms (inner pytest runs with real decks and the real openai SDK)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import faultdeck as fd
from tests.support import sdk  # noqa: F401  (imported once here, see below)
from tests.support.fake_upstream import Upstream

# -- a miss through the openai SDK --------------------------------------------------------

# The inner tests import tests.support.sdk, and with it the openai and anthropic SDKs.
# pytester takes back the modules an in-process session imported; imported here first, they
# stay, and each inner session uses them as they are instead of importing them anew.

AGENT = """
from tests.support.sdk import OPENAI_MODEL, openai_sync

URL = {url!r}
QUESTIONS = {questions!r}


def ask(client, question):
    reply = client.chat.completions.create(
        model=OPENAI_MODEL, messages=[{{"role": "user", "content": question}}]
    )
    return reply.choices[0].message.content


def test_weather(deck):
    with openai_sync(URL, deck, None) as client:  # closed, miss or not
        for question in QUESTIONS:
            assert ask(client, question) == "Hello from the fake upstream."
"""

RECORDED = ["Weather in Paris?", "And tomorrow?"]
CHANGED = ["Weather in Paris?", "And the day after?"]
COMMAND = "pytest test_agent.py::test_weather --faultdeck-mode=record"
MISS = "ReplayMiss: replay miss at seq 2: model openai.chat.completions *"
FAULTDECK_FRAMES = ("src/faultdeck", "handle_request", "first_step", "_exchange", "in begin")


@pytest.fixture
def upstream() -> Iterator[Upstream]:
    with Upstream() as server:
        yield server


@pytest.fixture
def recorded(pytester: pytest.Pytester, upstream: Upstream) -> pytest.Pytester:
    """A test that recorded two model calls through the SDK, then changed its second."""
    pytester.makepyfile(test_agent=AGENT.format(url=upstream.url, questions=RECORDED))
    pytester.runpytest("--faultdeck-mode=record").assert_outcomes(passed=1)
    pytester.makepyfile(test_agent=AGENT.format(url=upstream.url, questions=CHANGED))
    return pytester


def failure(result: pytest.RunResult) -> list[str]:
    """The lines of the test's failure report, below its ``___ test_weather ___`` header."""
    lines = result.outlines
    start = next(i for i, line in enumerate(lines) if "_ test_weather _" in line) + 1
    end = next(i for i, line in enumerate(lines) if i > start and line.startswith("=="))
    return lines[start:end]


def test_a_miss_through_the_sdk_leads_with_the_miss_and_the_tests_frames(
    recorded: pytest.Pytester,
) -> None:
    result = recorded.runpytest()
    result.assert_outcomes(failed=1)
    shown = failure(result)
    text = "\n".join(shown)
    assert fd.ReplayMiss.__name__ in shown[0]
    result.stdout.fnmatch_lines(
        [
            MISS,
            "  1 call agreed with the recording before it.",
            '    args.body.messages[0].content: recorded "And tomorrow?", now "And the day after?"',
            f"  if the change is intended, re-record with {COMMAND}, or record only the new "
            "calls with pytest test_agent.py::test_weather --faultdeck-mode=append",
            "",
            "test_agent.py:*: in test_weather",
            "    assert ask(client, question) == *",
            "test_agent.py:*: in ask",
            "    reply = client.chat.completions.create(",
            "(faultdeck's and the libraries' frames are hidden; --tb=long or --fulltrace *)",
        ]
    )
    assert [name for name in FAULTDECK_FRAMES if name in text] == []
    assert "site-packages" not in text  # the SDK's and httpx's frames are not the test's
    assert 'mode="record"' not in result.stdout.str()
    assert text.count("--faultdeck-mode=record") == 1  # one statement of the command
    result.stdout.fnmatch_lines(["FAILED test_agent.py::test_weather - ReplayMiss: replay miss*"])


def test_long_and_fulltrace_tracebacks_show_faultdecks_frames(recorded: pytest.Pytester) -> None:
    for flag in ("--tb=long", "--fulltrace"):
        result = recorded.runpytest(flag)
        result.assert_outcomes(failed=1)
        text = result.stdout.str()
        assert "src/faultdeck/http/_transport.py" in text, flag
        assert "handle_request" in text, flag
        assert "site-packages/openai" in text, flag
        assert COMMAND in text, flag  # the message speaks pytest whichever style shows it
        assert 'mode="record"' not in text, flag


def test_a_miss_with_tb_line_names_the_tests_line(recorded: pytest.Pytester) -> None:
    result = recorded.runpytest("--tb=line")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([MISS, "test_agent.py:*: " + MISS])
    assert "src/faultdeck" not in result.stdout.str()


# -- misses of plain deck calls -------------------------------------------------------------

CALLS = """
import faultdeck as fd

ARG = {arg!r}


def test_search(deck):
    assert deck.call("tool", "search", {{"q": "retry"}}, lambda: 1) == 1
    assert deck.call("tool", "read", {{"path": ARG}}, lambda: "text") == "text"


def test_own_deck(tmp_path):
    with fd.Deck(tmp_path / "own.jsonl", mode="record") as deck:
        deck.call("tool", "read", {{"path": "a.md"}}, lambda: "text")
    with fd.Deck(tmp_path / "own.jsonl", mode="replay") as deck:
        deck.call("tool", "read", {{"path": "b.md"}}, lambda: "text")
"""


def test_a_deck_of_the_tests_own_keeps_pythons_terms(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_calls=CALLS.format(arg="a.md"))
    result = pytester.runpytest("--faultdeck-mode=record")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "ReplayMiss: replay miss at seq 1: tool read *",
            '  if the change is intended, re-record with mode="record", or record only the '
            'new calls with mode="append"',
            "",
            "test_calls.py:*: in test_own_deck",
        ]
    )
    assert "re-record this test" not in result.stdout.str()


def test_a_helper_that_hides_its_frame_stays_hidden(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_hidden="""
def read(deck, path):
    __tracebackhide__ = True
    return deck.call("tool", "read", {"path": path}, lambda: "text")

def test_reads(deck):
    assert read(deck, "a.md") == "text"
"""
    )
    pytester.runpytest("--faultdeck-mode=record").assert_outcomes(passed=1)
    pytester.makepyfile(
        test_hidden=pytester.path.joinpath("test_hidden.py").read_text().replace('"a.md"', '"b.md"')
    )
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["ReplayMiss: replay miss at seq 1: tool read *", "", "test_hidden.py:*: in test_reads"]
    )
    assert "in read" not in result.stdout.str()


def test_a_miss_in_ci_names_the_command_to_run_locally(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_calls=CALLS.format(arg="a.md"))
    pytester.runpytest("--faultdeck-mode=record", "-k", "search").assert_outcomes(passed=1)
    pytester.makepyfile(test_calls=CALLS.format(arg="b.md"))
    monkeypatch.setenv("CI", "true")
    result = pytester.runpytest("-k", "search")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "ReplayMiss: replay miss at seq 2: tool read *",
            "  1 call agreed with the recording before it.",
            "*re-record with pytest test_calls.py::test_search --faultdeck-mode=record "
            "(locally: with CI set a test never records), or *",
            "test_calls.py:*: in test_search",
        ]
    )
    assert "re-record this test" not in result.stdout.str()


def test_hints_speak_pytest_only_while_the_tests_deck_is_open(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        test_terms="""
from faultdeck._base import terms

def test_a(deck):
    assert terms.current().record == "pytest test_terms.py::test_a --faultdeck-mode=record"
    assert terms.current().append == "pytest test_terms.py::test_a --faultdeck-mode=append"
    assert terms.current().resume == "pytest test_terms.py::test_a --faultdeck-mode=resume"

def test_after_it():
    assert terms.current() == terms.PYTHON
"""
    )
    pytester.runpytest("--faultdeck-mode=off").assert_outcomes(passed=2)


def test_an_interrupted_recording_says_how_to_finish_it_with_pytest(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_calls=CALLS.format(arg="a.md"))
    cassette = pytester.path / "cassettes" / "test_calls" / "test_search.jsonl"
    cassette.parent.mkdir(parents=True)
    deck = fd.Deck(cassette, mode="record")
    deck.call("tool", "search", {"q": "retry"}, lambda: 1)
    deck.abandon()  # killed: no end line
    result = pytester.runpytest("-k", "search", "-W", "always::faultdeck.CassetteWarning")
    result.assert_outcomes(failed=1)  # its second call was never recorded
    result.stdout.fnmatch_lines(
        [
            "*the recorded run was interrupted (no end line); replaying what it recorded; "
            "finish it with pytest test_calls.py::test_search --faultdeck-mode=resume*",
        ]
    )
    assert 'mode="resume"' not in result.stdout.str()


# -- a test whose cassette is not recorded yet ------------------------------------------------

NEW = """
import pytest
from pathlib import Path

@pytest.mark.faultdeck(mode={mode!r})
def test_new(deck):
    Path("ran").touch()
    assert deck.call("tool", "search", {{"q": "retry"}}, lambda: 1) == 1
"""

CASSETTE = ("cassettes", "test_new", "test_new.jsonl")


def test_a_test_without_its_cassette_fails_with_the_command_that_records_it(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_new=NEW.format(mode=None))
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "faultdeck: */cassettes/test_new/test_new.jsonl: no such cassette; record it first "
            "with pytest test_new.py::test_new --faultdeck-mode=record",
        ]
    )
    assert 'mode="record"' not in result.stdout.str()
    assert not (pytester.path / "ran").exists()  # the body never ran
    pytester.runpytest("test_new.py::test_new", "--faultdeck-mode=record").assert_outcomes(passed=1)
    assert pytester.path.joinpath(*CASSETTE).exists()
    pytester.runpytest().assert_outcomes(passed=1)


@pytest.mark.parametrize("mode", [None, "once", "append"])
def test_in_ci_a_missing_cassette_fails_and_is_never_recorded(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, mode: str | None
) -> None:
    pytester.makepyfile(test_new=NEW.format(mode=mode))
    monkeypatch.setenv("CI", "1")
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "faultdeck: *test_new.jsonl: no such cassette; record it first with pytest "
            "test_new.py::test_new --faultdeck-mode=record (locally: with CI set a test "
            "never records)",
        ]
    )
    assert not (pytester.path / "cassettes").exists()
    assert not (pytester.path / "ran").exists()


# -- bad input: one line in the test's terms ------------------------------------------------

BAD_INPUT = """
import pytest

import faultdeck as fd


@pytest.fixture
def writer():
    deck = fd.Deck("cassettes/held.jsonl", mode="append")
    deck.open()  # holds the cassette's lock
    yield
    deck.close("ok")


@pytest.mark.faultdeck(cassette="cassettes/bad.jsonl")
def test_corrupt(deck):
    pass


@pytest.mark.faultdeck(cassette="cassettes/newer.jsonl")
def test_newer(deck):
    pass


@pytest.mark.faultdeck(cassette="cassettes/held.jsonl", mode="append")
def test_locked(writer, deck):
    pass


@pytest.mark.faultdeck(cassette="cassettes/held.jsonl", faults="plan.json")
def test_plan(deck):
    pass
"""
HEADER = '{"faultdeck": 1, "match": "keyed", "harness": {}, "env": {}, "volatile": []}\n'


def test_bad_input_is_one_line_naming_the_file_and_its_line(pytester: pytest.Pytester) -> None:
    cassettes = pytester.mkdir("cassettes")
    (cassettes / "bad.jsonl").write_text(HEADER + "{not json\n")
    (cassettes / "newer.jsonl").write_text(HEADER.replace('"faultdeck": 1', '"faultdeck": 99'))
    (cassettes / "held.jsonl").write_text(HEADER + '{"end": {"calls": 0, "status": "ok"}}\n')
    pytester.makefile(".json", plan='{"faults": [{"fault": "qouta"}]}')
    pytester.makepyfile(test_bad=BAD_INPUT)
    result = pytester.runpytest("-p", "no:randomly")
    result.assert_outcomes(errors=4)
    out = result.stdout.str()
    assert "During handling" not in out
    assert "Traceback" not in out
    assert "src/faultdeck" not in out
    said = {
        "test_corrupt": "cassettes/bad.jsonl:2: not JSON",
        "test_newer": "cassettes/newer.jsonl:1: written in cassette format 99",
        "test_locked": "cassettes/held.jsonl: another process is writing it",
        "test_plan": "plan.json: faults[0].fault: unknown fault 'qouta'",
    }
    lines = result.stdout.lines
    for test, words in said.items():
        at = next(i for i, line in enumerate(lines) if f"ERROR at setup of {test} " in line)
        assert lines[at + 1].startswith("faultdeck: "), lines[at : at + 3]
        assert words in lines[at + 1]
        assert lines[at + 2].startswith(("_", "=")), lines[at : at + 3]  # one line, then the next


def test_a_hints_command_runs_from_the_folder_pytest_was_run_in(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makeini("[pytest]\n")  # the rootdir: the folder above the tests
    tests = pytester.mkdir("tests")
    (tests / "test_new.py").write_text(NEW.format(mode=None))
    monkeypatch.chdir(tests)
    result = pytester.runpytest("test_new.py")
    result.assert_outcomes(failed=1)
    # The node id is tests/test_new.py::test_new; from tests/ pytest takes test_new.py.
    result.stdout.fnmatch_lines(
        ["faultdeck: *no such cassette; record it first with pytest test_new.py::test_new *"]
    )
    pytester.runpytest("test_new.py::test_new", "--faultdeck-mode=record").assert_outcomes(passed=1)
    pytester.runpytest("test_new.py").assert_outcomes(passed=1)
