"""A model's answer as each wire format writes it, and each misbehaviour as the format shows
it: pure data in, data out.

One ``Wire`` per format (OpenAI Chat Completions, OpenAI Responses, Anthropic Messages)
says what a whole answer looks like (``holds``), how a stream folds into the answer it
carries (``fold``) and how an answer unfolds into the events the provider streams for it
(``unfold``), and how it shows each misbehaviour it can show (``shows``; ``cannot`` says why
it cannot show another). A stream is broken by folding it, breaking the answer and
unfolding that again: every event then agrees with the fault (the deltas, the finish, the
final object), and the SDK's stream helpers build the same answer a non-streamed call gets.
The OpenAI formats are in ``_openai_wire``, Anthropic's in ``_anthropic_wire``; this module
holds what they share, and ``_answers`` the table of them by call name (``WIRES``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

Event = dict[str, Any]
"""A stream event as stored: ``{"ms": …, "event": name?, "data": …}``."""

Body = dict[str, Any]
"""A whole answer's JSON body."""

Show = Callable[[Mapping[str, Any], Body], Body]
"""How a format shows a misbehaviour: (the fault's parameters, a copy of the answer to
change) -> the answer as the misbehaving model gives it."""

REASONING_TEXT = "Let me think this through before I answer."
"""The reasoning a ``reasoning_only`` answer holds (its summary, its thinking)."""


@dataclass(frozen=True, slots=True)
class Wire:
    """One wire format of model answers.

    Attributes:
        title: the format's name for people (``OpenAI Chat Completions``).
        holds: whether a JSON body is a whole answer of this format (a recorded error
            body, or anything else, is left as it is).
        fold: a stream's events -> the whole answer they carry, or ``None`` when they
            carry none (a stream cut before its first event).
        unfold: (an answer, the stream recorded for the call) -> the events the provider
            streams for that answer, each at the time of the recorded event in its place.
        shows: fault kind -> how this format shows it.
        cannot: fault kind -> why this format cannot show it (for the one-line error).
    """

    title: str
    holds: Callable[[Any], bool]
    fold: Callable[[list[Event]], Body | None]
    unfold: Callable[[Body, list[Event]], list[Event]]
    shows: Mapping[str, Show]
    cannot: Mapping[str, str] = field(default_factory=dict)


def timed(events: list[Event], recorded: list[Event]) -> list[Event]:
    """``events`` at the recorded stream's times: the nth at the nth recorded event's
    (those past its end at its last), so that a replay keeps the stream's pace."""
    times = [event.get("ms", 0.0) for event in recorded] or [0.0]
    last = len(times) - 1
    return [{"ms": times[min(i, last)], **event} for i, event in enumerate(events)]


def data_of(events: list[Event]) -> list[dict[str, Any]]:
    """The JSON objects the events carry (``[DONE]`` and other text left out)."""
    return [event["data"] for event in events if isinstance(event.get("data"), dict)]


def item_id(body: Body, prefix: str) -> str:
    """An id for an item the fault adds to an answer, made from the answer's own id
    (``resp_abc`` -> ``rs_abc``), so that a replay gives the same one every time."""
    own = str(body.get("id") or "")
    return f"{prefix}_{own.partition('_')[2] or own or 'faultdeck'}"
