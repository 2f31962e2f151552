"""faultdeck: record an agent's boundary calls once, replay them offline, rehearse failures.

The pipeline, one way::

    a call ─► normalize ─► key ─┬─ record: run live ─► redact ─► cassette (one line)
                                └─ replay: cassette ─► per-key FIFO queue ─► answer
                                                   └─ no answer ─► ReplayMiss
    fault plan ─► (per call) raise, delay, or pass ─┘
    every call ─► the deck's log ─► report(), and with a loop's outcomes ─► check()

A loop's degradation policy is a value (``Policy``); ``run_steps`` follows it; ``check``
judges any loop's outcomes against the invariants; ``diff`` compares two runs' call paths.

Start with ``Deck``::

    import faultdeck as fd

    with fd.Deck("runs/base.jsonl", mode="record") as deck:
        hits = deck.call("tool", "search_docs", {"q": "retry"}, lambda: search_docs("retry"))
"""

from . import faults, http, testing
from ._base.clock import Clock, SystemClock, VirtualClock
from ._base.config import Settings, load_settings
from ._base.context import current_step, step
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
    SideEffectBlocked,
    TransientError,
)
from ._cassette.reader import Entry, Header, Recording, load
from ._deck.deck import Deck
from ._deck.report import CallRecord, CallRef, Repeat, Report
from ._diff.align import CallPathDiff, diff_recordings
from ._judge.invariants import INVARIANTS, Violation, check
from ._judge.policy import Outcome, Policy, run_steps
from ._keys.canonical import canonical, make_key
from ._keys.normalize import NormalizeConfig
from ._keys.redact import Redactor
from .faults._fault import Fault, FaultPlan

__version__ = "0.1.0"

__all__ = [
    "ArgumentError",
    "BadToolCall",
    "BoundaryError",
    "CallInDoubt",
    "CallPathDiff",
    "CallRecord",
    "CallRef",
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
    "Entry",
    "Fault",
    "FaultPlan",
    "FaultdeckError",
    "FaultdeckWarning",
    "HarnessChanged",
    "Header",
    "INVARIANTS",
    "NormalizeConfig",
    "Outcome",
    "Policy",
    "ProcessKilled",
    "QuotaExhausted",
    "RecordedError",
    "Recording",
    "Redactor",
    "Repeat",
    "ReplayMiss",
    "Report",
    "Settings",
    "SideEffectBlocked",
    "SystemClock",
    "TransientError",
    "Violation",
    "VirtualClock",
    "__version__",
    "canonical",
    "check",
    "current_step",
    "diff_recordings",
    "faults",
    "http",
    "load",
    "load_settings",
    "make_key",
    "run_steps",
    "step",
    "testing",
]
