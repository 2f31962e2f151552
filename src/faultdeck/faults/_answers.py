"""The model misbehaving inside a valid answer, and a proxy's HTML page where JSON was due:
the fault kinds ``empty_answer``, ``refusal``, ``content_filter``, ``reasoning_only``,
``stale_answer`` and ``html_error``, as ``_kinds`` lists them (``ANSWER_KINDS``).

At the HTTP boundary each but ``html_error`` renders inside a real 200 answer, streamed or
not, as the call's wire format shows it (``WIRES``: OpenAI Chat Completions, OpenAI
Responses, Anthropic Messages), so that the SDK parses it as it would parse the real thing.
A misbehaviour asked of a model call whose format cannot show it (a chat completion has no
reasoning; an embedding has no message at all) is a ``ConfigError``, one line naming the
call and the format. Any other call (an ``http`` one) is left as it is, as a bad tool call
leaves an answer that holds no tool call. In-process, where no answer is rendered, each
raises ``TransientError`` with its name as the code, as a loop's own check of the answer
would.

``stale_answer`` gives the run's previous answer to a call of the same name again, as a
stale cache does: the HTTP boundary keeps the last model answer it gave per call name and
hands it to the kind under ``PREVIOUS`` (a stream's events, or a body). The first such call
has no previous answer and gets its own, as recorded; so does a call that runs live (the
boundary keeps only the answers it replays).

``html_error`` stands in for the call (``respond``) with a ``text/html`` page: status 200
(the SDK then hands back the page's text, or refuses it under strict validation) or a 5xx
(the SDK's status error).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from http import HTTPStatus
from typing import Any

from .._base.errors import ConfigError, TransientError
from . import _cohere_wire, _ollama_wire
from ._anthropic_wire import MESSAGES
from ._azure import AZURE_CHAT
from ._bedrock_wire import CONVERSE
from ._checks import _Invalid, shown, text
from ._formats import Event, Wire
from ._gemini_wire import GEMINI
from ._mistral import MISTRAL_CHAT
from ._openai_wire import CHAT, RESPONSES
from ._shapes import silent_about, wire_of

Params = Mapping[str, Any]

WIRES: Mapping[str, Wire] = {
    "openai.chat.completions": CHAT,
    "openai.responses": RESPONSES,
    "anthropic.messages": MESSAGES,
    "ollama.chat": _ollama_wire.CHAT,
    "ollama.generate": _ollama_wire.GENERATE,
    "cohere.chat": _cohere_wire.CHAT,
    "gemini.generate_content": GEMINI,
    "gemini.stream_generate_content": GEMINI,
    "azure.chat.completions": AZURE_CHAT,
    "mistral.chat.completions": MISTRAL_CHAT,
    "mistral.fim.completions": MISTRAL_CHAT,
    "bedrock.converse": CONVERSE,
    "bedrock.converse_stream": CONVERSE,
}
"""Model call name (as the HTTP boundary names it) -> its wire format; a name not here
speaks the format of its ``wire_of`` name (``groq.chat.completions``: OpenAI's)."""

PREVIOUS = "previous answer"
"""The key under which the HTTP boundary hands a kind the last answer it gave to a call of
the same name: ``("out", body)`` or ``("stream", events)``. No parameter can be named so
(a plan's parameters are checked against the kind's)."""

REFUSAL_TEXT = "I'm sorry, but I can't help with that."
_MODEL = frozenset({"model"})


def wire_named(name: str) -> Wire | None:
    """The wire format of model call ``name``, its own or that of the wire it speaks."""
    return WIRES.get(name) or WIRES.get(wire_of(name))


def _wire(kind: str, name: str) -> Wire | None:
    """The wire format of call ``name`` when it can show ``kind``; ``None`` for a call
    that is no model call of a known format (left as it is).

    Raises:
        ConfigError: a model call whose format cannot show it.
    """
    wire = wire_named(name)
    silent = silent_about(name)
    if wire is not None and kind in wire.shows:
        return wire
    if wire is None and silent is None:
        return None
    title = wire.title if wire is not None else silent
    why = wire.cannot.get(kind, "") if wire is not None else ""
    able = " or ".join(n for n, w in WIRES.items() if kind in w.shows)
    raise ConfigError(
        f"{kind} at {name}: {title} cannot show it{f' ({why})' if why else ''}; "
        f"land it on {able} calls (.on(name=…))"
    )


def _broken_body(kind: str) -> Callable[[Params, str, Any, Any], Any]:
    def answer(params: Params, name: str, body: Any, sent: Any) -> Any:
        wire = _wire(kind, name)
        if wire is None or not wire.holds(body):
            return body
        return wire.shows[kind](params, copy.deepcopy(body))

    return answer


def _broken_events(kind: str) -> Callable[[Params, str, list[Event], Any], list[Event]]:
    def events(params: Params, name: str, recorded: list[Event], sent: Any) -> list[Event]:
        wire = _wire(kind, name)
        body = wire.fold(copy.deepcopy(recorded)) if wire is not None else None
        if wire is None or body is None or not wire.holds(body):
            return recorded
        return wire.unfold(wire.shows[kind](params, body), recorded)

    return events


def _previous(params: Params) -> tuple[str | None, Any]:
    """The last answer given to a call of this name, as ``(form, answer)``; ``(None,
    None)`` when there was none."""
    found: tuple[str, Any] | None = params.get(PREVIOUS)
    return (None, None) if found is None else found


def _stale_body(params: Params, name: str, body: Any, sent: Any) -> Any:
    """The previous answer's body (a stream's folded into one), else ``body``."""
    form, previous = _previous(params)
    if form == "out":
        return previous
    wire = wire_named(name)
    folded = wire.fold(copy.deepcopy(previous)) if wire is not None and form == "stream" else None
    return body if folded is None else folded


def _stale_events(params: Params, name: str, recorded: list[Event], sent: Any) -> list[Event]:
    """The previous answer's events (a body's unfolded as this call's stream), else
    ``recorded``."""
    form, previous = _previous(params)
    if form == "stream":
        return list(previous)
    wire = wire_named(name)
    if form != "out" or wire is None or not wire.holds(previous):
        return recorded
    return wire.unfold(copy.deepcopy(previous), recorded)


def html_status(value: Any) -> int:
    """A checker (``_checks``): the status of an HTML error page, 200 or 500-599."""
    if isinstance(value, bool) or not isinstance(value, int) or not _page_status(value):
        raise _Invalid("200 or an HTTP status of 500-599")
    return value


def _page_status(value: int) -> bool:
    return value == 200 or 500 <= value <= 599


def html_page(params: Params, name: str) -> tuple[int, dict[str, str], str]:
    """What a proxy in front of the provider sends instead of its JSON: an nginx-style
    error page with the status (a 5xx), or a page saying the service is out of reach
    under a 200, as a captive portal or a misconfigured gateway sends one."""
    status = int(params["status"])
    headers = {"content-type": "text/html; charset=utf-8", "server": "nginx"}
    if status == 200:
        title = "Service Unavailable"
        body = "<p>The upstream service could not be reached. Please try again later.</p>"
        page = (
            f"<!DOCTYPE html>\n<html><head><title>{title}</title></head>\n"
            f"<body><h1>{title}</h1>{body}</body></html>\n"
        )
        return status, headers, page
    try:
        line = f"{status} {HTTPStatus(status).phrase}"
    except ValueError:  # a 5xx no standard names
        line = f"{status} Server Error"
    page = (
        f"<html>\r\n<head><title>{line}</title></head>\r\n<body>\r\n<center><h1>{line}</h1>"
        "</center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n"
    )
    return status, headers, page


def _error(code: str, message: str) -> Callable[[Params], BaseException]:
    return lambda p: TransientError(f"injected {message.format(**p)}", code=code)


def _html_error(p: Params) -> BaseException:
    return TransientError(
        f"injected HTML error page: HTTP {p['status']}, text/html where JSON was due",
        status=p["status"],
        code="html_error",
    )


def _named(label: str) -> Callable[[Params], str]:
    return lambda p: label


def _misbehaving(kind: str) -> dict[str, Any]:
    """The fields of a kind the wire formats show (``WIRES``)."""
    return {
        "applies_to": _MODEL,
        "label": _named(kind),
        "answer": _broken_body(kind),
        "events": _broken_events(kind),
    }


ANSWER_KINDS: tuple[dict[str, Any], ...] = (
    {
        **_misbehaving("empty_answer"),
        "name": "empty_answer",
        "summary": "the model answers with nothing, inside a 200",
        "params": {},
        "error": _error("empty_answer", "empty answer: the model answered nothing"),
    },
    {
        **_misbehaving("refusal"),
        "name": "refusal",
        "summary": "the model refuses, in its format's own refusal field, inside a 200",
        "params": {"text": (text, REFUSAL_TEXT)},
        "error": _error("refusal", "refusal: {text}"),
        "label": lambda p: (
            "refusal" if p["text"] == REFUSAL_TEXT else f"refusal({shown(p['text'])})"
        ),
    },
    {
        **_misbehaving("content_filter"),
        "name": "content_filter",
        "summary": "a content filter stops the answer and strips its tool calls, inside a 200",
        "params": {},
        "error": _error("content_filter", "content filter: the answer was filtered"),
    },
    {
        **_misbehaving("reasoning_only"),
        "name": "reasoning_only",
        "summary": "the model only reasons: no message, no tool call, inside a 200",
        "params": {},
        "error": _error("reasoning_only", "reasoning-only answer: no message, no tool call"),
        # No row: at the many calls whose format has no reasoning (chat completions) the
        # fault cannot be shown, and a matrix cell would only say so.
    },
    {
        "name": "stale_answer",
        "summary": "the previous answer to the same call comes again, as a stale cache gives it",
        "params": {},
        "applies_to": _MODEL,
        "error": _error("stale_answer", "stale answer: the previous answer came again"),
        "label": _named("stale_answer"),
        "answer": _stale_body,
        "events": _stale_events,
    },
    {
        "name": "html_error",
        "summary": "a proxy's HTML error page where JSON was due: status 200 or a 5xx",
        "params": {"status": (html_status, 502)},
        "applies_to": frozenset({"model", "http"}),
        "error": _html_error,
        "label": lambda p: f"html_error({p['status']})",
        "respond": html_page,
        "network": True,
    },
)
"""The kinds this module makes, as ``FaultKind`` fields (``_kinds`` builds them)."""
