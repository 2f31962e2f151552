"""``faultdeck mcp serve`` and ``faultdeck mcp record``: a recorded MCP session as a server.

``serve`` answers an MCP host from a cassette (over stdio, or streamable HTTP at ``/mcp``),
with faults from a plan on top; ``record`` is a proxy in front of a real MCP server (a
command run over stdio, or a streamable-HTTP URL) that records every exchange while the
host uses it. The cassette gets its end line when the host goes away (stdio: its stdin
closes) or on SIGINT/SIGTERM; a recording that fails never replaces a good cassette.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import sys
from typing import TYPE_CHECKING, Any, cast

import click

from .._base import terms
from .._base.config import Mode
from .._deck.deck import Deck
from ..faults import FaultPlan
from ._common import check_cassette, listening
from .serve import base_url, bind, check_reach, clean_stop

if TYPE_CHECKING:
    import socket

    from mcp.server.lowlevel import Server

    from ..mcp._session import Session as McpSession

TOKEN_HEADER = "x-faultdeck-token"
RECORD_MODES = ("record", "once", "append", "resume")


@click.group("mcp")
def mcp_group() -> None:
    """Serve a recorded MCP session as a server, or record one through a proxy.

    \b
    faultdeck mcp record runs/tools.jsonl -- python my_server.py
    faultdeck mcp record runs/tools.jsonl --upstream http://127.0.0.1:8000/mcp
    faultdeck mcp serve runs/tools.jsonl
    faultdeck mcp serve runs/tools.jsonl --transport http --port 0 --faults plans/timeout.json
    """
    try:
        import mcp  # noqa: F401
    except ImportError:
        raise click.ClickException(
            "faultdeck mcp needs mcp: pip install 'faultdeck[mcp]'"
        ) from None


def _serving_options(command: Any) -> Any:
    """The options ``serve`` and ``record`` share: how the host reaches this server."""
    options = [
        click.option(
            "--transport",
            type=click.Choice(["stdio", "http"]),
            default="stdio",
            show_default=True,
            help="stdio: the host runs this command; http: streamable HTTP at /mcp.",
        ),
        listening(8766, "HTTP"),
        click.option(
            "--token",
            envvar="FAULTDECK_TOKEN",
            help="Require this token (X-Faultdeck-Token) over HTTP; default $FAULTDECK_TOKEN.",
        ),
        click.option(
            "--faults",
            "plan",
            type=click.Path(dir_okay=False),
            help="A fault plan (JSON or TOML) for the session's requests.",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


@mcp_group.command("serve")
@click.argument("cassette", type=click.Path(dir_okay=False))
@_serving_options
def serve(
    cassette: str, transport: str, host: str, port: int, token: str | None, plan: str | None
) -> None:
    """Serve the MCP session recorded in CASSETTE: listings, tools, resources and prompts
    answer as recorded; a request the cassette has no answer for gets an MCP error saying
    which call missed and why.

    \b
    faultdeck mcp serve runs/tools.jsonl
    faultdeck mcp serve runs/tools.jsonl --transport http --port 0
    """
    _check_host(transport, host, token)
    faults = FaultPlan.load(plan) if plan is not None else None
    _speak(cassette)
    check_cassette(cassette)
    # A host lists tools as often as it likes: a request asked again gets its last answer.
    deck = Deck(cassette, mode="replay", faults=faults, repeats="last")
    _run(deck, None, transport, host, port, token)


@mcp_group.command("record")
@click.argument("cassette", type=click.Path(dir_okay=False))
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
@click.option("--upstream", metavar="URL", help="The MCP server's streamable-HTTP URL.")
@click.option(
    "--mode",
    type=click.Choice(RECORD_MODES),
    default="record",
    show_default=True,
    help="The cassette's mode: record starts it afresh.",
)
@_serving_options
def record(  # noqa: PLR0913 - one parameter per option
    cassette: str,
    command: tuple[str, ...],
    upstream: str | None,
    mode: str,
    transport: str,
    host: str,
    port: int,
    token: str | None,
    plan: str | None,
) -> None:
    """Record an MCP session into CASSETTE through a proxy: the host talks to this command,
    which forwards every request to the real server (SERVER_COMMAND over stdio, or
    --upstream URL) and records the exchange.

    \b
    faultdeck mcp record runs/tools.jsonl -- python my_server.py
    faultdeck mcp record runs/tools.jsonl --upstream http://127.0.0.1:8000/mcp
    """
    if bool(upstream) == bool(command):
        raise click.UsageError(
            "give the MCP server either as a command after -- or as --upstream URL, not "
            + ("both" if upstream else "neither")
        )
    if upstream is not None and not upstream.startswith(("http://", "https://")):
        raise click.UsageError(f"--upstream {upstream}: give the server's http(s):// URL")
    _check_host(transport, host, token)
    faults = FaultPlan.load(plan) if plan is not None else None
    target: Any = upstream
    if command:
        from mcp import StdioServerParameters

        if shutil.which(command[0]) is None:
            raise click.UsageError(f"{command[0]}: no such command to run the MCP server with")
        target = StdioServerParameters(
            command=command[0], args=list(command[1:]), env=dict(os.environ)
        )
    _speak(cassette)
    deck = Deck(cassette, mode=cast("Mode", mode), faults=faults)  # click.Choice checked it
    _run(deck, target, transport, host, port, token)


def _speak(cassette: str) -> None:
    """Hints (a replay miss's, an unfinished recording's) name ``faultdeck mcp record``."""
    name = shlex.quote(cassette)
    server = "-- SERVER_COMMAND… (or --upstream URL)"
    terms.use(
        terms.Terms(
            record=f"faultdeck mcp record {name} {server}",
            append=f"faultdeck mcp record --mode append {name} {server}",
            resume=f"faultdeck mcp record --mode resume {name} {server}",
        )
    )


def _check_host(transport: str, host: str, token: str | None) -> None:
    if transport == "http":
        check_reach(host, token)


def _run(deck: Deck, target: Any, transport: str, host: str, port: int, token: str | None) -> None:
    """Open the deck, serve until the host goes away or a signal comes, close the deck:
    ``ok`` on a clean end, ``error`` otherwise (a fresh recording then stays beside the
    cassette instead of replacing it)."""
    import anyio

    sock = bind(host, port) if transport == "http" else None
    deck.open()
    try:
        anyio.run(_serve, deck, target, sock, token)
    except BaseException as exc:
        deck.close("error")
        raise _leaf(exc) from None
    deck.close("ok")


async def _serve(deck: Deck, target: Any, sock: socket.socket | None, token: str | None) -> None:
    """Serve over HTTP (uvicorn stops on a signal itself), or over stdio until stdin closes
    or a signal comes: a signal anywhere in the session ends it cleanly."""
    if sock is not None:
        await _session(deck, target, sock, token)
        return
    import anyio

    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with anyio.create_task_group() as tasks:

            async def stop_on_signal() -> None:
                async for _ in signals:
                    tasks.cancel_scope.cancel()
                    return

            tasks.start_soon(stop_on_signal)
            await _session(deck, target, None, token)
            tasks.cancel_scope.cancel()


async def _session(deck: Deck, target: Any, sock: socket.socket | None, token: str | None) -> None:
    from ..mcp._client import Client
    from ..mcp._server import build_server, serve_stream

    # Hosts open a session by the handshake (initialize): the server is asked the same way,
    # so what it answers is what it would have answered the host.
    client = Client(deck, target, mode="legacy")
    try:
        await client.__aenter__()
    except Exception as exc:
        where = _name(target)
        raise click.ClickException(f"cannot reach the MCP server {where}: {_why(exc)}") from None
    try:
        server = build_server(client.session)
        if sock is None:
            from ..mcp._stdio import wire

            async with wire() as (read, write):
                await serve_stream(server, client.session, read, write)
        else:
            await _http(server, client.session, sock, token)
    finally:
        await client.__aexit__(None, None, None)


async def _http(
    server: Server[Any], session: McpSession, sock: socket.socket, token: str | None
) -> None:
    try:
        import uvicorn
    except ImportError as exc:
        raise click.ClickException(
            f"faultdeck mcp --transport http needs {exc.name}: pip install 'faultdeck[server]'"
        ) from None
    from ..mcp._server import discover_refused, handshake_only

    host, port = sock.getsockname()[:2]
    app: Any = server.streamable_http_app(host=host)
    if handshake_only(session):
        app = _HandshakeOnly(app, discover_refused(session))
    if token:
        app = _TokenCheck(app, token)
    click.echo(f"faultdeck: serving MCP at {base_url(host, port)}/mcp")
    sys.stdout.flush()
    config = uvicorn.Config(
        app, log_level="warning", access_log=False, lifespan="on", timeout_graceful_shutdown=5
    )
    # uvicorn stops gracefully on SIGINT and SIGTERM, then raises the signal again for the
    # handler it found: this one makes that a clean stop.
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, clean_stop)
    await uvicorn.Server(config).serve(sockets=[sock])


class _TokenCheck:
    """ASGI: every HTTP request carries the token in ``X-Faultdeck-Token``, or gets a 401."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self.token = token.encode()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if (
            scope["type"] == "http"
            and dict(scope["headers"]).get(TOKEN_HEADER.encode()) != self.token
        ):
            body = b"missing or wrong X-Faultdeck-Token\n"
            headers = [
                (b"content-type", b"text/plain"),
                (b"content-length", str(len(body)).encode()),
            ]
            await send({"type": "http.response.start", "status": 401, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return
        await self.app(scope, receive, send)


class _HandshakeOnly:
    """ASGI: a session the server opened by the handshake alone is served so over HTTP too:
    a ``server/discover`` POST gets the server's refusal (``refusal``), and the host opens
    by the handshake, as it would have with the server."""

    def __init__(self, app: Any, refusal: dict[str, Any]) -> None:
        self.app = app
        self.refusal = refusal

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        body, more = b"", True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        try:
            asked = json.loads(body)
        except ValueError:
            asked = None
        if isinstance(asked, dict) and asked.get("method") == "server/discover":
            answer = {"jsonrpc": "2.0", "id": asked.get("id"), "error": self.refusal}
            payload = json.dumps(answer).encode()
            headers = [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode()),
            ]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": payload})
            return
        sent = False

        async def again() -> Any:
            nonlocal sent
            if sent:
                return await receive()
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, again, send)


def _name(target: Any) -> str:
    command = getattr(target, "command", None)
    if command is not None:
        return " ".join([command, *getattr(target, "args", [])])
    return str(target)


def _leaf(exc: BaseException) -> BaseException:
    """What a task group raised: the first exception inside the group(s)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _why(exc: BaseException) -> str:
    """The first leaf of an exception (group), in one line."""
    exc = _leaf(exc)
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
