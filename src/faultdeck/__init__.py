"""faultdeck: record an agent's boundary calls once, replay them offline, rehearse failures.

The package is laid out as the pipeline a call goes through; each stage imports only from
the ones before it (docs/architecture.md)::

    _base       errors, clocks, the current step, settings, the "module:attr" loader
      │
    _keys       a call's args ─► normalize ─► redact ─► canonical JSON ─► key
      │
    _cassette   format v1: read and check each line; write, lock, replace atomically
      │
    faults      one table of fault kinds; selectors and plans say where they land
      │
    _deck       Deck.begin(kind, name, args) ─► Call: answer from the cassette, apply the
      │         fault, or run live and record; the report; ReplayMiss says what diverged
    _judge      Policy, run_steps (follows it, SDK errors classified), check (the invariants)
      │
    _diff       two call paths aligned by key, the first divergence
      │
    _rehearse   the fault matrix: each fault at each call of a golden cassette, judged
      │
    edges       http (the SDKs' transports), cli, pytest_plugin, testing, demo; and the
                public doors: this module, config, types, render

Every edge (the HTTP transport as much as ``Deck.call``) makes its calls through the one
seam, ``Deck.begin`` and the ``Call`` it returns.

The names here are the ones you call, catch, or get back from those calls; the others are
in submodules the package imports with it: ``faults`` (the fault kinds), ``config`` (the
settings and the values each option takes), ``types`` (the parts of what faultdeck hands
back), ``render`` (a diff or a matrix as text, JSON or HTML), ``testing`` (assertions)
and ``http`` (the SDKs' transports).

Start with ``Deck``::

    import faultdeck as fd

    with fd.Deck("runs/base.jsonl", mode="record") as deck:
        hits = deck.call("tool", "search_docs", {"q": "retry"}, lambda: search_docs("retry"))
"""

import importlib as _importlib
import typing as _typing

from . import config, faults
from ._base.clock import Clock, SystemClock, VirtualClock
from ._base.context import step
from ._base.errors import (
    ArgumentError,
    BadToolCall,
    BoundaryError,
    CallInDoubt,
    CassetteCorrupt,
    CassetteError,
    CassetteLocked,
    CassetteNotFound,
    CassetteVersionError,
    CassetteWarning,
    CassetteWriteError,
    ConfigError,
    FaultdeckError,
    FaultdeckWarning,
    HarnessChanged,
    ProcessKilled,
    QuotaExhausted,
    RecordedError,
    ReplayMiss,
    SchemaChanged,
    SideEffectBlocked,
    StaleCassette,
    TransientError,
)
from ._cassette.extract import extract, extract_json
from ._cassette.reader import load
from ._deck.call import Call
from ._deck.deck import Deck
from ._deck.report import CallRecord, Report
from ._judge.invariants import Violation, check
from ._judge.policy import Outcome, Policy, run_steps
from ._judge.sdk_errors import classify_error
from ._keys.normalize import NormalizeConfig
from ._keys.redact import Redactor
from .faults import Fault, FaultPlan

if _typing.TYPE_CHECKING:
    from . import http, render, testing, types
    from ._diff.align import CallPathDiff, diff_recordings
    from ._diff.drift import Drift, compare_drift
    from ._rehearse.command import rehearse_command
    from ._rehearse.inprocess import rehearse
    from ._rehearse.matrix import Matrix
    from ._rehearse.redteam import Redteam, redteam

__version__ = "0.1.0"

# What a deck does not need to open and answer is imported when first used: the HTTP edge,
# the diffs, the rehearsals and their renderings (``fd.http``, ``fd.rehearse``…).
_LAZY = {
    "http": ("faultdeck.http", None),
    "render": ("faultdeck.render", None),
    "testing": ("faultdeck.testing", None),
    "types": ("faultdeck.types", None),
    "CallPathDiff": ("faultdeck._diff.align", "CallPathDiff"),
    "diff_recordings": ("faultdeck._diff.align", "diff_recordings"),
    "Drift": ("faultdeck._diff.drift", "Drift"),
    "compare_drift": ("faultdeck._diff.drift", "compare_drift"),
    "rehearse_command": ("faultdeck._rehearse.command", "rehearse_command"),
    "rehearse": ("faultdeck._rehearse.inprocess", "rehearse"),
    "Matrix": ("faultdeck._rehearse.matrix", "Matrix"),
    "Redteam": ("faultdeck._rehearse.redteam", "Redteam"),
    "redteam": ("faultdeck._rehearse.redteam", "redteam"),
}


def __getattr__(name: str) -> _typing.Any:
    """A public name imported when first used (``_LAZY``), then kept as a module global."""
    try:
        module, attr = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'faultdeck' has no attribute {name!r}") from None
    found = _importlib.import_module(module)
    value = found if attr is None else getattr(found, attr)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


__all__ = [
    "ArgumentError",
    "BadToolCall",
    "BoundaryError",
    "Call",
    "CallInDoubt",
    "CallPathDiff",
    "CallRecord",
    "CassetteCorrupt",
    "CassetteError",
    "CassetteLocked",
    "CassetteNotFound",
    "CassetteVersionError",
    "CassetteWarning",
    "CassetteWriteError",
    "Clock",
    "ConfigError",
    "Deck",
    "Drift",
    "Fault",
    "FaultPlan",
    "FaultdeckError",
    "FaultdeckWarning",
    "HarnessChanged",
    "Matrix",
    "NormalizeConfig",
    "Outcome",
    "Policy",
    "ProcessKilled",
    "QuotaExhausted",
    "RecordedError",
    "Redactor",
    "Redteam",
    "ReplayMiss",
    "Report",
    "SchemaChanged",
    "SideEffectBlocked",
    "StaleCassette",
    "SystemClock",
    "TransientError",
    "Violation",
    "VirtualClock",
    "__version__",
    "check",
    "classify_error",
    "compare_drift",
    "config",
    "diff_recordings",
    "extract",
    "extract_json",
    "faults",
    "http",
    "load",
    "redteam",
    "rehearse",
    "rehearse_command",
    "render",
    "run_steps",
    "step",
    "testing",
    "types",
]
