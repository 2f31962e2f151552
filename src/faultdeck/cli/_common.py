"""What every command shares: the ``faultdeck`` group, its exit codes, its output."""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator
from typing import Any

import click
import orjson
from rich.console import Console

from .._base.errors import CassetteWarning, FaultdeckWarning
from .._cassette.format import Recording
from .._cassette.reader import interrupted_warning, load

EXIT_OK, EXIT_FINDING, EXIT_USAGE = 0, 1, 2

FORMAT = click.Choice(["text", "json"])
FORMAT_HELP = "text for people (rich on a terminal, plain when piped); json for machines."


class Finding(Exception):
    """A command found something (exit 1); its message has been printed already."""


def console() -> Console:
    """stdout: rich on a terminal; plain, unwrapped text when piped."""
    out = Console(highlight=False, soft_wrap=True)
    if not out.is_terminal:
        out = Console(highlight=False, soft_wrap=True, width=max(out.width, 200))
    return out


def emit_json(data: Any) -> None:
    """Print JSON for machines."""
    click.echo(orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode())


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="faultdeck")
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
    run on it are told not to say it again)."""
    recording = load(path)
    if recording.interrupted:
        warnings.warn(interrupted_warning(path), CassetteWarning, stacklevel=2)
    return recording
