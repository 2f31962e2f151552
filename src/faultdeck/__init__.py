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
in its public submodules: ``faults`` (the fault kinds), ``config`` (the
settings and the values each option takes), ``types`` (the parts of what faultdeck hands
back), ``render`` (a diff or a matrix as text, JSON or HTML), ``testing`` (assertions)
and ``http`` (the SDKs' transports). Each is imported when first read: ``import faultdeck``
alone imports only the errors.

Start with ``Deck``::

    import faultdeck as fd

    with fd.Deck("runs/base.jsonl", mode="record") as deck:
        hits = deck.call("tool", "search_docs", {"q": "retry"}, lambda: search_docs("retry"))
"""

import importlib as _importlib
import typing as _typing

# The errors are the names a caller catches, and cheap: imported with the package.
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
from ._base.version import VERSION as __version__

if _typing.TYPE_CHECKING:
    from . import config, faults, http, render, testing, types
    from ._base.clock import Clock, SystemClock, VirtualClock
    from ._base.context import step
    from ._cassette.extract import extract, extract_json
    from ._cassette.reader import load
    from ._deck.call import Call
    from ._deck.deck import Deck
    from ._deck.report import CallRecord, Report
    from ._diff.align import CallPathDiff, diff_recordings
    from ._diff.drift import Drift, compare_drift
    from ._judge.invariants import Violation, check
    from ._judge.policy import Outcome, Policy, run_steps
    from ._judge.sdk_errors import classify_error
    from ._keys.normalize import NormalizeConfig
    from ._keys.redact import Redactor
    from ._rehearse.command import rehearse_command
    from ._rehearse.inprocess import rehearse
    from ._rehearse.matrix import Matrix
    from ._rehearse.redteam import Redteam, redteam
    from .attach import intercept
    from .faults import Fault, FaultPlan

# Every other name is imported when first read (the package's ``__getattr__``), so that importing
# faultdeck costs nothing until something is used: the command line's ``--version`` and
# ``--help``, a pytest session that never opens a deck. ``from faultdeck import Deck`` loads
# what a deck needs to open and answer, and no more: not the HTTP edge, the diffs, the
# rehearsals or their renderings. Each module below names what it gives (None: the module).
_FROM: dict[str, tuple[str | None, ...]] = {
    "faultdeck.attach": ("intercept",),
    "faultdeck.config": (None,),
    "faultdeck.faults": (None, "Fault", "FaultPlan"),
    "faultdeck.http": (None,),
    "faultdeck.render": (None,),
    "faultdeck.testing": (None,),
    "faultdeck.types": (None,),
    "faultdeck._base.clock": ("Clock", "SystemClock", "VirtualClock"),
    "faultdeck._base.context": ("step",),
    "faultdeck._cassette.extract": ("extract", "extract_json"),
    "faultdeck._cassette.reader": ("load",),
    "faultdeck._deck.call": ("Call",),
    "faultdeck._deck.deck": ("Deck",),
    "faultdeck._deck.report": ("CallRecord", "Report"),
    "faultdeck._diff.align": ("CallPathDiff", "diff_recordings"),
    "faultdeck._diff.drift": ("Drift", "compare_drift"),
    "faultdeck._judge.invariants": ("Violation", "check"),
    "faultdeck._judge.policy": ("Outcome", "Policy", "run_steps"),
    "faultdeck._judge.sdk_errors": ("classify_error",),
    "faultdeck._keys.normalize": ("NormalizeConfig",),
    "faultdeck._keys.redact": ("Redactor",),
    "faultdeck._rehearse.command": ("rehearse_command",),
    "faultdeck._rehearse.inprocess": ("rehearse",),
    "faultdeck._rehearse.matrix": ("Matrix",),
    "faultdeck._rehearse.redteam": ("Redteam", "redteam"),
}
_LAZY = {
    name or module.rpartition(".")[2]: (module, name)
    for module, names in _FROM.items()
    for name in names
}


def __getattr__(name: str) -> object:
    """A public name, imported when first read (``_FROM``), then kept as a module global."""
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
    "intercept",
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
