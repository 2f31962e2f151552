"""The kinds that change a tool's result, the call succeeding, as ``FaultKind`` fields:
``tool_result`` (a value set, corrupted, dropped, duplicated, cut short or stale at a JSON
path) and ``injection`` (an instruction carried in a string); how they change it is
``_results``'s."""

from __future__ import annotations

from typing import Any

from ._checks import REQUIRED, one_of, text
from ._results import (
    INJECTED,
    RESULT_ACTIONS,
    change_result,
    inject,
    injection_label,
    json_path,
    json_value,
    result_label,
)

RESULT_KINDS: tuple[dict[str, Any], ...] = (
    {
        "name": "tool_result",
        "summary": "the tool's result is wrong but valid: a value set, corrupted, dropped, "
        "duplicated, cut short or stale, at a JSON path",
        "params": {
            "action": (one_of(RESULT_ACTIONS), REQUIRED),
            "path": (json_path, None),
            "value": (json_value, None),
        },
        "applies_to": frozenset({"tool"}),
        "error": None,
        "label": result_label,
        "mcp": None,
        "alter": change_result,
    },
    {
        "name": "injection",
        "summary": "a string in the tool's result carries an instruction to the model",
        "params": {"text": (text, INJECTED), "path": (json_path, None)},
        "applies_to": frozenset({"tool"}),
        "error": None,
        "label": injection_label,
        "rehearse": (("injection", lambda p: {}),),
        "mcp": None,
        "alter": inject,
    },
)
"""The kinds that change a tool's result, the call succeeding, as ``FaultKind`` fields
(``_kinds.KINDS`` holds them after ``malformed_result``)."""
