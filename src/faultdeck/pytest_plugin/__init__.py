"""The pytest plugin: a cassette per test, replay by default, faults in a marker.

Options (group ``faultdeck``): ``--faultdeck-mode`` (default ``replay``),
``--faultdeck-faults PLAN``, ``--faultdeck-strict`` (recorded calls left unused fail the
test, and so does a cassette older than ``[tool.faultdeck] max_age``, which otherwise warns
``StaleCassette``), ``--block-network`` (in replay, a socket connection fails the test). Marker:
``@pytest.mark.faultdeck(cassette=…, faults=…, match=…, mode=…, intercept=…)``
(``intercept=True``, or ``[tool.faultdeck] intercept = true``: the HTTP clients the test's
code makes go through its deck, with no client wiring). Fixtures: ``deck``,
``faultdeck_config`` (a dict to override), ``virtual_clock``. A marker's faults on a named
cassette run on the test's branch where they lead off its path (``_branch.py``).

Which setting wins is decided in one place, ``resolve``: the command line, the marker,
``faultdeck_config``, the defaults; with ``CI`` set a miss never records.

While a test's deck is open, hints speak pytest from the folder it ran in: a miss, a missing
cassette or an interrupted recording names the command that records that one test
(``pytest 'tests/test_agent.py::test_two' --faultdeck-mode=record``); a miss shows first,
the test's own frames after it (``--tb=long`` or ``--fulltrace`` shows all); bad input (a
corrupt, newer or locked cassette, a bad plan) is one line.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import warnings
from collections.abc import Generator, Iterator, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest

# Imported as a module: a ``pytest_…`` name in this namespace would be taken for a hook.
from .._base import terms
from .._base.clock import SystemClock, VirtualClock
from .._base.config import MODES, Settings, load_settings
from .._base.errors import CassetteError, CassetteNotFound, ConfigError, ReplayMiss, StaleCassette
from .._base.words import plural
from .._deck.deck import Deck
from ._branch import branches, off_path, on_branch, tidy
from ._max_age import stale_message
from ._miss import MissReport, miss_report
from ._network import NetworkBlocked, blocking
from ._settings import (
    KEYS,
    Resolved,
    cassette_name,
    default_cassette,
    rerecord_command,
    resolve,
    run_id,
)
from ._summary import SUMMARY_KEY, Gather, Off, is_worker

__all__ = [
    "KEYS",
    "MissReport",
    "NetworkBlocked",
    "Resolved",
    "cassette_name",
    "default_cassette",
    "rerecord_command",
    "resolve",
]

DECK_KEY = pytest.StashKey[Deck]()
RESOLVED_KEY = pytest.StashKey[Resolved]()
MISSING_KEY = pytest.StashKey[CassetteNotFound]()
STALE_KEY = pytest.StashKey[str]()
FAILED_KEY = pytest.StashKey[bool]()
BRANCHING_KEY = pytest.StashKey[bool]()
OPTIONS_KEY = pytest.StashKey[dict[str, Any]]()
SETTINGS_KEY = pytest.StashKey[dict[Path, Settings]]()
_NO_CONFIG: Mapping[str, Any] = MappingProxyType({})  # shared by the session: read-only
_SERIALIZED = "faultdeck_miss"  # the key of a MissReport's data in a serialized longrepr
_CONCISE = ("auto", "short", "line")
"""The ``--tb`` styles a miss is shown in as ``MissReport``; the others show every frame."""


# -- hooks -----------------------------------------------------------------------------------


def pytest_addoption(parser: pytest.Parser) -> None:
    """Register the ``faultdeck`` option group."""
    group = parser.getgroup("faultdeck", "faultdeck: record, replay and rehearse boundary calls")
    group.addoption(
        "--faultdeck-mode",
        choices=MODES,
        default=None,
        help="deck mode for every test (default: replay)",
    )
    group.addoption(
        "--faultdeck-faults",
        metavar="PLAN",
        default=None,
        help="a fault plan (JSON or TOML) injected in every test's deck",
    )
    group.addoption(
        "--faultdeck-strict",
        action="store_true",
        default=None,
        help="fail a test that leaves recorded calls unused or replays a cassette older than "
        "max_age",
    )
    if importlib.util.find_spec("pytest_recording") is None:
        _add_block_network(parser)
    # Else it is added once every plugin is loaded, unless pytest-recording was.


def pytest_load_initial_conftests(parser: pytest.Parser) -> None:
    """``--block-network`` where pytest-recording is installed: its plugin has a
    ``--block-network`` of its own, which means the same, and two plugins registering one
    option stop pytest, whichever loads first. Now that every plugin but the conftests is
    loaded, faultdeck adds it if pytest-recording's plugin did not (``-p no:recording``)."""
    if importlib.util.find_spec("pytest_recording") is not None:
        _add_block_network(parser)


def _add_block_network(parser: pytest.Parser) -> None:
    """Register ``--block-network``, unless another plugin has (faultdeck reads theirs)."""
    with contextlib.suppress(ValueError):
        parser.getgroup("faultdeck").addoption(
            "--block-network",
            action="store_true",
            default=False,
            help="in replay, fail a test that opens a network connection",
        )


def pytest_configure(config: pytest.Config) -> None:
    """Register the marker, so that ``--strict-markers`` accepts it; under xdist, the hooks
    that bring the workers' summaries to the controller."""
    config.addinivalue_line(
        "markers",
        "faultdeck(cassette=None, faults=None, match=None, mode=None, intercept=None): the "
        "test's deck settings (the command line wins over these, these over "
        "faultdeck_config)",
    )
    config.stash[SUMMARY_KEY] = []
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(Gather(config), "faultdeck-xdist")


def _options(config: pytest.Config) -> dict[str, Any]:
    """The plugin's options on the command line, read once per session."""
    options = config.stash.get(OPTIONS_KEY, None)
    if options is None:
        options = config.stash[OPTIONS_KEY] = {
            "mode": config.getoption("--faultdeck-mode"),
            "faults": config.getoption("--faultdeck-faults"),
            "strict": config.getoption("--faultdeck-strict"),
        }
    return options


def _settings(config: pytest.Config, folder: Path) -> Settings:
    """The project settings of the tests in ``folder``, read once per folder and session
    (as pytest reads its own ini file once)."""
    known = config.stash.setdefault(SETTINGS_KEY, {})
    settings = known.get(folder)
    if settings is None:
        settings = known[folder] = load_settings(folder)
    return settings


def _marker(item: pytest.Item) -> dict[str, Any]:
    marker = item.get_closest_marker("faultdeck")
    return dict(marker.kwargs) if marker is not None else {}


def _replaying(item: pytest.Item) -> bool:
    mode = _options(item.config)["mode"] or _marker(item).get("mode") or "replay"
    return mode == "replay" or (mode == "once" and bool(os.environ.get("CI")))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    """Fail a test whose cassette is not recorded yet; block the network if asked."""
    missing = item.stash.get(MISSING_KEY, None)
    if missing is not None:
        # A failure of the test, not of its set-up: recording it is what makes it pass.
        pytest.fail(f"faultdeck: {missing}", pytrace=False)
    stale = item.stash.get(STALE_KEY, None)
    if stale is not None:
        pytest.fail(f"faultdeck: --faultdeck-strict: {stale}", pytrace=False)
    if not (item.config.getoption("block_network", False) and _replaying(item)):
        return (yield)
    with blocking(item.nodeid):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Lead a miss's failure with the miss; fail a strict test that left calls unused."""
    report = yield
    if call.excinfo is not None and call.excinfo.errisinstance(ReplayMiss):
        _show_miss(item, report, call.excinfo.value)
    deck = item.stash.get(DECK_KEY, None)
    if deck is not None and call.when == "call":
        if report.passed:
            _fail_outage(report, deck)
        item.stash[FAILED_KEY] = report.failed
        if report.passed and item.stash[RESOLVED_KEY].strict:
            _fail_unused(item, report, deck)
    return report


def _fail_outage(report: pytest.TestReport, deck: Deck) -> None:
    """Fail a test whose recording met an outage: live calls got no answer, so the deck
    keeps the cassette it records over (closed here, its body being over, to say where).
    A replay makes no live call."""
    if deck.active_mode == "replay" or not deck.report().unanswered:
        return
    deck.close()
    report.outcome = "failed"
    report.longrepr = f"faultdeck: {deck.report().outage()}"


def _show_miss(item: pytest.Item, report: pytest.TestReport, miss: BaseException) -> None:
    config = item.config
    style = config.getoption("tbstyle")
    if not config.getoption("fulltrace") and style in _CONCISE:
        shown = miss_report(miss, config.invocation_params.dir, frames=style != "line")
        if shown is not None:
            # pytest prints any report with toterminal(); its own TerminalRepr is private.
            report.longrepr = shown  # type: ignore[assignment]
    resolved = item.stash.get(RESOLVED_KEY, None)
    if resolved is None:
        return  # a deck of the test's own: the plugin's options do not re-record it
    record = terms.pytest_run(run_id(item), ci=resolved.ci).record
    if item.stash.get(BRANCHING_KEY, False):
        report.sections.append(("faultdeck", off_path(resolved.cassette, record)))
    elif record not in str(miss):
        report.sections.append(("faultdeck", f"re-record this test:\n  {record}"))


def _fail_unused(item: pytest.Item, report: pytest.TestReport, deck: Deck) -> None:
    unused = deck.report().unused
    if not unused:
        return
    listed = "\n".join(
        f"  seq {u.seq} {u.kind} {u.name} ({u.key}), {deck.path}:{u.line}" for u in unused
    )
    record = terms.pytest_run(run_id(item), ci=item.stash[RESOLVED_KEY].ci).record
    report.outcome = "failed"
    report.longrepr = (
        f"--faultdeck-strict: {plural(len(unused), 'recorded call')} never asked for:\n"
        f"{listed}\nre-record if the test no longer makes them:\n  {record}"
    )


@pytest.hookimpl(wrapper=True)
def pytest_report_to_serializable(report: Any) -> Generator[None, Any, Any]:
    """Send a miss's report whole (pytest would send its text, and ``--tb=line`` under
    xdist would print the text's first 50 characters instead of ``path:line: message``)."""
    data = yield
    longrepr = getattr(report, "longrepr", None)
    if isinstance(data, dict) and isinstance(longrepr, MissReport):
        data["longrepr"] = {_SERIALIZED: longrepr.to_data()}
    return data


@pytest.hookimpl(wrapper=True)
def pytest_report_from_serializable(data: dict[str, Any]) -> Generator[None, Any, Any]:
    """Rebuild the miss's report ``pytest_report_to_serializable`` sent."""
    longrepr = data.get("longrepr")
    miss = longrepr.get(_SERIALIZED) if isinstance(longrepr, dict) else None
    report = yield
    if miss is not None and report is not None:
        report.longrepr = MissReport.from_data(miss)
    return report


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """Summarise the decks that had misses, unused calls or repeats (under xdist, the
    controller does, for every worker's decks)."""
    lines = config.stash.get(SUMMARY_KEY, [])
    if not lines or is_worker(config):
        return
    terminalreporter.section("faultdeck")
    for off in lines:
        terminalreporter.write_line(off.line())


# -- fixtures ----------------------------------------------------------------------------


@pytest.fixture(scope="session")
def faultdeck_config() -> Mapping[str, Any]:
    """Deck settings for the tests in scope (none, read-only); override it at any scope."""
    return _NO_CONFIG


@pytest.fixture
def virtual_clock() -> VirtualClock:
    """A clock that never waits; the ``deck`` fixture's clock unless configured otherwise."""
    return VirtualClock()


@pytest.fixture
def deck(request: pytest.FixtureRequest, faultdeck_config: Mapping[str, Any]) -> Iterator[Deck]:
    """The test's deck: its cassette is ``<test dir>/cassettes/<module>/<test name>.jsonl``,
    or ``<root>/<cassette_dir>/<test file's path from the root>/<test name>.jsonl`` when
    the project sets ``cassette_dir``. While it is open, hints name this test's commands.
    Its clock is the test's ``virtual_clock`` when the test (or a fixture it uses) takes
    one, else one of its own: a fixture less to set up where no test holds the clock."""
    held = "virtual_clock" in request.fixturenames
    clock = request.getfixturevalue("virtual_clock") if held else VirtualClock()
    yield from _deck(request.node, faultdeck_config, clock)


def _check_age(item: pytest.Item, resolved: Resolved, settings: Settings, record: str) -> None:
    """``max_age``: warn of a stale cassette, or (strict) fail the test's call with it."""
    stale = stale_message(resolved.cassette, settings, mode=resolved.mode, record=record)
    if stale is None:
        return
    if resolved.strict:
        item.stash[STALE_KEY] = stale  # failed in the call: see pytest_runtest_call
    else:
        warnings.warn(stale, StaleCassette, stacklevel=2)


def _intercepting(deck: Deck, on: bool) -> contextlib.AbstractContextManager[Any]:
    """``fd.intercept(deck)`` when the test asks for it (imported only then)."""
    if not on:
        return contextlib.nullcontext()
    from ..attach import intercept

    return intercept(deck)


def _deck(item: pytest.Item, config: Mapping[str, Any], clock: VirtualClock) -> Iterator[Deck]:
    test_path, test_dir = item.path, item.path.parent
    refused = None  # bad input's one line, failed outside the handler: no chained traceback
    try:
        settings = _settings(item.config, test_dir)
        default = default_cassette(test_path, item.nodeid, settings)
        resolved = resolve(
            option=_options(item.config),
            marker=_marker(item),
            config=config,
            default_cassette=default,
            test_dir=test_dir,
            ci=bool(os.environ.get("CI")),
            intercept=settings.intercept,
        )
        cassette, branch = on_branch(resolved, item.name, default)
        item.stash[BRANCHING_KEY] = branches(resolved, default)
        test_terms = terms.pytest_run(run_id(item), ci=resolved.ci)
        _check_age(item, resolved, settings, test_terms.record)
        deck = Deck(
            cassette,
            mode=branch.pop("mode", resolved.mode),
            match=resolved.match,
            faults=resolved.faults,
            clock=clock if resolved.clock == "virtual" else SystemClock(),
            allow_side_effects=resolved.allow_side_effects,
            settings=settings,
            **branch,
        )
    except ConfigError as exc:
        refused = str(exc)
    if refused is not None:
        pytest.fail(f"faultdeck: {refused}", pytrace=False)
    item.stash[DECK_KEY] = deck
    item.stash[RESOLVED_KEY] = resolved
    # From set-up to teardown (a miss is raised in the call, the deck closes after it).
    try:
        with terms.speaking(test_terms):
            try:
                deck.open()
            except CassetteNotFound as exc:
                item.stash[MISSING_KEY] = exc  # the call fails with it: see pytest_runtest_call
                yield deck
                return
            except CassetteError as exc:  # corrupt, newer, locked: its one line, no traceback
                refused = str(exc).splitlines()[0]
            if refused is not None:
                pytest.fail(f"faultdeck: {refused}", pytrace=False)
            try:
                with _intercepting(deck, resolved.intercept):
                    yield deck
            finally:
                # A test that failed while recording leaves a good cassette as it was: the
                # new recording stays beside it (see Report.kept).
                deck.close("error" if item.stash.get(FAILED_KEY, False) else "ok")
    finally:
        # The item, which pytest keeps to the end of the session, lets go of the deck and
        # the recording it holds.
        del item.stash[DECK_KEY]
        if deck.mode == "fork":
            tidy(cassette)
    report = deck.report()
    if not report.ok:
        item.config.stash[SUMMARY_KEY].append(Off.of(item.nodeid, report))
