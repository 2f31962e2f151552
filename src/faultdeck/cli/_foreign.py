"""Programs that are not Python: the command serves their deck through a proxy.

A Node agent, or any binary, cannot open a deck; but its SDK reads a base-URL variable
(``OPENAI_BASE_URL``, …). ``foreign_deck`` builds here the deck the ``FAULTDECK_*``
variables describe (``built_from_env``, as ``Deck.from_env()`` does), serves it on 127.0.0.1
for the child's lifetime, a path prefix per provider, and gives the child the variables
that point its SDKs there: ``/openai/v1/chat/completions`` goes through
``httpx2.Client(transport=Transport(deck))`` as ``https://api.openai.com/v1/chat/completions``
with the child's headers. So it is the call, key, redaction, fault and stored answer that
the same request from a Python program makes; the answer goes back as the transport gives
it, a stream chunk by chunk as it comes (``_foreign_http``, the proxy's HTTP side).
``is_python`` says which programs need none of it.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import shutil
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import SplitResult, urlsplit

import click

from .._deck.deck import Deck
from .._deck.environ import built_from_env, write_report

if TYPE_CHECKING:
    from http.server import ThreadingHTTPServer

    import httpx2

_PYTHON = re.compile(r"python(\d+(\.\d+)*)?")  # python, python3, python3.11
_RUNNERS = {"uv": "run", "poetry": "run"}  # `uv run CMD` runs CMD in the project's venv
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")  # env's NAME=value


def is_python(command: Sequence[str]) -> bool:
    """Whether ``command`` runs Python, and so opens its own deck.

    It does when its program (found on ``PATH``, links followed) is named ``python``,
    ``python3``, ``python3.11``…, or is this interpreter (``sys.executable``); or is a script
    whose ``#!`` line does (``#!/usr/bin/env python3``); or is ``env``, ``uv run`` or
    ``poetry run`` followed (past options and ``NAME=value``) by such a program, or for the
    last two by a ``.py`` file; or is ``pipx run``, which runs nothing but Python packages.
    Anything else (``node``, ``npx``, a binary, ``bash run.sh``) is served through the proxy.
    """
    return _is_python(command, follow=True)


def _is_python(command: Sequence[str], *, follow: bool) -> bool:
    """``is_python``; ``follow``: a script's ``#!`` line is read (not that of the program
    it names: two scripts that name each other would go round forever)."""
    if not command:
        return False
    program, rest = os.path.basename(command[0]), list(command[1:])
    if program == "pipx":
        return rest[:1] == ["run"]
    if program in _RUNNERS:
        return rest[:1] == [_RUNNERS[program]] and _runs_python(rest[1:], True, follow)
    if program == "env":
        return _runs_python(rest, False, follow)
    found = shutil.which(command[0])
    real = os.path.realpath(found) if found else ""
    if real and real == os.path.realpath(sys.executable):
        return True
    if any(_PYTHON.fullmatch(os.path.basename(p).removesuffix(".exe")) for p in (program, real)):
        return True
    if not (follow and real):
        return False
    try:
        with open(real, "rb") as fh:
            first = fh.readline(512)
    except OSError:
        return False
    shebang = first[2:].decode("utf-8", "replace").split() if first[:2] == b"#!" else []
    return _is_python(shebang, follow=False)


def _runs_python(words: Sequence[str], scripts: bool, follow: bool) -> bool:
    """Whether the command in ``words``, past a runner's options and ``env``'s
    ``NAME=value``, is Python (with ``scripts``, a ``.py`` file counts). A word right after
    an option may be the option's value (``--with httpx``): then the next word decides."""
    after_option = False
    for word in words:
        if word.startswith("-"):
            after_option = "=" not in word
        elif _ASSIGNMENT.match(word):
            after_option = False
        elif _is_python([word], follow=follow) or (scripts and word.endswith(".py")):
            return True
        elif after_option:
            after_option = False
        else:
            return False
    return False


@dataclass(frozen=True, slots=True)
class Provider:
    """A base-URL variable an SDK reads, and where its calls go when it is unset.

    Attributes:
        variable: the environment variable.
        prefix: the proxy's first path segment for it (``openai``: ``/openai/v1/…``).
        default: the upstream when the variable is unset or empty.
        bare_port: a value without a scheme is ``host[:port]`` over ``http`` (as the SDK
            reads ``OLLAMA_HOST``), on this port when it names none; ``None``: it is not a URL.
    """

    variable: str
    prefix: str
    default: str
    bare_port: int | None = None

    def upstream(self, value: str) -> str | None:
        """The upstream base URL ``value`` names, ``default`` when it is empty, ``None``
        when it is not an ``http(s)`` URL."""
        text = value.strip() or self.default
        if self.bare_port is not None and "://" not in text:
            text = "http://" + ("127.0.0.1" + text if text.startswith(":") else text)
            parts = urlsplit(text)
            if _is_url(parts) and parts.port is None:
                text = parts._replace(netloc=f"{parts.netloc}:{self.bare_port}").geturl()
        return text if _is_url(urlsplit(text)) else None


def _is_url(parts: SplitResult) -> bool:
    try:
        parts.port  # noqa: B018 - read to check it: a port that is not a number raises
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname)


PROVIDERS = (
    Provider("OPENAI_BASE_URL", "openai", "https://api.openai.com/v1"),
    Provider("ANTHROPIC_BASE_URL", "anthropic", "https://api.anthropic.com"),
    Provider("GROQ_BASE_URL", "groq", "https://api.groq.com"),
    Provider("GOOGLE_GEMINI_BASE_URL", "gemini", "https://generativelanguage.googleapis.com/"),
    Provider("OLLAMA_HOST", "ollama", "http://127.0.0.1:11434", bare_port=11434),
)
"""The variables the official SDKs read (docs/cli.md, *Programs that are not Python*)."""

LINGER = 5.0
"""How long, once the program has exited, a request still in flight may take to end (it
only can once the program has left mid-answer) before the deck is closed anyway."""


@functools.cache
def _say_once(line: str) -> None:
    # Once per command: `replay --repeat 50` runs the program 50 times with the same value.
    print(f"faultdeck: warning: {line}", file=sys.stderr)


class Served:
    """A deck served to a program that is not Python, for one run: the proxy starts taking
    requests as this is made.

    Attributes:
        deck: the deck, built from the ``FAULTDECK_*`` variables.
        client: the client every request goes through (its transport: ``Transport(deck)``).
        routes: each provider's upstream base URL, by its path prefix on the proxy.
        env: the variables that point the program's SDKs at the proxy.
    """

    def __init__(self, deck: Deck, client: httpx2.Client, routes: Mapping[str, str]) -> None:
        from ._foreign_http import proxy  # http.server: imported for no Python program

        self.deck = deck
        self.client = client
        self.routes = routes
        self.finished = False
        self._relayed = threading.Condition()
        self._in_flight = 0
        self._server: ThreadingHTTPServer | None = proxy(self)
        host, port = self._server.server_address[:2]
        self.env = {
            p.variable: f"http://{host!s}:{port}/{p.prefix}{urlsplit(routes[p.prefix]).path}"
            for p in PROVIDERS
            if p.prefix in routes
        }
        serve = self._server.serve_forever
        threading.Thread(target=serve, name="faultdeck-proxy", daemon=True).start()

    def target(self, path: str) -> str | None:
        """The upstream URL for the proxy path ``path`` (``/openai/v1/…?q``), if routed."""
        prefix, _, rest = path.lstrip("/").partition("/")
        if (base := self.routes.get(prefix)) is None:
            return None
        parts = urlsplit(base)
        return f"{parts.scheme}://{parts.netloc}/{rest}"

    def finish(self, code: int) -> None:
        """The program exited with ``code``: stop serving, close the deck (``ok`` when
        ``code`` is 0, else ``error``) and write its report to ``FAULTDECK_REPORT``."""
        self.stop()
        self.finished = True
        report = self.deck.environ.get("FAULTDECK_REPORT")
        write_report(self.deck, "ok" if code == 0 else "error", report)

    def stop(self) -> None:
        """Stop taking requests (once), and let those in flight end (``LINGER`` at most)."""
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
            with self._relayed:  # their calls are in the report, not stored after it
                self._relayed.wait_for(lambda: not self._in_flight, timeout=LINGER)

    @contextlib.contextmanager
    def relaying(self) -> Iterator[None]:
        """A request in flight, for ``stop`` to wait for."""
        with self._relayed:
            self._in_flight += 1
        try:
            yield
        finally:
            with self._relayed:
                self._in_flight -= 1
                self._relayed.notify_all()


@contextlib.contextmanager
def foreign_deck(env: Mapping[str, str]) -> Iterator[Served]:
    """Serve the deck the ``FAULTDECK_*`` variables in ``env`` describe to a program that
    is not Python: ``served.env`` holds the base-URL variables to give it, ``served.finish``
    ends the run. Left without ``finish`` (the program could not start, or the command was
    interrupted), the deck is closed as failed and no report is written.

    Raises:
        click.ClickException: httpx2 is not installed.
        FaultdeckError: the deck cannot be built or opened (as ``Deck.from_env()``).
    """
    try:
        import httpx2

        from ..http import Transport
    except ImportError as exc:
        raise click.ClickException(
            f"a program that is not Python is recorded through a proxy that needs {exc.name}: "
            "pip install 'faultdeck[http]'"
        ) from None
    deck = built_from_env(Deck, env, {})
    served: Served | None = None
    try:
        routes = _routes(env, deck)
        # trust_env=False: a proxy named by HTTPS_PROXY would be mounted ahead of the deck.
        client = httpx2.Client(
            transport=Transport(deck, httpx=httpx2),
            trust_env=False,
            timeout=httpx2.Timeout(None, connect=10.0),
        )
        served = Served(deck, client, routes)
        yield served
    finally:
        if served is not None:
            served.stop()
            served.client.close()
        if served is None or not served.finished:
            deck.close("error")


def _routes(env: Mapping[str, str], deck: Deck) -> dict[str, str]:
    """Each provider's upstream base URL by prefix; a variable that is not a URL is said
    once on stderr and its provider left unserved (the SDK meets the value as it is)."""
    routes: dict[str, str] = {}
    for provider in PROVIDERS:
        value = env.get(provider.variable, "")
        if (upstream := provider.upstream(value)) is not None:
            routes[provider.prefix] = upstream
            continue
        shown = deck.redactor.redact_text(value.strip())
        scheme, _, rest = shown.rpartition("://")
        _say_once(
            f"{provider.variable}={shown} is not an http(s) URL, so the program's calls "
            "through it go as they are, neither recorded nor replayed; set it to one, e.g. "
            f"{provider.variable}={'https' if scheme else 'http'}://{rest}"
        )
    return routes
