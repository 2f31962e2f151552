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

from .._base.errors import FaultdeckError
from . import _reading, _rehearsing, _running  # noqa: F401 - each registers its commands
from ._common import EXIT_FINDING, EXIT_OK, EXIT_USAGE, Finding, cli

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
    debug = "--debug" in args
    try:
        cli.main(args=args, prog_name="faultdeck", standalone_mode=False)
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


def entry() -> None:
    """The console script."""
    sys.exit(main())
