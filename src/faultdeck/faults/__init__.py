"""Faults to rehearse on top of a replay, and plans that say which calls they land on.

Each factory returns a ``Fault`` that may land on any call; narrow it with ``.at()``,
``.on()``, ``.every()``, ``.random()`` and ``.times()``, each of which returns a new fault::

    from faultdeck import faults

    plan = faults.FaultPlan(
        [
            faults.quota(retry_after=2).at(seq=3),
            faults.timeout().on(kind="tool", name="read_*", nth=2),
            faults.transient(503).every(5).times(2),
            faults.latency(300).random(p=0.1, seed=7),
        ],
        seed=7,
    )
    run = plan.start()          # one per run: the counters behind nth/every/times
    fault = run.pick(faults.CallInfo(seq=3, kind="model", name="chat", key="model:…"))

At each call the first fault in plan order that accepts it wins; see ``FaultRun.pick``.
Plans also load from files with ``FaultPlan.load("plan.json")`` (or ``.toml``). What each
kind does (its error, its HTTP shape, the calls it can happen at) is its ``FaultKind`` in
``KINDS``.
"""

from __future__ import annotations

from typing import Any

from ._answers import REFUSAL_TEXT
from ._fault import CallInfo, Fault, Selector
from ._kinds import BAD_TOOL_CALL_HOWS, FAULT_KINDS, KINDS, FaultKind, Judged, StreamBreak
from ._plan import FaultPlan, FaultRun
from ._planfile import parse_fault
from ._results import INJECTED, RESULT_ACTIONS, FaultNotApplied

# Plain sorted() order, as faultdeck's export tests check, not ruff's isort-style order.
__all__ = [
    "BAD_TOOL_CALL_HOWS",
    "CallInfo",
    "FAULT_KINDS",
    "Fault",
    "FaultKind",
    "FaultNotApplied",
    "FaultPlan",
    "FaultRun",
    "INJECTED",
    "Judged",
    "KINDS",
    "RESULT_ACTIONS",
    "Selector",
    "StreamBreak",
    "bad_tool_call",
    "content_filter",
    "crash",
    "disconnect",
    "empty_answer",
    "from_json",
    "html_error",
    "injection",
    "latency",
    "length_stop",
    "malformed_result",
    "malformed_stream",
    "quota",
    "reasoning_only",
    "refusal",
    "reset",
    "slow_first_token",
    "stale_answer",
    "stream_cut",
    "timeout",
    "tool_error",
    "tool_result",
    "transient",
]


def quota(retry_after: float | None = None, *, code: str = "rate_limit_exceeded") -> Fault:
    """A quota or rate limit says no: ``QuotaExhausted`` with HTTP 429.

    Args:
        retry_after: seconds the server asks the caller to wait; ``None`` sends no
            Retry-After.
        code: the provider's error code; ``insufficient_quota`` means waiting will not help,
            so a loop should stop rather than retry.

    Raises:
        ConfigError: ``retry_after`` is negative or not a number, or ``code`` is empty.
    """
    params = (
        (("code", code),) if retry_after is None else (("code", code), ("retry_after", retry_after))
    )
    return Fault("quota", params)


def timeout() -> Fault:
    """The call gets no answer in time: ``TransientError`` with code ``timeout``; over MCP,
    the client's own timeout error once its read timeout has passed."""
    return Fault("timeout")


def tool_error(message: str = "the tool failed") -> Fault:
    """The tool runs and reports an error: over MCP a result with ``isError: true`` and
    ``message`` as its text; in-process ``TransientError`` with code ``tool_error``.

    Raises:
        ConfigError: ``message`` is empty or not a string.
    """
    return Fault("tool_error", (("message", message),))


def malformed_result() -> Fault:
    """The tool's result is broken: over MCP one that breaks the tool's ``outputSchema``
    (the SDK's validation error), or, for a tool without one, a result that is not valid
    (pydantic's ``ValidationError``); in-process ``TransientError`` with code
    ``malformed_result``."""
    return Fault("malformed_result")


def tool_result(action: str, *, path: str | None = None, value: Any = None) -> Fault:
    """The tool answers, and its result is wrong but valid: the call succeeds and the loop
    gets the result changed at ``path``. No error is raised; over MCP the tool result
    changes (its ``structuredContent`` when it has one, else its text read as JSON).

    Args:
        action: ``set`` (to ``value``), ``corrupt`` (the same content in another JSON
            type), ``drop`` (the key or list item goes), ``duplicate`` (a list item appears
            twice), ``truncate`` (a string, list or object cut to its first half) or
            ``stale`` (the value in the tool's previous answer of this run).
        path: a JSON path into the result: ``$.items[0].price``, ``$.a['b c']``,
            ``$.items[*].id``; the whole result when ``None``.
        value: what ``set`` puts there (null when ``None``); the other actions ignore it.

    A path that names nothing in the result (or a ``stale`` with no earlier answer) leaves
    it as it is, with a ``FaultNotApplied`` warning naming the call.

    Raises:
        ConfigError: an unknown ``action``, a path that is not one, a value JSON cannot hold.
    """
    params: tuple[tuple[str, Any], ...] = (("action", action),)
    if path is not None:
        params += (("path", path),)
    if value is not None:
        params += (("value", value),)
    return Fault("tool_result", params)


def injection(text: str = INJECTED, *, path: str | None = None) -> Fault:
    """A string in the tool's result carries an instruction to the model (a prompt
    injection): ``text`` is appended after a blank line to the string at ``path``, or to
    the first string in the result (depth-first) when ``None``; over MCP, in the
    structured content or the text the model reads. The call succeeds; its record's
    ``fault`` is ``injection``, and ``injection_contained`` judges what the loop does next.

    Raises:
        ConfigError: ``text`` is empty or not a string, or ``path`` is no JSON path.
    """
    params: tuple[tuple[str, Any], ...] = (("text", text),)
    return Fault("injection", params if path is None else (*params, ("path", path)))


def disconnect() -> Fault:
    """The tool's server goes away mid-session: over MCP the SDK's "Connection closed"
    error, at this call and every later one of the session; in-process
    ``TransientError`` with code ``disconnected``."""
    return Fault("disconnect")


def transient(status: int = 503) -> Fault:
    """A server error that may pass: ``TransientError`` with this HTTP status.

    Args:
        status: 408, 409, 425, 429 or 500-599; 529 (overloaded) gets code ``overloaded``,
            the others ``server_error``.

    Raises:
        ConfigError: another status.
    """
    return Fault("transient", (("status", status),))


def bad_tool_call(how: str = "missing_required") -> Fault:
    """The model's tool call breaks the tool's schema: ``BadToolCall`` with ``code=how``.

    At the HTTP boundary the answer's first tool call breaks inside a 200, streamed or not,
    as each provider shows it. The schema is the one the request sent for the tool called.

    Args:
        how: what breaks:

            - ``missing_required``: a required property is missing;
            - ``wrong_type``: a property (the first required one) has a value of a JSON
              type its schema does not allow;
            - ``extra_property``: a property the schema does not have is added;
            - ``enum_mismatch``: a property with an ``enum`` has a value outside it (a
              schema without one cannot show this: ``wrong_type`` stands in);
            - ``not_object``: the arguments are a JSON array, not an object;
            - ``invalid_json`` (cut short), ``invalid_json:trailing_comma``,
              ``invalid_json:single_quotes``: the arguments do not parse;
            - ``unknown_tool``: the call names a tool the request did not offer;
            - ``duplicate_id``: a second call follows the first, the same id and all.

            The first names ``missing_field`` and ``unparseable`` (and
            ``invalid_json:truncated``) still work; a fault keeps the name it was given.

    Raises:
        ConfigError: another ``how``.
    """
    return Fault("bad_tool_call", (("how", how),))


def length_stop() -> Fault:
    """The model runs out of tokens inside its tool call: ``BadToolCall`` with code
    ``length``.

    At the HTTP boundary the answer stops inside its first tool call, the call's arguments
    cut to half, nothing after it: ``finish_reason: length`` (OpenAI Chat Completions),
    ``status: incomplete`` with ``incomplete_details.reason: max_output_tokens`` (OpenAI
    Responses; a stream ends in ``response.incomplete``), ``stop_reason: max_tokens``
    (Anthropic, whose ``input`` keeps the properties that fit whole).
    """
    return Fault("length_stop")


def slow_first_token(ms: float) -> Fault:
    """The answer starts ``ms`` milliseconds late (time to first token); the call succeeds.

    Raises:
        ConfigError: ``ms`` is negative or not a number.
    """
    return Fault("slow_first_token", (("ms", ms),))


def latency(ms: float) -> Fault:
    """The whole call takes ``ms`` milliseconds longer; the call succeeds.

    Raises:
        ConfigError: ``ms`` is negative or not a number.
    """
    return Fault("latency", (("ms", ms),))


def crash() -> Fault:
    """The process dies at this call: ``ProcessKilled``, which ``except Exception`` misses."""
    return Fault("crash")


def reset() -> Fault:
    """The peer drops the connection: ``TransientError`` with code ``connection_reset``."""
    return Fault("reset")


def stream_cut(after: int = 1, *, how: str = "cut") -> Fault:
    """A streamed answer stops after ``after`` events: ``TransientError`` code ``stream_cut``.

    Args:
        after: how many stream events get through before the cut; 0 cuts before the first.
        how: ``cut`` (the connection drops) or ``error_event`` (the provider sends an
            ``event: error``, as Anthropic does when it gives up mid-stream).

    Raises:
        ConfigError: ``after`` is negative or not an integer, or ``how`` is unknown.
    """
    return Fault("stream_cut", (("after", after), ("how", how)))


def malformed_stream() -> Fault:
    """A stream event cannot be parsed: ``TransientError`` with code ``malformed_stream``."""
    return Fault("malformed_stream")


def from_json(obj: Any, *, where: str = "fault") -> Fault:
    """One fault from plan-file syntax (``{"fault": "quota", "retry_after": 2, "at": 3}``),
    as a plan file or a cassette's ``fault`` field holds it.

    Raises:
        ConfigError: naming ``where`` and the field.
    """
    return parse_fault(obj, where)


def empty_answer() -> Fault:
    """The model answers with nothing: at the HTTP boundary a real 200 whose answer is
    empty as its format writes one (a chat completion's ``content: ""`` finishing
    ``stop``, a Responses message with an empty ``output_text``, Anthropic's
    ``content: []`` ending ``end_turn``), streamed or not; in-process ``TransientError``
    with code ``empty_answer``.

    Raises:
        ConfigError: at a model call whose format has no message (an embedding).
    """
    return Fault("empty_answer")


def refusal(text: str = REFUSAL_TEXT) -> Fault:
    """The model refuses, in its format's own refusal field: a chat completion's
    ``message.refusal`` (``content: null``), a Responses ``refusal`` content item,
    Anthropic's ``stop_reason: "refusal"`` (``text`` in ``stop_details.explanation``);
    in-process ``TransientError`` with code ``refusal``.

    Raises:
        ConfigError: ``text`` is empty or not a string; at a model call whose format
            cannot refuse.
    """
    return Fault("refusal", (("text", text),))


def content_filter() -> Fault:
    """A content filter stops the answer and strips its tool calls: a chat completion
    finishing ``content_filter``, a Responses answer ``incomplete`` for ``content_filter``
    without its function calls, an Anthropic message stopping with ``refusal`` (its only
    policy stop) without its ``tool_use`` blocks; in-process ``TransientError`` with code
    ``content_filter``.

    Raises:
        ConfigError: at a model call whose format cannot show it.
    """
    return Fault("content_filter")


def reasoning_only() -> Fault:
    """The model only reasons: a Responses answer holding one ``reasoning`` item, an
    Anthropic message holding one ``thinking`` block; in-process ``TransientError`` with
    code ``reasoning_only``.

    Raises:
        ConfigError: at a model call whose format has no reasoning (a chat completion).
    """
    return Fault("reasoning_only")


def stale_answer() -> Fault:
    """The previous answer to a call of the same name comes again, as a stale cache gives
    it: at the HTTP boundary, on replay, the last model answer the run was given under that
    name, its id and all (a stream's made a body, or a body's a stream, where the forms
    differ); the first such call, which has none before it, gets its own (so does a call
    that runs live). In-process ``TransientError`` with code ``stale_answer``."""
    return Fault("stale_answer")


def html_error(status: int = 502) -> Fault:
    """A proxy's HTML error page where JSON was due, ``text/html`` with this status: under
    a 200 the SDK hands back the page's text where it expected an object (or, with strict
    response validation, raises ``APIResponseValidationError``); under a 5xx it raises its
    status error (``InternalServerError``) and retries. In-process ``TransientError`` with
    code ``html_error``.

    Raises:
        ConfigError: ``status`` is neither 200 nor 500-599.
    """
    return Fault("html_error", (("status", status),))
