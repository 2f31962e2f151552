"""faultdeck: record an agent's boundary calls once, replay them offline, rehearse failures.

The pipeline, one way::

    a call ─► normalize ─► key ─┬─ record: run live ─► redact ─► cassette (one line)
                                └─ replay: cassette ─► per-key FIFO queue ─► answer
                                                   └─ no answer ─► ReplayMiss
    every call ─► the deck's log ─► report()

Start with ``Deck``::

    import faultdeck as fd

    with fd.Deck("runs/base.jsonl", mode="record") as deck:
        hits = deck.call("tool", "search_docs", {"q": "retry"}, lambda: search_docs("retry"))
"""

from ._canonical import canonical, make_key
from ._cassette import Entry, Header, Recording, load
from ._clock import Clock, SystemClock, VirtualClock
from ._config import Settings, load_settings
from ._deck import Deck
from ._errors import (
    ArgumentError,
    BadToolCall,
    BoundaryError,
    CassetteCorrupt,
    CassetteError,
    CassetteLocked,
    CassetteNotFound,
    CassetteVersionError,
    CassetteWarning,
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
from ._normalize import NormalizeConfig
from ._redact import Redactor
from ._report import CallRecord, CallRef, Repeat, Report

__version__ = "0.1.0"

__all__ = [
    "ArgumentError",
    "BadToolCall",
    "BoundaryError",
    "CallRecord",
    "CallRef",
    "CassetteCorrupt",
    "CassetteError",
    "CassetteLocked",
    "CassetteNotFound",
    "CassetteVersionError",
    "CassetteWarning",
    "Clock",
    "ConfigError",
    "Deck",
    "Entry",
    "FaultdeckError",
    "FaultdeckWarning",
    "HarnessChanged",
    "Header",
    "NormalizeConfig",
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
    "VirtualClock",
    "__version__",
    "canonical",
    "load",
    "load_settings",
    "make_key",
]
