"""What every command shares: the ``faultdeck`` group, its exit codes, its output.

The group knows its commands by name (``COMMANDS``) and imports each when it is first named,
so that ``faultdeck --help`` lists them all and imports none; this module imports no more
than click for the same reason.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import warnings
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import click

from .._base.errors import CassetteWarning, FaultdeckWarning
from .._base.version import VERSION, VERSION_LINE

if TYPE_CHECKING:
    from rich.console import Console

    from .._cassette.format import Recording

EXIT_OK, EXIT_FINDING, EXIT_USAGE = 0, 1, 2

FORMAT = click.Choice(["text", "json"])
FORMAT_HELP = "text for people (rich on a terminal, plain when piped); json for machines."


class Finding(Exception):
    """A command found something (exit 1); its message has been printed already."""


def console() -> Console:
    """stdout: rich on a terminal; plain, unwrapped text when piped."""
    from rich.console import Console

    out = Console(highlight=False, soft_wrap=True)
    if not out.is_terminal:
        out = Console(highlight=False, soft_wrap=True, width=max(out.width, 200))
    return out


def emit_json(data: Any) -> None:
    """Print JSON for machines."""
    import orjson

    click.echo(orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode())


COMMANDS: dict[str, tuple[str, str]] = {
    "completion": (
        "faultdeck.cli.completion:completion",
        "Print the shell completion script for SHELL.",
    ),
    "compare": (
        "faultdeck.cli.compare:compare",
        "Compare cassettes, a row each: calls, tokens, time, models.",
    ),
    "demo": (
        "faultdeck.demo:command",
        "The walkthrough on the bundled workshop agent (no network).",
    ),
    "diff": (
        "faultdeck.cli.diff:diff",
        "Diff the call paths of two cassettes; exit 1 when they diverge.",
    ),
    "drift": (
        "faultdeck.cli.drift:drift",
        "Run a program live; say what moved since CASSETTE was recorded.",
    ),
    "export": (
        "faultdeck.cli.export:export",
        "Export a cassette as OpenTelemetry spans (GenAI conventions).",
    ),
    "extract": (
        "faultdeck.cli.extract:extract",
        "Write one recorded call alone, as a cassette or plain JSON.",
    ),
    "fake": (
        "faultdeck.cli.fake:fake",
        "Serve a scripted model on 127.0.0.1: no API key, no network.",
    ),
    "faults": (
        "faultdeck.cli.faults:faults",
        "List every fault kind: where it applies, what each SDK sees.",
    ),
    "fork": (
        "faultdeck.cli.fork:fork",
        "Replay CASSETTE's first N calls, then go on live into a new one.",
    ),
    "init": (
        "faultdeck.cli.init:init",
        "Add a [tool.faultdeck] section and a conftest.py to a project.",
    ),
    "mcp": (
        "faultdeck.cli.mcp:mcp_group",
        "Serve a recorded MCP session, or record one through a proxy.",
    ),
    "record": (
        "faultdeck.cli.record:record",
        "Run a program, recording its boundary calls into CASSETTE.",
    ),
    "redteam": (
        "faultdeck.cli.redteam:redteam",
        "Search fault plans for the smallest that breaks an invariant.",
    ),
    "rehearse": (
        "faultdeck.cli.rehearse:rehearse",
        "Replay CASSETTE under every fault at every call; judge each run.",
    ),
    "replay": (
        "faultdeck.cli.replay:replay",
        "Run a program offline against CASSETTE; report what diverged.",
    ),
    "resume": (
        "faultdeck.cli.record:resume",
        "Finish a killed or failed recording: replay it, then go on live.",
    ),
    "scan": (
        "faultdeck.cli.scan:scan",
        "Audit cassettes for credential-shaped strings; exit 1 on any.",
    ),
    "serve": (
        "faultdeck.cli.serve:serve",
        "Serve cassettes over HTTP for SDKs to record or replay through.",
    ),
    "show": (
        "faultdeck.cli.show:show",
        "Show a cassette's header, its calls, whether it ended cleanly.",
    ),
}
"""Each command: where it is (``module:attribute``) and the line that lists it (which
``faultdeck --help`` shows whole: at most 64 characters)."""


class Commands(click.Group):
    """A group whose commands (``COMMANDS``) are imported when first named."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            module, _, attr = COMMANDS[cmd_name][0].partition(":")
            self.add_command(getattr(importlib.import_module(module), attr), cmd_name)
        return self.commands.get(cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        with formatter.section("Commands"):
            formatter.write_dl([(name, summary) for name, (_, summary) in sorted(COMMANDS.items())])


class BeforeTheProgram(click.Command):
    """A command whose own arguments (several cassettes) end at ``--``, after which comes the
    program to run: click alone would give both to one ``nargs=-1`` argument."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        """Parse what comes before ``--``; hand what comes after to the callback as
        ``command``."""
        program: list[str] = []
        if "--" in args:
            at = args.index("--")
            args, program = args[:at], args[at + 1 :]
        rest = super().parse_args(ctx, args)
        ctx.params["command"] = tuple(program)
        return rest

    def collect_usage_pieces(self, ctx: click.Context) -> list[str]:
        """The usage line, with the program at its end."""
        return [*super().collect_usage_pieces(ctx), "[-- CMD...]"]


def summary(ctx: click.Context, name: str, limit: int) -> str:
    """The line that lists command ``name`` of ``ctx``'s group, at most ``limit``
    characters; for ``faultdeck``'s own commands, their line in ``COMMANDS``, which is
    shorter, read without importing the command."""
    group = ctx.command
    if isinstance(group, Commands):
        return COMMANDS[name][1]
    command = group.get_command(ctx, name) if isinstance(group, click.Group) else None
    return command.get_short_help_str(limit) if command is not None else ""


@click.group(cls=Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(VERSION, prog_name="faultdeck", message=VERSION_LINE)
@click.option("--debug", is_flag=True, help="Show tracebacks on errors.")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """Record an agent's boundary calls, replay them offline, rehearse failures on top.

    \b
    faultdeck record runs/base.jsonl -- python agent.py
    faultdeck replay runs/base.jsonl --repeat 20 -- python agent.py
    faultdeck rehearse runs/base.jsonl --entrypoint myagent.rehearsal:run
    faultdeck diff runs/base.jsonl runs/new.jsonl
    """
    ctx.obj = {"debug": debug}
    if debug:  # a program the command runs shows its whole traceback too
        os.environ["FAULTDECK_DEBUG"] = "1"


@contextlib.contextmanager
def warning_lines() -> Iterator[None]:
    """Show faultdeck's warnings as ``faultdeck: warning: …`` lines, each text once; other
    warnings as Python shows them."""
    seen: set[str] = set()
    python_shows = warnings.showwarning

    def show(message: Warning | str, category: type[Warning], *args: Any, **kw: Any) -> None:
        if not issubclass(category, FaultdeckWarning):
            python_shows(message, category, *args, **kw)
        elif str(message) not in seen:
            seen.add(str(message))
            click.echo(f"faultdeck: warning: {message}", err=True)

    with warnings.catch_warnings():
        warnings.simplefilter("always", FaultdeckWarning)
        warnings.showwarning = show
        yield


def check_cassette(path: str) -> Recording:
    """Read the cassette a command replays, before any program runs: a missing or corrupt
    one is an input error; one that is not whole is a warning, said here once (the programs
    run on it are told not to say it again). A fork's header that names its models in a
    form no fork writes is an input error too: a replay would key its calls by it."""
    from .._cassette.reader import interrupted_warning, load
    from .._deck.retarget import retarget_of

    recording = load(path)
    retarget_of(recording.header.extra.get("parent"), path)
    if recording.interrupted:
        warnings.warn(interrupted_warning(path), CassetteWarning, stacklevel=2)
    return recording


def cannot_listen(host: str, port: int, exc: OSError) -> click.ClickException:
    """The one line a command that serves fails with when ``host:port`` cannot be had."""
    return click.ClickException(
        f"cannot listen on {host}:{port}: {exc.strerror}; pass another --port "
        "(--port 0 picks a free one)"
    )


def listening(port: int, what: str = "") -> Callable[[Any], Any]:
    """``--host`` (loopback) and ``--port`` (``port``; 0 picks a free one), for a command
    that serves; ``what`` names what listens (``HTTP``) where the command has more."""
    where = f"The {what} address" if what else "The address to listen on"

    def add(command: Any) -> Any:
        command = click.option(
            "--port",
            type=click.IntRange(0, 65535),
            default=port,
            show_default=True,
            help=f"The {what + ' ' if what else ''}port; 0 picks a free one.",
        )(command)
        return click.option("--host", default="127.0.0.1", show_default=True, help=f"{where}.")(
            command
        )

    return add
