"""The commands that rehearse: ``rehearse`` (the fault matrix) and ``demo``."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from .._base.loading import load_attr
from .._cassette.reader import load
from .._judge.policy import Policy
from ..faults import FaultPlan
from ._child import progress_bar
from ._common import FORMAT, FORMAT_HELP, Finding, cli, console, emit_json


@cli.command()
@click.argument("cassette", type=click.Path(dir_okay=False))
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
@click.option(
    "--entrypoint",
    metavar="MODULE:FUNCTION",
    help="A function (deck, clock) -> outcomes that runs the loop in-process.",
)
@click.option(
    "--faults",
    "faults_",
    default="all",
    show_default=True,
    metavar="all|PLAN",
    help="Every fault kind at every call it applies to, or a plan file (one cell).",
)
@click.option(
    "--policy",
    "policy_spec",
    metavar="MODULE:NAME",
    help="The Policy to judge by (default: the entrypoint module's POLICY).",
)
@click.option(
    "--jobs",
    type=click.IntRange(1, 256),
    default=1,
    show_default=True,
    help="Run cells on this many local processes.",
)
@click.option("--format", "fmt", type=FORMAT, default="text", help=FORMAT_HELP)
def rehearse(
    cassette: str,
    command: tuple[str, ...],
    entrypoint: str | None,
    faults_: str,
    policy_spec: str | None,
    jobs: int,
    fmt: str,
) -> None:
    """Replay CASSETTE under every fault at every call it applies to; judge each run.

    Prints the matrix (faults x positions) of what held and what broke. Each fault runs
    only at the calls it can happen at ("all" is every kind that applies to the
    cassette's calls; stream faults only where an answer streamed). Cells: ✓ held, ✗ broke,
    ~ off the recorded path, ! raised, ↻ killed by a crash, then restarted fault-free and
    finished as the clean run did (a restart that does not is ✗), · does not apply at that
    call (not run, not counted). Exit 1 when a cell broke, went off the recorded path or
    raised (a finding); a crash restarted fine is not one.

    \b
    faultdeck rehearse golden.jsonl --entrypoint examples.workshop.rehearsal:good
    faultdeck rehearse golden.jsonl --faults plans/quota.toml --jobs 4 -- python agent.py
    """
    from .._rehearse.command import rehearse_command
    from .._rehearse.inprocess import rehearse as run_matrix
    from .._rehearse.render import LEGEND, matrix_json, matrix_summary, matrix_table

    if (entrypoint is None) == (not command):
        raise click.UsageError("give either --entrypoint MODULE:FUNCTION or -- CMD…, not both")
    load(cassette)
    plans = None if faults_ == "all" else {Path(faults_).stem: FaultPlan.load(faults_)}
    # Entrypoints are named relative to where the command runs, as `python -m` would.
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    policy = None
    if policy_spec is not None:
        found = load_attr(policy_spec, what="--policy", kind="POLICY")
        if not isinstance(found, Policy):
            raise click.UsageError(f"{policy_spec} is not a faultdeck Policy")
        policy = found
    out = console()
    with progress_bar(out, enabled=fmt == "text") as update:
        if entrypoint is not None:
            matrix = run_matrix(
                entrypoint, cassette, plans, policy=policy, jobs=jobs, progress=update
            )
        else:
            matrix = rehearse_command(
                command, cassette, plans, policy=policy, jobs=jobs, progress=update
            )
    if fmt == "json":
        emit_json(matrix_json(matrix))
    else:
        out.print(matrix_table(matrix))
        out.print(LEGEND, markup=False)
        for line in matrix_summary(matrix):
            out.print(line, markup=False)
    if not matrix.ok:
        raise Finding


@cli.command()
def demo() -> None:
    """The walkthrough on the bundled workshop agent (about a second, no network)."""
    from ..demo import main as run_demo

    if run_demo() != 0:
        raise Finding
