"""What the fake model says: a script of turns, and which turn a request is at.

A script is a list of turns; a turn is ``{"text": "…"}`` or ``{"tool_calls": [{"name": …,
"arguments": {…}}, …]}``. A request is at the turn its conversation has reached: the number
of model turns already in it (assistant messages, a run of tool calls counting once), so the
same conversation always gets the same answer, from any number of clients at once. Past the
last turn, the last one answers again. A text may say ``{question}`` (the user's last words)
and ``{tool_result}`` (the last tool result the conversation carries).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from .._base.errors import ConfigError

DEFAULT_TEXT = "A scripted answer to: {question}"
DEFAULT: tuple[dict[str, Any], ...] = ({"text": DEFAULT_TEXT},)
"""The script a fake runs without one: every question gets a one-line answer naming it."""


@dataclass(frozen=True, slots=True)
class Turn:
    """One answer of the script: a text, or tool calls (``(name, arguments)``)."""

    text: str | None
    tool_calls: tuple[tuple[str, dict[str, Any]], ...] = ()


@dataclass(frozen=True, slots=True)
class Asked:
    """What a request's conversation holds that the script reads."""

    turn: int
    question: str
    tool_result: str


def load(path: str | None) -> tuple[Turn, ...]:
    """The script in the JSON file ``path`` (``{"turns": […]}`` or the list itself), or the
    default; a file that is not one is a one-line ``ConfigError`` naming what to fix."""
    if path is None:
        return parse(list(DEFAULT), "the default script")
    try:
        raw = orjson.loads(Path(path).read_bytes())
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such script file; give a JSON file of turns") from None
    except orjson.JSONDecodeError as exc:
        raise ConfigError(f"{path}: not JSON ({exc}); a script is a JSON list of turns") from None
    return parse(raw.get("turns") if isinstance(raw, dict) else raw, path)


def parse(raw: Any, where: str) -> tuple[Turn, ...]:
    """The turns of a script read from ``where``."""
    if not isinstance(raw, list) or not raw:
        raise ConfigError(f'{where}: a script is a non-empty list of turns (or {{"turns": […]}})')
    return tuple(_turn(turn, f"{where}: turns[{i}]") for i, turn in enumerate(raw))


def _turn(raw: Any, where: str) -> Turn:
    shape = '{"text": "…"} or {"tool_calls": [{"name": "…", "arguments": {…}}]}'
    if not isinstance(raw, dict) or len(raw) != 1 or not ({"text", "tool_calls"} & raw.keys()):
        raise ConfigError(f"{where}: a turn is {shape}, not {orjson.dumps(raw).decode()[:60]}")
    if "text" in raw:
        if not isinstance(raw["text"], str):
            raise ConfigError(f"{where}.text: a string, not {type(raw['text']).__name__}")
        return Turn(raw["text"])
    calls = raw["tool_calls"]
    if not isinstance(calls, list) or not calls:
        raise ConfigError(f"{where}.tool_calls: a non-empty list of {shape[20:]}")
    found = []
    for i, call in enumerate(calls):
        at = f"{where}.tool_calls[{i}]"
        if not isinstance(call, dict) or not isinstance(call.get("name"), str) or not call["name"]:
            raise ConfigError(f"{at}: needs a name (a string)")
        arguments = call.get("arguments", {})
        if not isinstance(arguments, dict):
            raise ConfigError(f"{at}.arguments: a JSON object, not {type(arguments).__name__}")
        found.append((call["name"], arguments))
    return Turn(None, tuple(found))


def answer(script: tuple[Turn, ...], asked: Asked) -> Turn:
    """The turn that answers a conversation at ``asked.turn``, its text filled in."""
    turn = script[min(asked.turn, len(script) - 1)]
    if turn.text is None:
        return turn
    text = turn.text.replace("{question}", asked.question)
    return Turn(text.replace("{tool_result}", asked.tool_result))


def _text(content: Any) -> str:
    """The text of a message's content: a string, or the text of its parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = (_text(p.get("text", p.get("content"))) for p in content if isinstance(p, dict))
        return " ".join(p for p in parts if p)
    return ""


def asked_chat(messages: list[Any]) -> Asked:
    """A Chat Completions or Anthropic Messages conversation, as the script reads it."""
    turn, question, result = 0, "", ""
    for message in messages:
        if not isinstance(message, dict):
            continue
        role, content = message.get("role"), message.get("content")
        if role == "assistant":
            turn += 1
        elif role == "tool":
            result = _text(content)
        elif role == "user":
            blocks = content if isinstance(content, list) else []
            results = [b for b in blocks if isinstance(b, dict) and b.get("type") == "tool_result"]
            if results:
                result = _text(results[-1].get("content"))
            else:
                question = _text(content)
    return Asked(turn, question, result)


def asked_responses(items: Any, earlier: int) -> Asked:
    """A Responses API input, as the script reads it; ``earlier``: the turns of the
    conversation its ``previous_response_id`` continues."""
    if isinstance(items, str):
        return Asked(earlier, items, "")
    turn, question, result, in_turn = earlier, "", "", False
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict):
            continue
        kind, role = item.get("type", "message"), item.get("role")
        said = kind == "function_call" or (kind == "message" and role == "assistant")
        if said and not in_turn:
            turn += 1
        in_turn = said
        if kind == "function_call_output":
            result = _text(item.get("output"))
        elif role == "user":
            question = _text(item.get("content"))
    return Asked(turn, question, result)
