"""What a program sees of each kind of fault, surface by surface: the words behind
``faultdeck faults`` and the fault table of docs/rehearsal.md.

``SHOWS[kind][surface]`` says, in a few words, what a program at that surface meets when
the fault lands: the exception its SDK raises (the installed SDK's own class, as its
``_make_status_error`` maps the status), the fields of a 200 the fault broke, or that
nothing is raised. Each was seen through ``fd.http.Transport`` with the SDK's retries off.
A kind names every surface its ``applies_to`` reaches (a ``model`` call: the three SDK
APIs; ``http``: a plain HTTP client; ``tool``: a tool called in-process and an MCP client)
and no other; ``tool`` only where what the kind's ``error`` raises does not say it all
(``_catalogue`` reads the rest off the error). ``PARAMS`` says what a parameter means where
its name and what it takes do not. Plain words, no markup: the terminal shows them as they
are. A kind added to ``_kinds`` gets its entry here; tests/faults/test_catalogue.py fails,
naming it, until it has one.
"""

from __future__ import annotations

from collections.abc import Mapping

from ._gemini import WORDS as GEMINI

_MCP_ERROR = "MCPError (-32603) carrying the fault's message"
_CLOSED = (
    "MCPError CONNECTION_CLOSED (-32000) here and at every later request of the session; "
    "faultdeck mcp serve exits"
)
_KILLED = "fd.ProcessKilled (a BaseException) out of the call"
_FIRST_LATE = "no error: the answer (a stream: its first event) comes ms later on the deck's clock"
_LATE = "no error: the answer comes ms later on the deck's clock"


def _sdks(openai: str, anthropic: str) -> dict[str, str]:
    """The three SDK surfaces: OpenAI's two APIs alike, Anthropic's Messages."""
    return {"openai.chat": openai, "openai.responses": openai, "anthropic.messages": anthropic}


SHOWS: Mapping[str, Mapping[str, str]] = {
    "quota": {
        **_sdks(
            "openai.RateLimitError: 429, error.code is code; retry-after and retry-after-ms "
            "when retry_after is set",
            "anthropic.RateLimitError: 429 rate_limit_error (code is not sent); retry-after "
            "when retry_after is set",
        ),
        "http": "a 429 answer, an OpenAI-shaped error body; Retry-After when retry_after is set",
        "tool": "fd.QuotaExhausted: status 429, retry_after and code as given",
        "mcp": _MCP_ERROR,
    },
    "timeout": {
        **_sdks(
            "openai.APITimeoutError, from a read timeout",
            "anthropic.APITimeoutError, from a read timeout",
        ),
        "http": "the client's read timeout: httpx ReadTimeout, requests ReadTimeout, urllib3 "
        "ReadTimeoutError, urllib TimeoutError, aiohttp ServerTimeoutError",
        "mcp": "MCPError REQUEST_TIMEOUT (-32001) once the client's read timeout has passed; "
        "faultdeck mcp serve does not answer",
    },
    "transient": {
        **_sdks(
            "openai.InternalServerError for 5xx (529 too); another status its own class "
            "(429: RateLimitError, 409: ConflictError)",
            "anthropic.ServiceUnavailableError for 503, OverloadedError for 529 "
            "(overloaded_error), InternalServerError or a subclass for other 5xx",
        ),
        "http": "an answer with that status and a JSON error body",
        "tool": "fd.TransientError with the status; code overloaded for 529, else server_error",
        "mcp": _MCP_ERROR,
    },
    "bad_tool_call": {
        "openai.chat": "a 200 whose first tool call breaks the schema its request sent: "
        "function.arguments lacks a required field, has a wrong type or an extra one, an "
        "enum value outside it, is no object or no JSON; unknown_tool renames it, "
        "duplicate_id adds a second call with its id; a stream's every delta agrees",
        "openai.responses": "a 200 whose first function_call item breaks the schema, in "
        "the deltas, the .done events and response.completed alike (get_final_response() "
        "sees it); duplicate_id: the stream helper's RuntimeError (conflicting ids)",
        "anthropic.messages": "a 200 whose first tool_use block's input breaks the schema "
        "(no object or no JSON: input is that string or list as it is; strict validation "
        "refuses it); unknown_tool renames it in every event",
    },
    "length_stop": {
        "openai.chat": "a 200 cut inside its first tool call: finish_reason length, the "
        "arguments cut to half; the stream helper's get_final_completion() raises "
        "openai.LengthFinishReasonError",
        "openai.responses": "status incomplete (max_output_tokens), the call's arguments "
        "cut; a stream ends in response.incomplete, get_final_response() raises",
        "anthropic.messages": "stop_reason max_tokens; the tool_use input keeps the "
        "properties that fit whole",
    },
    "slow_first_token": _sdks(_FIRST_LATE, _FIRST_LATE),
    "latency": {
        **_sdks(_LATE, _LATE),
        "http": _LATE,
        "tool": "no error: the result comes ms later on the deck's clock",
        "mcp": "no error: the result comes ms later on the deck's clock",
    },
    "crash": {
        **_sdks(_KILLED, _KILLED),
        "http": _KILLED,
        "mcp": "faultdeck.mcp.Client raises fd.ProcessKilled; faultdeck mcp serve exits at "
        "once, its cassette left unfinished",
    },
    "reset": {
        **_sdks(
            "openai.APIConnectionError, from a connection reset",
            "anthropic.APIConnectionError, from a connection reset",
        ),
        "http": "the client's connection error: httpx ReadError, requests ConnectionError, "
        "urllib3 ProtocolError, urllib ConnectionResetError, aiohttp ClientOSError",
        "mcp": _CLOSED,
    },
    "stream_cut": {
        **_sdks(
            "openai.APIConnectionError while iterating, after N events (after=N); "
            "how=error_event: openai.APIError with the provider's message",
            "anthropic.APIConnectionError while iterating, after N events (after=N); "
            "how=error_event: anthropic.APIStatusError: Overloaded",
        ),
        "http": "the body ends early: httpx RemoteProtocolError, requests "
        "ChunkedEncodingError, aiohttp ClientPayloadError; how=error_event: an error event, "
        "then the end",
    },
    "malformed_stream": {
        **_sdks(
            "json.JSONDecodeError (a ValueError) from the SDK's parser, after the first event",
            "nothing: the SDK skips the bad event (it names no event type); the stream reads whole",
        ),
        "http": "an event whose data is not JSON, after the first; the client's parser decides",
    },
    "tool_error": {
        "mcp": "a CallToolResult with isError true and the message as its text; nothing raised",
    },
    "malformed_result": {
        "mcp": "with an outputSchema, the SDK's RuntimeError (no structured content); "
        "without, pydantic's ValidationError",
    },
    "disconnect": {"mcp": _CLOSED},
    "tool_result": {
        "tool": "no error: the result, changed at its JSON path (set, corrupt, drop, "
        "duplicate, truncate or stale), comes back as the tool's",
        "mcp": "a CallToolResult changed at the path (structuredContent, and the text that "
        "holds the same JSON); nothing raised",
    },
    "injection": {
        "tool": "no error: a string of the result ends with the injected instruction",
        "mcp": "a CallToolResult whose text (or structuredContent string) carries the "
        "instruction; nothing raised",
    },
    "empty_answer": {
        "openai.chat": 'a 200: message.content "", no tool call, finish_reason stop',
        "openai.responses": "a 200: one message whose output_text is empty",
        "anthropic.messages": "a 200: content [], stop_reason end_turn",
    },
    "refusal": {
        "openai.chat": "a 200: message.refusal is the text, content null",
        "openai.responses": "a 200: a refusal content item holding the text",
        "anthropic.messages": 'a 200: stop_reason "refusal", the text in '
        "stop_details.explanation, no content",
    },
    "content_filter": {
        "openai.chat": "a 200: finish_reason content_filter, the tool calls gone; the "
        "stream helper raises openai.ContentFilterFinishReasonError",
        "openai.responses": "status incomplete (content_filter), the function calls gone; a "
        "stream ends in response.incomplete",
        "anthropic.messages": 'stop_reason "refusal" (its only policy stop), the tool_use '
        "blocks gone",
    },
    "reasoning_only": {
        "openai.chat": "none: a chat completion has no reasoning (a one-line ConfigError)",
        "openai.responses": "a 200 whose output holds one reasoning item, no message",
        "anthropic.messages": "a 200 holding one signed thinking block, end_turn",
    },
    "stale_answer": {
        "openai.chat": "a 200: the answer the run's previous call of this name got, again, "
        "id and all (the first such call gets its own)",
        "openai.responses": "the previous answer of this call name, again",
        "anthropic.messages": "the previous answer of this call name, again",
    },
    "html_error": {
        "openai.chat": "a text/html page: 5xx is openai.InternalServerError (retried); 200 "
        "hands the program the page as a str (APIResponseValidationError under strict "
        "validation)",
        "openai.responses": "as openai.chat: InternalServerError for a 5xx, the page as a "
        "str for a 200",
        "anthropic.messages": "a 5xx is the anthropic status error of that code; a 200 "
        "the page as a str",
        "http": "the page, text/html, with the status",
    },
}
"""Each kind's surfaces, by kind name: what a program there sees."""
# A provider's words are kept with its shapes, one surface each.
SHOWS = {
    kind: {**words, "gemini": GEMINI[kind]} if kind in GEMINI else words
    for kind, words in SHOWS.items()
}

PARAMS: Mapping[str, Mapping[str, str]] = {
    "quota": {
        "code": "the provider's error code; insufficient_quota: no wait helps, never retried",
        "retry_after": "seconds the answer asks to wait; unset: no Retry-After",
    },
    "transient": {"status": "the answer's HTTP status"},
    "bad_tool_call": {"how": "how the tool call breaks the schema its request sent"},
    "slow_first_token": {"ms": "milliseconds before the first token"},
    "latency": {"ms": "milliseconds added to the call"},
    "stream_cut": {
        "after": "events that get through first",
        "how": "cut: the connection drops; error_event: the provider's error event",
    },
    "tool_error": {"message": "the error text the tool reports"},
}
"""What a parameter means, by kind and parameter name, where it needs saying."""
