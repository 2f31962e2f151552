"""Which provider a model request goes to, by its route, its host and the SDK that sent it.

``ENDPOINTS`` (in ``_shapes``) names a request by the end of its path alone: that is how
OpenAI's and Anthropic's own APIs, and every OpenAI-compatible server (vLLM, LM Studio,
Ollama's ``/v1``), are known, all of them ``openai.chat.completions`` and the like. The
rows of ``ROUTES`` come first and say more: a path that only one provider uses (Azure
OpenAI's ``/openai/deployments/{deployment}/…``), or a path many use that a host
(``api.mistral.ai``, ``api.groq.com``) or an SDK's ``user-agent`` (mistralai's) gives to
one provider. The first row that matches names the call; a request no row matches falls
through to ``ENDPOINTS``.

A call's name is ``<provider>.<api>``; its wire format (what faults and the misbehaviour
catalogue key on) is read off the name by ``faultdeck.faults.wire_of``: Azure's, Groq's,
OpenRouter's… chat completions speak OpenAI's wire, so each gets OpenAI's faults unless
its provider has its own shapes.

To add a provider, add a ``Route`` row here: ``path`` a regex the whole path must match
(``[^/]+`` for a segment that varies), ``hosts`` the host names it answers at (a leading
``.`` for any subdomain), ``agents`` words of its SDK's ``user-agent``; a row with hosts
or agents matches only a request that has one of them. Rows that share a path but differ
by host go before rows that do not name a host. If the provider speaks another's wire,
add its prefix to ``faultdeck.faults``' ``WIRE_OF``.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class Route:
    """One way a model request is known.

    Attributes:
        name: the call's name (``azure.chat.completions``).
        path: a regex the request's whole path matches.
        hosts: host names that make the request this provider's (``.example.com``: that
            domain and its subdomains); none: any host.
        agents: words of the ``user-agent`` that make it this provider's, where no host
            does (a local server the SDK points at).
        method: the request's method.
    """

    name: str
    path: str
    hosts: tuple[str, ...] = ()
    agents: tuple[str, ...] = ()
    method: str = "POST"
    regex: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "regex", re.compile(self.path))

    def matches(self, method: str, path: str, host: str, agent: str) -> bool:
        """Whether a request of ``method`` to ``path`` at ``host`` from ``agent`` is this."""
        if method != self.method or self.regex.fullmatch(path) is None:
            return False
        if not self.hosts and not self.agents:
            return True
        return any(_at(host, h) for h in self.hosts) or any(a in agent for a in self.agents)


def _at(host: str, wanted: str) -> bool:
    return host == wanted.lstrip(".") or (wanted.startswith(".") and host.endswith(wanted))


_AZURE_HOSTS = (".openai.azure.com", ".cognitiveservices.azure.com", ".services.ai.azure.com")
_AZURE = r"(?:/.*)?/openai/deployments/[^/]+"
_MISTRAL = (("api.mistral.ai", "codestral.mistral.ai"), ("mistral-client-python",))


def _compatible(provider: str, prefix: str, *hosts: str) -> tuple[Route, ...]:
    """An OpenAI-compatible provider's routes under ``prefix``, named after it at its hosts."""
    return (
        Route(f"{provider}.chat.completions", f"{prefix}/chat/completions", hosts),
        Route(f"{provider}.responses", f"{prefix}/responses", hosts),
        Route(f"{provider}.embeddings", f"{prefix}/embeddings", hosts),
        Route(f"{provider}.completions", f"{prefix}/completions", hosts),
    )


ROUTES: tuple[Route, ...] = (
    # AWS Bedrock Runtime: the model id is in the path (with its slashes and colons).
    Route("bedrock.converse", r"/model/.+/converse"),
    Route("bedrock.converse_stream", r"/model/.+/converse-stream"),
    Route("bedrock.invoke_model", r"/model/.+/invoke"),
    Route("bedrock.invoke_model_stream", r"/model/.+/invoke-with-response-stream"),
    # Azure OpenAI: a deployment's path (the api-version query stays in the key), or the
    # v1 API at an Azure host.
    Route("azure.chat.completions", _AZURE + "/chat/completions"),
    Route("azure.embeddings", _AZURE + "/embeddings"),
    Route("azure.completions", _AZURE + "/completions"),
    Route("azure.responses", r"(?:/.*)?/openai/(?:deployments/[^/]+/)?responses"),
    *_compatible("azure", r"(?:/.*)?/openai/v1", *_AZURE_HOSTS),
    # Mistral: OpenAI's routes, told apart by host or by its SDK.
    Route("mistral.chat.completions", r"(?:/.*)?/v1/chat/completions", *_MISTRAL),
    Route("mistral.fim.completions", r"(?:/.*)?/v1/fim/completions", *_MISTRAL),
    Route("mistral.embeddings", r"(?:/.*)?/v1/embeddings", *_MISTRAL),
    # OpenAI-compatible services named after themselves at their hosts.
    *_compatible("groq", r"/openai/v1", "api.groq.com"),
    *_compatible("openrouter", r"/api/v1", "openrouter.ai"),
    *_compatible("together", r"/v1", "api.together.xyz", "api.together.ai"),
    *_compatible("fireworks", r"/inference/v1", "api.fireworks.ai"),
    *_compatible("deepseek", r"(?:/v1)?", "api.deepseek.com"),
)
"""The provider routes, first match wins; ``ENDPOINTS`` names what none matches."""


def sender_of(headers: Any) -> tuple[str | None, str | None]:
    """A request's ``Host`` and ``user-agent`` headers, in one pass over httpx's (and
    httpx2's) raw headers, as ``request_args`` reads them (a lookup by name scans them all,
    each time); through ``get`` for other headers."""
    triples = getattr(headers, "_list", None)
    if triples is None:
        return headers.get("host"), headers.get("user-agent")
    host = agent = None
    for _, low, value in triples:
        if low == b"host":
            host = value.decode("latin-1")
        elif low == b"user-agent":
            agent = value.decode("latin-1")
    return host, agent


def host_of(header: str | None, fallback: str) -> str:
    """The host a request names: its ``Host`` header without the port (a gateway or a
    test may set it apart from the address dialled), else ``fallback``, the URL's."""
    if not header:
        return fallback
    if header.startswith("["):  # an IPv6 address
        return header.partition("]")[0] + "]"
    return header.partition(":")[0]


@functools.lru_cache(maxsize=512)
def route_of(method: str, path: str, host: str | None, agent: str | None) -> str | None:
    """The name of the first route a request matches, or ``None`` (kept for the requests
    a loop sends again and again, as a replay does)."""
    low = (host or "").lower()
    for route in ROUTES:
        if route.matches(method, path, low, agent or ""):
            return route.name
    return None
