"""``faultdeck serve``: the replay proxy, on a port any agent points its base URL at."""

from __future__ import annotations

import shlex
import signal
import socket
import sys
from pathlib import Path
from typing import cast

import click

from .._base import terms
from .._base.config import MODES, Mode
from ..faults import FaultPlan
from ..server._config import MAX_BODY, SERVED_REPEATS, ServedRepeats
from ._common import cannot_listen, listening

LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})
DEFAULT_PORT = 8765


@click.command()
@click.option(
    "--cassettes",
    type=click.Path(file_okay=False),
    default="cassettes",
    show_default=True,
    help="The folder cassette names resolve in (DIR/NAME.jsonl).",
)
@listening(DEFAULT_PORT)
@click.option(
    "--mode",
    type=click.Choice([m for m in MODES if m != "off"]),
    default="replay",
    show_default=True,
    help="Every cassette's mode: replay never reaches the upstream.",
)
@click.option(
    "--repeats",
    type=click.Choice(SERVED_REPEATS),
    default="cycle",
    show_default=True,
    help="A request asked more often than recorded: cycle its answers from the first "
    "(the program's next run), or strict: a 404 miss (a retry storm).",
)
@click.option("--upstream", help="The provider's origin live calls go to (https://api.openai.com).")
@click.option(
    "--faults",
    "plan",
    type=click.Path(dir_okay=False),
    help="A fault plan (JSON or TOML) for every request.",
)
@click.option(
    "--token",
    envvar="FAULTDECK_TOKEN",
    help="Require this token on every route (X-Faultdeck-Token); default $FAULTDECK_TOKEN.",
)
@click.option(
    "--max-body",
    type=click.IntRange(1),
    default=MAX_BODY,
    show_default=True,
    metavar="BYTES",
    help="The largest request body read; a larger one is a 413.",
)
def serve(  # noqa: PLR0913 - one parameter per option, as click passes them
    cassettes: str,
    host: str,
    port: int,
    mode: str,
    repeats: str,
    upstream: str | None,
    plan: str | None,
    token: str | None,
    max_body: int,
) -> None:
    """Serve cassettes over HTTP: point an SDK's base URL at /c/NAME and it records or
    replays through DIR/NAME.jsonl.

    \b
    faultdeck serve --mode record --upstream https://api.openai.com
    faultdeck serve --cassettes runs --faults plans/quota.json
    faultdeck serve --repeats strict    # asked more than recorded: a 404 miss
    OpenAI base URL: http://127.0.0.1:8765/c/NAME/v1; Anthropic: http://127.0.0.1:8765/c/NAME
    """
    check_reach(host, token)
    if mode != "replay" and not upstream:
        raise click.UsageError(f"--mode {mode} reaches the provider: give --upstream URL")
    try:
        import uvicorn

        from ..server._config import ServerConfig
        from ..server.app import make_app
    except ImportError as exc:
        raise click.ClickException(
            f"faultdeck serve needs {exc.name}: pip install 'faultdeck[server]'"
        ) from None
    config = ServerConfig(
        cassettes=Path(cassettes),
        mode=cast("Mode", mode),  # click.Choice checked it
        upstream=upstream,
        faults=FaultPlan.load(plan) if plan is not None else None,
        token=token,
        max_body=max_body,
        repeats=cast("ServedRepeats", repeats),  # click.Choice checked it
    )
    speak(cassettes, port, upstream)
    app = make_app(config)
    sock = bind(host, port)
    url = base_url(host, sock.getsockname()[1])
    click.echo(f"faultdeck: serving {url} (mode {mode}, cassettes {cassettes})")
    click.echo(f"  OpenAI base URL:    {url}/c/NAME/v1")
    click.echo(f"  Anthropic base URL: {url}/c/NAME")
    sys.stdout.flush()
    # The answers relayed carry the upstream's own headers (``server``, ``date``): uvicorn
    # adds none of its own beside them.
    server = uvicorn.Server(
        uvicorn.Config(
            app,
            log_level="warning",
            access_log=False,
            lifespan="on",
            ws="none",
            server_header=False,
            date_header=False,
        )
    )
    # uvicorn shuts down gracefully on SIGINT and SIGTERM (the cassettes get their end
    # lines), then raises the signal again for the handler it found: this one lets the
    # command end as a clean stop, exit 0.
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, clean_stop)
    server.run(sockets=[sock])


def check_reach(host: str, token: str | None) -> None:
    """Refuse to listen where other machines can reach it without a token."""
    if host not in LOOPBACK and not token:
        raise click.ClickException(
            f"--host {host} is reachable from other machines; "
            "set --token (or FAULTDECK_TOKEN) to serve there"
        )


def speak(cassettes: str, port: int, upstream: str | None) -> None:
    """Hints (a replay miss's, a missing cassette's) name this server in a recording mode,
    on the same folder and port, so the program's base URL stays as it is."""
    where = f"--cassettes {shlex.quote(cassettes)}"
    if port not in (0, DEFAULT_PORT):
        where += f" --port {port}"
    origin = f"--upstream {shlex.quote(upstream) if upstream else 'URL'}"
    modes = ("record", "append", "resume")  # the order of ``Terms``' fields
    terms.use(terms.Terms(*(f"faultdeck serve {where} --mode {m} {origin}" for m in modes)))


def clean_stop(sig: int, frame: object) -> None:
    """The handler uvicorn raises SIGINT or SIGTERM again for once it has shut down: nothing
    is left to do, so the command ends as a clean stop (exit 0)."""


def bind(host: str, port: int) -> socket.socket:
    """A TCP socket listening on ``host:port`` (port 0: a free one), or a one-line error."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise cannot_listen(host, port, exc) from None
    # Listening before the URL is printed: a client that connects at once waits in the
    # backlog until uvicorn accepts, instead of being refused.
    sock.listen(2048)
    return sock


def base_url(host: str, port: int) -> str:
    """``http://host:port``, an IPv6 address in brackets."""
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"
