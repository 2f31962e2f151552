"""What every command shares: the ``faultdeck`` group, its exit codes, its output."""

from __future__ import annotations

from typing import Any

import click
import orjson
from rich.console import Console

EXIT_OK, EXIT_FINDING, EXIT_USAGE = 0, 1, 2


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


def plural(n: int, word: str) -> str:
    """``1 call``, ``2 calls``."""
    return f"{n} {word}{'' if n == 1 else 's'}"
