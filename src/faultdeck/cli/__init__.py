"""The ``faultdeck`` command.

Exit codes: 0 ok, 1 a finding (a divergence, a miss, a violated invariant, a secret, a
failing run), 2 a usage or input error. Every error is one line; ``--debug`` adds the
traceback. Output is rich on a terminal and plain when piped; ``--format json`` is for
machines.

Each command is the module named after it (``record`` holds ``resume`` too, ``mcp`` its
subcommands; ``demo`` lives with the demo, in ``faultdeck.demo``); what commands share is
in ``_common`` (the group, exit codes, output), ``_child`` (running a program under a deck)
and ``_progress``. What is heavy to import (the server, MCP, Ray, OpenTelemetry, the
rehearsal's runners) is imported inside the command that needs it, so that starting the
command line stays cheap.
"""

from __future__ import annotations

import sys
import typing

from .._base.version import VERSION_LINE

if typing.TYPE_CHECKING:
    from collections.abc import Sequence

    import click

    from ._common import cli

__all__ = ["cli", "entry", "main"]


def __getattr__(name: str) -> object:
    """``cli``, the click group, imported when first read: ``--version`` needs no click."""
    if name != "cli":
        raise AttributeError(f"module 'faultdeck.cli' has no attribute {name!r}")
    from ._common import cli

    return cli


def fail(message: str, debug: bool) -> int:
    """Print a usage or input error in one line (the traceback too with ``--debug``)."""
    import traceback

    import click

    from ._common import EXIT_USAGE

    if debug:
        traceback.print_exc()
    click.echo(f"faultdeck: error: {message}", err=True)
    return EXIT_USAGE


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args == ["--version"]:
        print(VERSION_LINE)
        return 0
    from .._base import terms
    from ._common import warning_lines

    # Until a command names its cassette and program, hints name them in general.
    with terms.speaking(terms.command_line(None, ())), warning_lines():
        return run(args)


def run(args: list[str]) -> int:
    """Run one command; map what it raised to an exit code and one line."""
    import click

    from .._base.errors import FaultdeckError
    from ._common import EXIT_FINDING, EXIT_OK, EXIT_USAGE, Finding, cli

    debug = "--debug" in args
    try:
        cli.main(args=args, prog_name="faultdeck", standalone_mode=False)
    except click.exceptions.NoArgsIsHelpError as exc:
        click.echo(usage(exc.ctx))
        return EXIT_OK
    except Finding:
        return EXIT_FINDING
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
    import click

    from ._common import summary

    if ctx is None or not isinstance(ctx.command, click.Group):
        return "Usage: faultdeck COMMAND [ARGS]... (faultdeck --help for more)"
    lines = [ctx.get_usage(), "", "Commands:"]
    names = ctx.command.list_commands(ctx)
    width = max(map(len, names))
    for name in names:
        lines.append(f"  {name:<{width}}  {summary(ctx, name, 70)}")
    lines += ["", "faultdeck COMMAND --help shows a command's options and examples."]
    return "\n".join(lines)


def entry() -> None:
    """The console script."""
    sys.exit(main())
