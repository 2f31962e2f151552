"""Which settings a test's deck runs with, and where its cassette lives.

Decided in one place, ``resolve``: the command line, then the marker, then
``faultdeck_config``, then the defaults. With ``CI`` set a miss never records: the modes that
would record a missing call or cassette (``append``, ``once``) replay instead.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._base import terms
from .._base.config import MATCHES, MODES, Match, Mode, Settings, check_choice
from .._base.errors import ConfigError
from ..faults import Fault, FaultPlan

KEYS = (
    "cassette",
    "faults",
    "match",
    "mode",
    "strict",
    "allow_side_effects",
    "clock",
    "intercept",
)
_UNSAFE = re.compile(r"[^A-Za-z0-9._\[\]-]+")
_LONGEST_NAME = 100
_NEVER_RECORD_IN_CI = ("append", "once")


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
        intercept: the HTTP clients the test's code makes go through the deck
            (``fd.intercept``).
    """

    mode: Mode
    cassette: Path
    faults: FaultPlan | None
    match: Match
    strict: bool
    allow_side_effects: bool
    clock: str
    ci: bool
    intercept: bool = False


def resolve(
    *,
    option: Mapping[str, Any],
    marker: Mapping[str, Any],
    config: Mapping[str, Any],
    default_cassette: Path,
    test_dir: Path,
    ci: bool,
    intercept: bool = False,
) -> Resolved:
    """Decide each setting: command line, then marker, then ``faultdeck_config``, then default.

    Args:
        option: from the command line (``None`` values mean "not given").
        marker: the ``faultdeck`` marker's keyword arguments.
        config: the ``faultdeck_config`` fixture's dict.
        default_cassette: the cassette when nothing names one.
        intercept: the project's ``intercept`` setting, the default of the key.
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
    if ci and mode in _NEVER_RECORD_IN_CI:
        mode = "replay"  # with CI set a miss, or a missing cassette, fails instead of recording
    cassette = pick("cassette", default_cassette)
    if cassette is not default_cassette:
        cassette = Path(cassette)
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
        intercept=bool(pick("intercept", intercept)),
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
        folder, file = os.path.split(test_path)
        return Path(folder, "cassettes", os.path.splitext(file)[0], name)
    root = Path(settings.root)
    try:
        below = test_path.resolve().relative_to(root.resolve()).with_suffix("")
    except ValueError:  # a test file outside the project
        below = Path(test_path.stem)
    return root / settings.cassette_dir / below / name


def rerecord_command(nodeid: str) -> str:
    """The exact command that re-records one test."""
    return terms.pytest_run(nodeid, ci=False).record


def run_id(item: Any) -> str:
    """The test's id as a hint's command gives it to pytest from the folder pytest was run
    in (a node id is relative to the rootdir, which may be another folder)."""
    nodeid: str = item.nodeid
    path, sep, rest = nodeid.partition("::")
    here = item.config.invocation_params.dir
    if not path or here == item.config.rootpath:
        return nodeid
    shown: str = os.path.relpath(item.config.rootpath / path, here)
    return shown.replace(os.sep, "/") + sep + rest
