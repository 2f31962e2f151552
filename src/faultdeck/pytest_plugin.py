"""The pytest plugin: a cassette per test, replay by default, faults in a marker.

Options (group ``faultdeck``): ``--faultdeck-mode`` (default ``replay``),
``--faultdeck-faults PLAN``, ``--faultdeck-strict`` (recorded calls left unused fail the
test), ``--block-network`` (in replay, a socket connection fails the test). Marker:
``@pytest.mark.faultdeck(cassette=…, faults=…, match=…, mode=…)``. Fixtures: ``deck``,
``faultdeck_config`` (a dict to override), ``virtual_clock``.

Which setting wins is decided in one place, ``resolve``: the command line, then the marker,
then ``faultdeck_config``, then the defaults. With ``CI`` set a miss never records: modes
that would record a miss replay instead, and the failure says how to re-record the test.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import socket
from collections.abc import Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ._base.clock import SystemClock, VirtualClock
from ._base.config import MATCHES, MODES, Match, Mode, Settings, check_choice, load_settings
from ._base.errors import ConfigError, ReplayMiss
from ._deck.deck import Deck
from ._deck.report import Report
from .faults import Fault, FaultPlan

KEYS = ("cassette", "faults", "match", "mode", "strict", "allow_side_effects", "clock")
_UNSAFE = re.compile(r"[^A-Za-z0-9._\[\]-]+")
_LONGEST_NAME = 100
DECK_KEY = pytest.StashKey["Deck"]()
RESOLVED_KEY = pytest.StashKey["Resolved"]()
REPORTS_KEY = pytest.StashKey[list[tuple[str, Report]]]()
FAILED_KEY = pytest.StashKey[bool]()


class NetworkBlocked(RuntimeError):
    """A test tried to open a network connection while its deck replays."""


@dataclass(frozen=True, slots=True)
class Resolved:
    """The settings one test's deck runs with.

    Attributes:
        mode: the deck's mode.
        cassette: the cassette file.
        faults: the fault plan, if any.
        match: ``keyed`` or ``strict``.
        strict: recorded calls left unused fail the test.
        allow_side_effects: side-effecting tools may run while recording.
        clock: ``virtual`` (never waits; the default) or ``system``.
        ci: ``CI`` is set: a miss never records.
    """

    mode: Mode
    cassette: Path
    faults: FaultPlan | None
    match: Match
    strict: bool
    allow_side_effects: bool
    clock: str
    ci: bool


def resolve(
    *,
    option: Mapping[str, Any],
    marker: Mapping[str, Any],
    config: Mapping[str, Any],
    default_cassette: Path,
    test_dir: Path,
    ci: bool,
) -> Resolved:
    """Decide each setting: command line, then marker, then ``faultdeck_config``, then default.

    Args:
        option: from the command line (``None`` values mean "not given").
        marker: the ``faultdeck`` marker's keyword arguments.
        config: the ``faultdeck_config`` fixture's dict.
        default_cassette: the cassette when nothing names one.
        test_dir: the test file's folder; relative cassette and plan paths start there.
        ci: whether ``CI`` is set.

    Raises:
        ConfigError: an unknown key, or a value that is not valid, named with its source.
    """
    for source, values in (("marker", marker), ("faultdeck_config", config)):
        unknown = sorted(set(values) - set(KEYS))
        if unknown:
            raise ConfigError(
                f"{source}: unknown key {unknown[0]!r}; known keys: {', '.join(KEYS)}"
            )

    def pick(key: str, default: Any) -> Any:
        for values in (option, marker, config):
            if values.get(key) is not None:
                return values[key]
        return default

    mode = check_choice("faultdeck mode", pick("mode", "replay"), MODES)
    if ci and mode == "append":
        mode = "replay"  # with CI set a miss fails instead of recording
    cassette = Path(pick("cassette", default_cassette))
    if not cassette.is_absolute():
        cassette = test_dir / cassette
    return Resolved(
        mode=mode,
        cassette=cassette,
        faults=_plan(pick("faults", None), test_dir),
        match=check_choice("faultdeck match", pick("match", "keyed"), MATCHES),
        strict=bool(pick("strict", False)),
        allow_side_effects=bool(pick("allow_side_effects", False)),
        clock=check_choice("faultdeck clock", pick("clock", "virtual"), ("virtual", "system")),
        ci=ci,
    )


def _plan(value: Any, test_dir: Path) -> FaultPlan | None:
    if value is None or isinstance(value, FaultPlan):
        return value
    if isinstance(value, Fault):
        return FaultPlan([value])
    if isinstance(value, (str, os.PathLike)):
        path = Path(value)
        return FaultPlan.load(path if path.is_absolute() else test_dir / path)
    if isinstance(value, Sequence) and all(isinstance(f, Fault) for f in value):
        return FaultPlan(value)
    raise ConfigError(
        f"faults {value!r} is not a fault, a list of faults, a FaultPlan or a plan file path"
    )


def cassette_name(nodeid: str) -> str:
    """The file name for a test: its name after the module, parametrize ids included,
    unsafe characters replaced, long names shortened with a hash."""
    name = nodeid.split("::", 1)[-1].replace("::", ".")
    safe = _UNSAFE.sub("_", name).strip("_") or "test"
    if len(safe) > _LONGEST_NAME:
        digest = hashlib.sha256(name.encode()).hexdigest()[:10]
        safe = f"{safe[: _LONGEST_NAME - 11]}-{digest}"
    return f"{safe}.jsonl"


def default_cassette(test_path: Path, nodeid: str, settings: Settings) -> Path:
    """Where a test's cassette lives when nothing names one: beside the test file, or
    under the project's ``cassette_dir``."""
    name = cassette_name(nodeid)
    if settings.cassette_dir is None:
        return test_path.parent / "cassettes" / test_path.stem / name
    root = Path(settings.root)
    try:
        below = test_path.resolve().relative_to(root.resolve()).with_suffix("")
    except ValueError:  # a test file outside the project
        below = Path(test_path.stem)
    return root / settings.cassette_dir / below / name


def rerecord_command(nodeid: str) -> str:
    """The exact command that re-records one test."""
    return f"pytest {shlex.quote(nodeid)} --faultdeck-mode=record"


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
        help="fail a test that leaves recorded calls unused",
    )
    group.addoption(
        "--block-network",
        action="store_true",
        default=False,
        help="in replay, fail a test that opens a network connection",
    )


def pytest_configure(config: pytest.Config) -> None:
    """Register the marker, so that ``--strict-markers`` accepts it."""
    config.addinivalue_line(
        "markers",
        "faultdeck(cassette=None, faults=None, match=None, mode=None): the test's deck "
        "settings (the command line wins over these, these over faultdeck_config)",
    )
    config.stash[REPORTS_KEY] = []


def _options(config: pytest.Config) -> dict[str, Any]:
    return {
        "mode": config.getoption("--faultdeck-mode"),
        "faults": config.getoption("--faultdeck-faults"),
        "strict": config.getoption("--faultdeck-strict"),
    }


def _marker(item: pytest.Item) -> dict[str, Any]:
    marker = item.get_closest_marker("faultdeck")
    return dict(marker.kwargs) if marker is not None else {}


def _replaying(item: pytest.Item) -> bool:
    mode = _options(item.config)["mode"] or _marker(item).get("mode") or "replay"
    return mode == "replay" or (mode == "once" and bool(os.environ.get("CI")))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    """Block network connections around the test body when replaying, if asked."""
    if not (item.config.getoption("--block-network") and _replaying(item)):
        return (yield)
    with pytest.MonkeyPatch.context() as patch:
        for name in ("connect", "connect_ex"):
            original = getattr(socket.socket, name)
            patch.setattr(socket.socket, name, _blocked(original, item.nodeid))
        return (yield)


def _blocked(original: Any, nodeid: str) -> Any:
    def connect(self: socket.socket, address: Any) -> Any:
        if self.family in (socket.AF_INET, socket.AF_INET6):
            # Closed here: the caller never gets a connected socket to close.
            self.close()
            raise NetworkBlocked(
                f"{nodeid} tried to connect to {address!r} while replaying with "
                "--block-network; a replayed test needs no network (record with "
                "--faultdeck-mode=record, or route the call through the deck)"
            )
        return original(self, address)

    return connect


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Say how to re-record a missed test; fail a strict test that left calls unused."""
    report = yield
    deck = item.stash.get(DECK_KEY, None)
    if deck is None or call.when != "call":
        return report
    item.stash[FAILED_KEY] = report.failed
    resolved = item.stash[RESOLVED_KEY]
    if call.excinfo is not None and call.excinfo.errisinstance(ReplayMiss):
        how = "with CI set a miss never records; " if resolved.ci else ""
        report.sections.append(
            ("faultdeck", f"{how}re-record this test locally:\n  {rerecord_command(item.nodeid)}")
        )
        return report
    deck_report = deck.report()
    if report.passed and resolved.strict and deck_report.unused:
        unused = "\n".join(
            f"  seq {u.seq} {u.kind} {u.name} ({u.key}), {deck.path}:{u.line}"
            for u in deck_report.unused
        )
        report.outcome = "failed"
        report.longrepr = (
            f"--faultdeck-strict: {len(deck_report.unused)} recorded call(s) were never "
            f"asked for:\n{unused}\nre-record if the test no longer makes them:\n  "
            f"{rerecord_command(item.nodeid)}"
        )
    return report


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """Summarise the decks that had misses, unused calls or repeats."""
    off = [(nodeid, r) for nodeid, r in config.stash.get(REPORTS_KEY, []) if not r.ok]
    if not off:
        return
    terminalreporter.section("faultdeck")
    for nodeid, report in off:
        terminalreporter.write_line(
            f"{nodeid}: {len(report.misses)} missed, {len(report.unused)} unused, "
            f"{len(report.repeats)} repeated ({report.cassette})"
        )


# -- fixtures ----------------------------------------------------------------------------


@pytest.fixture
def faultdeck_config() -> dict[str, Any]:
    """Deck settings for the tests in scope; override this fixture to change them."""
    return {}


@pytest.fixture
def virtual_clock() -> VirtualClock:
    """A clock that never waits; the ``deck`` fixture's clock unless configured otherwise."""
    return VirtualClock()


@pytest.fixture
def deck(
    request: pytest.FixtureRequest,
    faultdeck_config: dict[str, Any],
    virtual_clock: VirtualClock,
) -> Iterator[Deck]:
    """The test's deck: its cassette is ``<test dir>/cassettes/<module>/<test name>.jsonl``,
    or ``<root>/<cassette_dir>/<test file's path from the root>/<test name>.jsonl`` when
    the project sets ``cassette_dir``."""
    item = request.node
    yield from _deck(item, faultdeck_config, virtual_clock)


def _deck(item: pytest.Item, config: dict[str, Any], clock: VirtualClock) -> Iterator[Deck]:
    test_path = Path(str(item.path))
    try:
        settings = load_settings(test_path.parent)
        default = default_cassette(test_path, item.nodeid, settings)
        resolved = resolve(
            option=_options(item.config),
            marker=_marker(item),
            config=config,
            default_cassette=default,
            test_dir=test_path.parent,
            ci=bool(os.environ.get("CI")),
        )
    except ConfigError as exc:
        pytest.fail(f"faultdeck: {exc}", pytrace=False)
    if resolved.ci and resolved.mode == "once" and not resolved.cassette.exists():
        pytest.fail(
            f"faultdeck: {resolved.cassette} does not exist, and with CI set a test never "
            f"records; record it locally:\n  {rerecord_command(item.nodeid)}",
            pytrace=False,
        )
    deck = Deck(
        resolved.cassette,
        mode=resolved.mode,
        match=resolved.match,
        faults=resolved.faults,
        clock=clock if resolved.clock == "virtual" else SystemClock(),
        allow_side_effects=resolved.allow_side_effects,
        settings=settings,
    )
    item.stash[DECK_KEY] = deck
    item.stash[RESOLVED_KEY] = resolved
    deck.open()
    try:
        yield deck
    finally:
        # A test that failed while recording leaves a good cassette as it was: the new
        # recording stays beside it (see Report.kept).
        deck.close("error" if item.stash.get(FAILED_KEY, False) else "ok")
    item.config.stash[REPORTS_KEY].append((item.nodeid, deck.report()))
