"""The ``faultdeck`` command.

Exit codes: 0 ok, 1 a finding (a divergence, a miss, a violated invariant, a secret, a
failing run), 2 a usage or input error. Every error is one line; ``--debug`` adds the
traceback. Output is rich on a terminal and plain when piped; ``--format json`` is for
machines.
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Sequence

import click

from .._base import terms
from .._base.errors import FaultdeckError
from . import (  # noqa: F401 - each registers its commands
    _drift,
    _export,
    _extract,
    _fork,
    _init,
    _mcp,
    _reading,
    _redteam,
    _rehearsing,
    _running,
    _serving,
)
from ._common import EXIT_FINDING, EXIT_OK, EXIT_USAGE, Finding, cli, warning_lines

__all__ = ["cli", "entry", "main"]


def fail(message: str, debug: bool) -> int:
    """Print a usage or input error in one line (the traceback too with ``--debug``)."""
    if debug:
        traceback.print_exc()
    click.echo(f"faultdeck: error: {message}", err=True)
    return EXIT_USAGE


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    # Until a command names its cassette and program, hints name them in general.
    with terms.speaking(terms.command_line(None, ())), warning_lines():
        return run(args)


def run(args: list[str]) -> int:
    """Run one command; map what it raised to an exit code and one line."""
    debug = "--debug" in args
    try:
        cli.main(args=args, prog_name="faultdeck", standalone_mode=False)
    except click.exceptions.NoArgsIsHelpError as exc:
        click.echo(usage(exc.ctx))
        return EXIT_OK
    except Finding:
        return EXIT_FINDING
    except click.exceptions.Exit as exc:
        return int(exc.exit_code)
    except click.Abort:
        click.echo("faultdeck: aborted", err=True)
        return EXIT_USAGE
    except click.UsageError as exc:
        where = exc.ctx.command_path if exc.ctx is not None else "faultdeck"
        return fail(f"{exc.format_message()} (see {where} --help)", debug)
    except click.ClickException as exc:
        return fail(exc.format_message(), debug)
    except FaultdeckError as exc:
        return fail(str(exc).splitlines()[0], debug)
    except OSError as exc:
        return fail(f"{exc.filename or ''}: {exc.strerror or exc}".lstrip(": "), debug)
    return EXIT_OK


def usage(ctx: click.Context | None) -> str:
    """``faultdeck`` alone: the usage line and the commands, one line each."""
    if ctx is None or not isinstance(ctx.command, click.Group):
        return "Usage: faultdeck COMMAND [ARGS]... (faultdeck --help for more)"
    lines = [ctx.get_usage(), "", "Commands:"]
    names = ctx.command.list_commands(ctx)
    width = max(map(len, names))
    for name in names:
        command = ctx.command.get_command(ctx, name)
        summary = command.get_short_help_str(limit=70) if command is not None else ""
        lines.append(f"  {name:<{width}}  {summary}")
    lines += ["", "faultdeck COMMAND --help shows a command's options and examples."]
    return "\n".join(lines)


def entry() -> None:
    """The console script."""
    sys.exit(main())
