"""Where a result fault (``tool_result``, ``injection``) looks in an MCP tool result.

A ``tools/call`` result carries what the tool returned twice over, or once: its
``structuredContent`` (a tool with an ``outputSchema``), and its ``content``, whose text
blocks the host hands the model. The fault's JSON path is read in the structured content
when there is some (as the tool's ``outputSchema`` describes it: ``$.result`` for a tool
the SDK's servers wrap), and every text block that holds the same JSON, or the one value
the structured content wraps (``{"result": "sunny"}`` and the text ``sunny``), is written
again from the changed value, so the two agree; without structured content the path is
read in the first text block: the JSON object or list it holds, or the text itself. Other
requests (listings, reads, prompts) hold no tool result: a result fault there never lands
(the call's record names no fault).
"""

from __future__ import annotations

import json
from typing import Any

from ..faults._results import NONE, View


def _text_blocks(answer: dict[str, Any]) -> list[int]:
    """The positions of the answer's text content blocks."""
    content = answer.get("content")
    if not isinstance(content, list):
        return []
    return [
        i
        for i, block in enumerate(content)
        if isinstance(block, dict)
        and block.get("type") == "text"
        and isinstance(block.get("text"), str)
    ]


def _parsed(text: str) -> Any:
    """The JSON object or list ``text`` holds, else ``text`` itself."""
    try:
        value = json.loads(text)
    except ValueError:
        return text
    return value if isinstance(value, (dict, list)) else text


def _written(value: Any, like: str) -> str:
    """``value`` as a text block holds it: a string as it is, JSON otherwise (indented
    when the text it replaces was, as the SDK's servers write it)."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, indent=2 if "\n" in like else None)


def _read(answer: Any) -> Any:
    if not isinstance(answer, dict):
        return NONE
    structured = answer.get("structuredContent")
    if structured is not None:
        return structured
    blocks = _text_blocks(answer)
    return _parsed(answer["content"][blocks[0]]["text"]) if blocks else NONE


def _wrapped(structured: Any) -> str | None:
    """The one key of structured content that wraps a value the text gives as it is (the
    SDK's servers send a tool's ``str`` as ``{"result": "…"}`` and the text), else ``None``."""
    if isinstance(structured, dict) and len(structured) == 1:
        (key,) = structured
        return str(key)
    return None


def _write(answer: dict[str, Any], changed: Any) -> dict[str, Any]:
    structured = answer.get("structuredContent")
    content = list(answer.get("content") or [])
    out = {**answer, "content": content}
    if structured is None:
        mirrors = [(i, changed) for i in _text_blocks(answer)[:1]]
    else:
        out["structuredContent"] = changed
        key = _wrapped(structured)
        inner = (
            changed[key]
            if key is not None and isinstance(changed, dict) and key in changed
            else changed
        )
        mirrors = []
        for i in _text_blocks(answer):
            said = _parsed(content[i]["text"])
            if said == structured:
                mirrors.append((i, changed))
            elif key is not None and said == structured[key]:
                mirrors.append((i, inner))
    for i, value in mirrors:
        content[i] = {**content[i], "text": _written(value, content[i]["text"])}
    return out


TOOL_RESULT = View(_read, _write)
"""A ``tools/call`` result: its structured content, else its first text block."""

NO_RESULT = View(lambda answer: NONE, lambda answer, changed: answer)
"""Any other request's answer: no tool result in it to change."""
