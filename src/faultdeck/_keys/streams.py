"""Streams carry their text in pieces, one delta per event: a secret split across events is
masked on the text the pieces join into, and the pieces rewritten to agree with it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from .secrets import Span, mask

_MAX_ROUNDS = 16
_LINE_TEXTS = (("message", "content"), ("message", "thinking"), ("response",))
"""Where a JSON-lines stream's objects (Ollama's, which say whether they are ``done``)
carry their pieces of text: no ``delta`` names them."""


def mask_split_text(stream: dict[str, Any], spans: Callable[[str], list[Span]]) -> dict[str, Any]:
    """``stream`` with each run of text deltas masked as the text it joins into (a copy,
    when anything changes).

    Args:
        stream: a stored stream, ``{"events": [...], …}``.
        spans: where the secrets are in a text (the redactor's shapes and patterns).
    """
    groups = _text_pieces(stream["events"])
    if not any(spans("".join(t for _, _, t in pieces)) for pieces in groups.values()):
        return stream
    stream = orjson.loads(orjson.dumps(stream))  # rewritten below; the caller's stays
    for pieces in _text_pieces(stream["events"]).values():
        texts = [t for _, _, t in pieces]
        for _ in range(_MAX_ROUNDS):
            joined = "".join(texts)
            found = spans(joined)
            if not found:
                break
            texts = _split_masked(joined, found, [len(t) for t in texts])
        for (holder, field, _), text in zip(pieces, texts, strict=True):
            holder[field] = text
    return stream


# A piece of streamed text: the object that holds it, its field, and the text.
_Piece = tuple[Any, Any, str]


def _text_pieces(events: list[Any]) -> dict[tuple[Any, ...], list[_Piece]]:
    """The pieces of streamed text in ``events``, grouped into the texts they join into.

    A piece is a string at a path through a ``delta`` (``choices[0].delta.content``,
    ``delta.text``, ``delta.partial_json``, a Responses ``delta``), or an event's whole data
    when it is plain text. Pieces of one text share the event name, the data's ``type`` and
    the path.
    """
    groups: dict[tuple[Any, ...], list[_Piece]] = {}
    for event in events:
        if type(event) is not dict:
            continue
        data = event.get("data")
        name = event.get("event")
        if type(data) is str:
            groups.setdefault((name, None), []).append((event, "data", data))
        elif type(data) is dict:
            kind = data.get("type")
            _collect(data, (name, kind), False, groups)
            if "done" in data:
                _line_texts(data, groups)
    return groups


def _line_texts(data: dict[str, Any], groups: dict[tuple[Any, ...], list[_Piece]]) -> None:
    """The pieces of text of one JSON line (``_LINE_TEXTS``)."""
    for path in _LINE_TEXTS:
        holder: Any = data
        for key in path[:-1]:
            holder = holder.get(key) if type(holder) is dict else None
        if type(holder) is dict and type(holder.get(path[-1])) is str:
            groups.setdefault(("lines", *path), []).append((holder, path[-1], holder[path[-1]]))


def _collect(
    value: Any, path: tuple[Any, ...], in_delta: bool, groups: dict[tuple[Any, ...], list[_Piece]]
) -> None:
    items = value.items() if type(value) is dict else enumerate(value)
    for k, v in items:
        cls = type(v)
        if cls is str:
            if in_delta or k == "delta":
                groups.setdefault((*path, k), []).append((value, k, v))
        elif cls is dict or cls is list:
            _collect(v, (*path, k), in_delta or k == "delta", groups)


def _split_masked(joined: str, spans: list[Span], lengths: list[int]) -> list[str]:
    """Pieces of ``joined`` (of these lengths) with ``spans`` masked: each mask goes in the
    piece where its secret starts, the rest of the secret is cut from the pieces after, so
    the pieces join into ``apply_masks(joined, spans)``."""
    out: list[str] = []
    lo = 0
    for length in lengths:
        hi = lo + length
        parts: list[str] = []
        pos = lo
        for _, start, end in spans:
            if end <= lo or start >= hi:
                continue
            parts.append(joined[pos : max(start, lo)])
            if start >= lo:
                parts.append(mask(joined[start:end]))
            pos = min(end, hi)
        parts.append(joined[pos:hi])
        out.append("".join(parts))
        lo = hi
    return out
