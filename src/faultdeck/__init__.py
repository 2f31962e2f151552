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
    edges       http (the SDKs' transports), cli, pytest_plugin, testing, demo

Every edge (the HTTP transport as much as ``Deck.call``) makes its calls through the one
seam, ``Deck.begin`` and the ``Call`` it returns.

Start with ``Deck``::

    import faultdeck as fd

    with fd.Deck("runs/base.jsonl", mode="record") as deck:
        hits = deck.call("tool", "search_docs", {"q": "retry"}, lambda: search_docs("retry"))
"""

from . import faults, http, testing
from ._base.clock import Clock, SystemClock, VirtualClock
from ._base.config import (
    Durability,
    Latency,
    Match,
    Mode,
    OnHarnessChange,
    OnInDoubt,
    Repeats,
    Settings,
    load_settings,
)
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
    SchemaChanged,
    SideEffectBlocked,
    StaleCassette,
    TransientError,
)
from ._cassette.extract import extract, extract_json
from ._cassette.format import Intent
from ._cassette.reader import Entry, Header, Recording, load
from ._deck.call import Call
from ._deck.deck import Deck
from ._deck.report import CallRecord, CallRef, Repeat, Report
from ._diff.align import CallPathDiff, Change, Row, diff_recordings
from ._diff.drift import Drift, Ending, compare_drift
from ._diff.fork import Forked
from ._diff.render import diff_html, diff_json, diff_text
from ._judge.invariants import INVARIANTS, Violation, check
from ._judge.policy import Outcome, Policy, run_steps
from ._judge.sdk_errors import classify_error
from ._keys.canonical import canonical, make_key
from ._keys.normalize import NormalizeConfig
from ._keys.redact import Finding, Redactor
from ._rehearse.command import rehearse_command
from ._rehearse.inprocess import rehearse
from ._rehearse.matrix import FAULT_MENU, REPLAY_ROW, Cell, Matrix
from ._rehearse.redteam import Redteam, redteam
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
    "Drift",
    "Durability",
    "Ending",
    "Entry",
    "FAULT_MENU",
    "Fault",
    "FaultPlan",
    "FaultdeckError",
    "FaultdeckWarning",
    "Finding",
    "Forked",
    "HarnessChanged",
    "Header",
    "INVARIANTS",
    "Intent",
    "Latency",
    "Match",
    "Matrix",
    "Mode",
    "NormalizeConfig",
    "OnHarnessChange",
    "OnInDoubt",
    "Outcome",
    "Policy",
    "ProcessKilled",
    "QuotaExhausted",
    "REPLAY_ROW",
    "RecordedError",
    "Recording",
    "Redactor",
    "Redteam",
    "Repeat",
    "Repeats",
    "ReplayMiss",
    "Report",
    "Row",
    "SchemaChanged",
    "Settings",
    "SideEffectBlocked",
    "StaleCassette",
    "SystemClock",
    "TransientError",
    "Violation",
    "VirtualClock",
    "__version__",
    "canonical",
    "check",
    "classify_error",
    "compare_drift",
    "current_step",
    "diff_html",
    "diff_json",
    "diff_recordings",
    "diff_text",
    "extract",
    "extract_json",
    "faults",
    "http",
    "load",
    "load_settings",
    "make_key",
    "matrix_json",
    "matrix_summary",
    "matrix_table",
    "redteam",
    "rehearse",
    "rehearse_command",
    "run_steps",
    "step",
    "testing",
]
