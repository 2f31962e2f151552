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
from ._deck.call import Call
from ._deck.deck import Deck
from ._deck.report import CallRecord, CallRef, Repeat, Report
from ._diff.align import CallPathDiff, Change, Row, diff_recordings
from ._diff.render import diff_html, diff_json, diff_text
from ._judge.invariants import INVARIANTS, Violation, check
from ._judge.policy import Outcome, Policy, run_steps
from ._keys.canonical import canonical, make_key
from ._keys.normalize import NormalizeConfig
from ._keys.redact import Redactor
from ._rehearse.command import rehearse_command
from ._rehearse.inprocess import rehearse
from ._rehearse.matrix import FAULT_MENU, REPLAY_ROW, Cell, Matrix
from ._rehearse.render import matrix_json, matrix_summary, matrix_table
from .faults import Fault, FaultPlan

__version__ = "0.1.0"

__all__ = [
    "ArgumentError",
    "BadToolCall",
    "BoundaryError",
    "Call",
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
    "Cell",
    "Change",
    "Clock",
    "ConfigError",
    "Deck",
    "Entry",
    "FAULT_MENU",
    "Fault",
    "FaultPlan",
    "FaultdeckError",
    "FaultdeckWarning",
    "HarnessChanged",
    "Header",
    "INVARIANTS",
    "Matrix",
    "NormalizeConfig",
    "Outcome",
    "Policy",
    "ProcessKilled",
    "QuotaExhausted",
    "REPLAY_ROW",
    "RecordedError",
    "Recording",
    "Redactor",
    "Repeat",
    "ReplayMiss",
    "Report",
    "Row",
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
    "diff_html",
    "diff_json",
    "diff_recordings",
    "diff_text",
    "faults",
    "http",
    "load",
    "load_settings",
    "make_key",
    "matrix_json",
    "matrix_summary",
    "matrix_table",
    "rehearse",
    "rehearse_command",
    "run_steps",
    "step",
    "testing",
]
