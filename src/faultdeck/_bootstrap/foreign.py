"""Programs that are not Python: their deck is served to them through a proxy.

A Node agent, or any binary, cannot open a deck; but its SDK reads a base-URL variable
(``OPENAI_BASE_URL``, …). Every command runs such a program as
``python -m faultdeck._bootstrap.foreign PROGRAM ARGS`` (``_base/bootstrap.started``): this
process builds the deck the ``FAULTDECK_*`` variables describe (``built_from_env``, as
``Deck.from_env()`` does), serves it on 127.0.0.1 for the program's lifetime, a path prefix
per provider, and starts the program with the variables that point its SDKs there:
``/openai/v1/chat/completions`` goes through ``httpx2.Client(transport=Transport(deck))`` as
``https://api.openai.com/v1/chat/completions`` with the program's headers. So it is the
call, key, redaction, fault and stored answer that the same request from a Python program
makes; the answer goes back as the transport gives it, a stream chunk by chunk as it comes
(``foreign_http``, the proxy's HTTP side). A crash fault kills the program, as it would
have died mid-run; this process exits with the program's code. On a virtual clock a Node
program's waits take no real time and are the waits the deck judges (``ProgramClock``).
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import SplitResult, urlsplit

from .._base.clock import VirtualClock
from .._base.errors import ConfigError, FaultdeckError
from .._deck.deck import Deck
from .._deck.environ import built_from_env, write_report

if TYPE_CHECKING:
    from http.server import ThreadingHTTPServer

    import httpx2


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
    # Once per run: the variables are read once, but the line stays one if that changes.
    print(f"faultdeck: warning: {line}", file=sys.stderr)


class Served:
    """A deck served to a program that is not Python, for one run: the proxy starts taking
    requests as this is made.

    Attributes:
        deck: the deck, built from the ``FAULTDECK_*`` variables.
        client: the client every request goes through (its transport: ``Transport(deck)``).
        routes: each provider's upstream base URL, by its path prefix on the proxy.
        env: the variables that point the program's SDKs at the proxy (and, on a virtual
            clock, that load its Node clock).
    """

    def __init__(
        self,
        deck: Deck,
        client: httpx2.Client,
        routes: Mapping[str, str],
        clock: ProgramClock | None = None,
    ) -> None:
        from .foreign_http import proxy

        self.deck = deck
        self.client = client
        self.routes = routes
        self.clock = clock
        self.finished = False
        self.program: subprocess.Popen[bytes] | None = None
        self._relayed = threading.Condition()
        self._in_flight = 0
        self._server: ThreadingHTTPServer | None = proxy(self)
        host, port = self._server.server_address[:2]
        self.env = {
            p.variable: f"http://{host!s}:{port}/{p.prefix}{urlsplit(routes[p.prefix]).path}"
            for p in PROVIDERS
            if p.prefix in routes
        }
        if clock is not None:
            self.env.update(clock.env)
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

    def kill(self) -> None:
        """A crash fault: the program dies at this call, as a process killed mid-run."""
        if self.program is not None:
            self.program.kill()

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
        """A request in flight, for ``stop`` to wait for; the program's waits before it are
        put on the deck's clock first."""
        if self.clock is not None:
            self.clock.catch_up()
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
        ConfigError: httpx2 is not installed.
        FaultdeckError: the deck cannot be built or opened (as ``Deck.from_env()``).
    """
    try:
        import httpx2

        from ..http import Transport
    except ImportError as exc:
        raise ConfigError(
            f"a program that is not Python is recorded through a proxy that needs {exc.name}: "
            "pip install 'faultdeck[http]'"
        ) from None
    deck = built_from_env(Deck, env, {})
    served: Served | None = None
    try:
        routes = _routes(env, deck)
        transport = Transport(deck, httpx=httpx2)
        # trust_env=False: a proxy named by HTTPS_PROXY would be mounted ahead of the deck.
        client = httpx2.Client(
            transport=transport, trust_env=False, timeout=httpx2.Timeout(None, connect=10.0)
        )
        with tempfile.TemporaryDirectory(prefix="faultdeck-clock-") as folder:
            clock = None
            if isinstance(deck.clock, VirtualClock):
                clock = ProgramClock(deck.clock, transport, folder, env.get("NODE_OPTIONS", ""))
            served = Served(deck, client, routes, clock)
            try:
                yield served
            finally:
                served.stop()
                served.client.close()
    finally:
        if served is None or not served.finished:
            deck.close("error")


CLOCK_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "clock.cjs")
"""The Node program's clock on a virtual clock (its waits, and how they reach the deck,
are told at its top)."""


class ProgramClock:
    """A Node program's time on the deck's virtual clock: ``clock.cjs``, loaded into it by
    ``NODE_OPTIONS``, makes its waits take no real time and tells each one in a file, which
    ``catch_up`` reads onto the deck's clock before each request is relayed. Once the
    program is heard from, its SDK's retries are no longer inferred (``Transport``)."""

    def __init__(self, clock: VirtualClock, transport: Any, folder: str, node_options: str) -> None:
        self.clock = clock
        self.transport = transport
        self.path = os.path.join(folder, "slept")
        open(self.path, "wb").close()
        self.env = {
            "FAULTDECK_SLEPT": self.path,
            "NODE_OPTIONS": f'{node_options} --require "{CLOCK_SCRIPT}"'.strip(),
        }
        self._read = 0
        self._lock = threading.Lock()

    def catch_up(self) -> None:
        """Put the waits told since the last call on the deck's clock, in order."""
        with self._lock, open(self.path, "rb") as fh:
            fh.seek(self._read)
            told = fh.read()
            whole = told.rfind(b"\n") + 1  # a line still being written waits for the next
            self._read += whole
            for line in told[:whole].split():
                if line == b"node":
                    self.transport.program_keeps_clock = True
                else:
                    self.clock.sleep(float(line) / 1000)


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


def main(command: Sequence[str]) -> int:
    """Run ``command`` with its deck served to it, and return its exit code (``128 + n``
    when signal ``n`` ended it); a deck that cannot be built is one line on stderr and 2,
    before the program starts."""
    try:
        with foreign_deck(os.environ) as served:
            try:
                program = subprocess.Popen(list(command), env={**os.environ, **served.env})
            except OSError as exc:
                raise ConfigError(f"cannot run {command[0]}: {exc.strerror}") from None
            served.program = program
            # Ctrl-C reaches the program too: it decides how to end, and its calls are kept.
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            code = program.wait()
            served.finish(code)
    except FaultdeckError as exc:
        sys.stderr.write(f"faultdeck: {exc}\n")
        return 2
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
