"""The kinds of fault, one object each, in one table that every consumer reads.

A ``FaultKind`` says all there is to know of a kind: the parameters it takes, the call
kinds it can happen at, the error an in-process call raises, and how the HTTP boundary
shows it (a provider's error response standing in for the call, a transport error, a real
answer broken, a stream broken off), its label, and the rows it brings to a rehearsal's
matrix. The deck, the HTTP transport and the rehearsal read ``KINDS``; nothing else decides
what a kind does. What a program sees of each kind, per wire format (``shows``), is written
in ``_shows`` and joined here; ``_catalogue`` lists it all (``faultdeck faults``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Literal, Protocol

from .._base.errors import BadToolCall, ProcessKilled, QuotaExhausted, TransientError
from .._base.words import plural
from . import _results as results
from ._answers import ANSWER_KINDS
from ._checks import (
    REQUIRED,
    Spec,
    int_from,
    milliseconds,
    one_of,
    optional_seconds,
    shown,
    status,
    text,
)
from ._result_kinds import RESULT_KINDS
from ._shapes import Params, quota_response, transient_response
from ._shows import SHOWS
from ._tool_answers import break_answer
from ._tool_calls import HOWS, how_of, length_stop
from ._tool_calls import how as how_named
from ._tool_streams import break_events

BAD_TOOL_CALL_HOWS = tuple(HOWS)
"""The ways ``bad_tool_call`` breaks a tool call, simplest first (the old names
``missing_field`` and ``unparseable`` are accepted too)."""
_CALLS = frozenset({"model", "tool", "http"})  # every call that reaches a server
_EVERY = frozenset({"model", "tool", "env", "http"})
_STREAMED = frozenset({"model", "http"})
_TOOLS = frozenset({"tool"})


class Judged(Protocol):
    """What a rehearsal row reads of the policy it is judged by."""

    @property
    def max_retry_after(self) -> float: ...

    @property
    def slow_first_token_ms(self) -> float: ...


_SDKS = ("openai.chat", "openai.responses", "anthropic.messages", "gemini")
SURFACES = (*_SDKS, "http", "tool", "mcp")
"""Where a program meets a fault (``FaultKind.shows``): an SDK's API, a plain HTTP client, a
tool called in-process, an MCP client."""

McpShape = Literal["error_result", "timeout", "malformed", "disconnect", "error"]
"""How an MCP session shows a fault (``FaultKind.mcp``)."""

Response = tuple[int, dict[str, str], Any]
"""A provider's answer: status, headers, JSON body."""


@dataclass(frozen=True, slots=True)
class StreamBreak:
    """How a stream breaks: after ``after`` events, ``cut`` (the connection drops),
    ``error_event`` (the provider sends ``event: error`` and stops) or ``malformed`` (an
    event that does not parse, the stream going on)."""

    after: int
    how: Literal["cut", "error_event", "malformed"]


@dataclass(frozen=True, slots=True)
class FaultKind:
    """One kind of fault.

    Attributes:
        name: the kind's name in plans and factories (``quota``).
        summary: what it rehearses, for people.
        params: the parameters it takes: name -> (checker, default).
        applies_to: the call kinds it can happen at (no provider sends a quota error to an
            environment read).
        error: the exception an in-process call raises; ``None`` for a kind that only
            delays the call, or changes its result.
        label: a short label for matrices and messages, from the parameters.
        respond: at the HTTP boundary, the provider's response that stands in for the call.
        transport: at the HTTP boundary, the transport error raised instead (``timeout``
            for a read timeout, ``reset`` for a dropped connection).
        answer: at the HTTP boundary, how it breaks a real answer's JSON body: from its
            parameters, the call's name, the body, and the JSON body the request sent
            (``None`` when it sent none), whose tool schemas a broken tool call breaks.
        events: at the HTTP boundary, how it breaks a real stream's events: as ``answer``,
            with the events in place of the body.
        stream_break: at the HTTP boundary, how it breaks a stream off.
        mcp: how an MCP session shows it (``faultdeck.mcp`` and ``faultdeck mcp serve``):
            ``error_result`` (a tool result with ``isError: true``), ``timeout`` (no answer
            within the client's timeout), ``malformed`` (a result that breaks the tool's
            ``outputSchema``, or an invalid one), ``disconnect`` (the server goes away), or
            ``error`` (an MCP error response carrying the fault's message); ``None`` for a
            kind that only delays the call, changes its result, or kills the process.
        rehearse: the rows it brings to the full rehearsal matrix: (label, its parameters
            from the judging policy); each row runs at the calls the kind applies to.
        kills: the process dies at the call; a rehearsal restarts it and judges the restart.
        network: it comes from a service over the network (a quota, a 5xx, a timeout, a
            reset): it happens at model and http calls, and at a tool only when the tool
            reaches a service (``remote``); a local tool gets tool faults only.
        shows: what a program sees of it, in a few words, per surface (``SURFACES``) it can
            reach; from ``_shows.SHOWS`` unless the kind brings its own.
        alter: how it changes a tool's result, the call succeeding (``_results.py``):
            ``(params, result, previous result)`` to the result changed, or why it is not.
    """

    name: str
    summary: str
    params: Spec
    applies_to: frozenset[str]
    error: Callable[[Params], BaseException] | None
    label: Callable[[Params], str]
    respond: Callable[[Params, str], Response] | None = None
    transport: Literal["timeout", "reset"] | None = None
    answer: Callable[[Params, str, Any, Any], Any] | None = None
    events: Callable[[Params, str, list[dict[str, Any]], Any], list[dict[str, Any]]] | None = None
    stream_break: Callable[[Params], StreamBreak] | None = None
    rehearse: tuple[tuple[str, Callable[[Judged], dict[str, Any]]], ...] = ()
    kills: bool = False
    mcp: McpShape | None = "error"
    network: bool = False
    shows: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    alter: Callable[[Params, Any, Any], results.Altered] | None = None

    @property
    def delays(self) -> bool:
        """Whether it only slows the call down (the call succeeds)."""
        return self.error is None and self.alter is None

    @property
    def needs_stream(self) -> bool:
        """Whether it breaks a stream off, and so can only happen where an answer streams."""
        return self.stream_break is not None

    def applies(self, kind: str, *, streamed: bool, remote: bool = False) -> bool:
        """Whether it can happen at a call of boundary kind ``kind`` (whose answer streamed,
        or not; for a tool, that reaches a service, or not): a rehearsal's full matrix runs
        it only there."""
        if self.network and kind == "tool" and not remote:
            return False
        return kind in self.applies_to and (streamed or not self.needs_stream)

    @property
    def shapes_answers(self) -> bool:
        """Whether the HTTP boundary puts it into the real answer rather than in its place."""
        return self.answer is not None or self.stream_break is not None


def num(value: float) -> str:
    """``2`` reads better than ``2.0`` in messages and labels; a fraction is kept."""
    return str(int(value)) if float(value).is_integer() else str(value)


def _quota_error(p: Params) -> BaseException:
    retry_after = p.get("retry_after")
    wait = "no Retry-After" if retry_after is None else f"retry after {num(retry_after)}s"
    return QuotaExhausted(
        f"injected quota fault: {p['code']}, {wait}",
        status=429,
        retry_after=retry_after,
        code=p["code"],
    )


def _quota_label(p: Params) -> str:
    parts = []
    if p["code"] != "rate_limit_exceeded":
        parts.append(str(p["code"]))
    if p.get("retry_after") is not None:
        parts.append(f"retry_after={num(p['retry_after'])}")
    return f"quota({', '.join(parts)})" if parts else "quota"


def _transient_error(p: Params) -> BaseException:
    code = "overloaded" if p["status"] == 529 else "server_error"
    return TransientError(
        f"injected transient fault: HTTP {p['status']} ({code})", status=p["status"], code=code
    )


def _bad_call_error(p: Params) -> BaseException:
    text = how_named(p["how"]).text
    return BadToolCall(f"injected bad tool call ({p['how']}): {text}", code=p["how"])


def _transient(code: str, message: str) -> Callable[[Params], BaseException]:
    return lambda p: TransientError(message.format(**p), code=code)


def _named(label: str) -> Callable[[Params], str]:
    return lambda p: label


_KINDS = (
    FaultKind(
        "quota",
        "a quota or rate limit says no: HTTP 429, with or without Retry-After",
        {"code": (text, "rate_limit_exceeded"), "retry_after": (optional_seconds, None)},
        _CALLS,
        _quota_error,
        _quota_label,
        respond=quota_response,
        rehearse=(
            ("quota retry-after", lambda p: {"retry_after": min(2.0, p.max_retry_after)}),
            ("quota no header", lambda p: {}),
            ("quota non-retryable", lambda p: {"code": "insufficient_quota"}),
        ),
        network=True,
    ),
    FaultKind(
        "timeout",
        "no answer in time",
        {},
        _CALLS,
        lambda p: TransientError("injected timeout: no answer in time", code="timeout"),
        _named("timeout"),
        transport="timeout",
        rehearse=(("timeout", lambda p: {}),),
        mcp="timeout",
        network=True,
    ),
    FaultKind(
        "transient",
        "a server error that may pass: 5xx, or 529 overloaded",
        {"status": (status, 503)},
        _CALLS,
        _transient_error,
        lambda p: f"transient({p['status']})",
        respond=transient_response,
        rehearse=(
            ("transient 503", lambda p: {"status": 503}),
            ("transient 529", lambda p: {"status": 529}),
        ),
        network=True,
    ),
    FaultKind(
        "bad_tool_call",
        "the model's tool call breaks its JSON schema, inside a 200",
        {"how": (how_of, "missing_required")},
        frozenset({"model"}),
        _bad_call_error,
        lambda p: f"bad_tool_call({p['how']})",
        answer=lambda p, name, body, sent: break_answer(name, body, sent, how_named(p["how"])),
        events=lambda p, name, events, sent: break_events(name, events, sent, how_named(p["how"])),
        rehearse=(("bad tool call", lambda p: {}),),
    ),
    FaultKind(
        "length_stop",
        "the answer runs out of tokens inside a tool call: its arguments cut, inside a 200",
        {},
        frozenset({"model"}),
        lambda p: BadToolCall(
            "injected length stop: the answer ran out of tokens inside a tool call, its "
            "arguments cut",
            code="length",
        ),
        _named("length_stop"),
        answer=lambda p, name, body, sent: break_answer(name, body, sent, length_stop),
        events=lambda p, name, events, sent: break_events(name, events, sent, length_stop),
    ),
    FaultKind(
        "slow_first_token",
        "the answer (its first token) comes late; the call succeeds",
        {"ms": (milliseconds, REQUIRED)},
        frozenset({"model"}),
        None,
        lambda p: f"slow_first_token({num(p['ms'])}ms)",
        rehearse=(("slow first token", lambda p: {"ms": p.slow_first_token_ms + 500}),),
        mcp=None,
    ),
    FaultKind(
        "latency",
        "the whole call takes longer; it succeeds",
        {"ms": (milliseconds, REQUIRED)},
        _CALLS,
        None,
        lambda p: f"latency({num(p['ms'])}ms)",
        # Slow, yet under the slow-first-token threshold: nothing to retry, nothing to shed.
        rehearse=(("latency", lambda p: {"ms": p.slow_first_token_ms / 2}),),
        mcp=None,
    ),
    FaultKind(
        "crash",
        "the process dies at this call",
        {},
        _EVERY,
        lambda p: ProcessKilled("injected crash: the process dies at this call"),
        _named("crash"),
        rehearse=(("crash", lambda p: {}),),
        kills=True,
        mcp=None,
    ),
    FaultKind(
        "reset",
        "the peer drops the connection",
        {},
        _CALLS,
        _transient("connection_reset", "injected connection reset: the peer closed the connection"),
        _named("reset"),
        transport="reset",
        rehearse=(("reset", lambda p: {}),),
        mcp="disconnect",
        network=True,
    ),
    FaultKind(
        "stream_cut",
        "a streamed answer stops after some events",
        {"after": (int_from(0), 1), "how": (one_of(("cut", "error_event")), "cut")},
        _STREAMED,
        lambda p: TransientError(
            f"injected stream cut: the stream ended after {plural(p['after'], 'event')}",
            code="stream_cut",
        ),
        lambda p: f"stream_cut(after={p['after']})",
        stream_break=lambda p: StreamBreak(p["after"], p["how"]),
        rehearse=(("stream cut", lambda p: {}),),
    ),
    FaultKind(
        "malformed_stream",
        "a stream event cannot be parsed",
        {},
        _STREAMED,
        _transient("malformed_stream", "injected malformed stream: an event could not be parsed"),
        _named("malformed_stream"),
        stream_break=lambda p: StreamBreak(1, "malformed"),
        rehearse=(("malformed stream", lambda p: {}),),
    ),
    FaultKind(
        "tool_error",
        "the tool runs and reports an error: an MCP result with isError true",
        {"message": (text, "the tool failed")},
        _TOOLS,
        lambda p: TransientError(f"injected tool error: {p['message']}", code="tool_error"),
        lambda p: (
            "tool_error"
            if p["message"] == "the tool failed"
            else f"tool_error({shown(p['message'])})"
        ),
        rehearse=(("tool error", lambda p: {}),),
        mcp="error_result",
    ),
    FaultKind(
        "malformed_result",
        "the tool's result breaks its outputSchema, or is no valid result at all",
        {},
        _TOOLS,
        _transient(
            "malformed_result", "injected malformed result: the tool's result breaks its schema"
        ),
        _named("malformed_result"),
        rehearse=(("malformed result", lambda p: {}),),
        mcp="malformed",
    ),
    *(FaultKind(**fields) for fields in RESULT_KINDS),
    FaultKind(
        "disconnect",
        "the tool's server goes away mid-session",
        {},
        _TOOLS,
        _transient("disconnected", "injected disconnect: the server went away mid-session"),
        _named("disconnect"),
        rehearse=(("disconnect", lambda p: {}),),
        mcp="disconnect",
        network=True,
    ),
    # The model misbehaving inside a real answer, per wire format, and a proxy's HTML page.
    *(FaultKind(**fields) for fields in ANSWER_KINDS),
)

KINDS: Mapping[str, FaultKind] = {
    kind.name: kind if kind.shows else replace(kind, shows=SHOWS.get(kind.name, {}))
    for kind in _KINDS
}
"""Every kind of fault, by name, in the order plans and matrices list them."""


def kills(kind: str | None) -> bool:
    """Whether the fault kind ``kind`` (a call record's ``fault``) kills the process."""
    found = KINDS.get(kind) if kind is not None else None
    return found is not None and found.kills


FAULT_KINDS = tuple(KINDS)
"""The names of every kind of fault."""
