"""``faultdeck rehearse``: the fault matrix of one cassette, or of many and then a row each;
and what ``redteam`` shares with it (the program after ``--``, the ``--policy``)."""

from __future__ import annotations

import glob
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

import click
from rich.console import Console

from .._base.loading import load_attr
from .._base.words import plural
from .._cassette.reader import load
from .._judge.policy import Policy
from .._rehearse.matrix import Matrix
from ..faults import FaultPlan
from ._child import Running, running_options
from ._common import FORMAT, FORMAT_HELP, BeforeTheProgram, Finding, console, emit_json
from ._progress import meter


def branches_option(help_text: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--branches record|replay|off``, as rehearse and redteam take it."""
    return click.option(
        "--branches",
        type=click.Choice(["record", "replay", "off"]),
        default="replay",
        show_default=True,
        help=help_text,
    )


OK_EXIT = click.option(
    "--ok-exit",
    "ok_exit_text",
    default="0",
    show_default=True,
    metavar="CODES",
    help="With -- CMD: the exit codes that mean the program ended well, e.g. 0,3 for one "
    "whose graceful stop under a fault exits 3; any other is a raised cell.",
)
"""``--ok-exit``, as ``rehearse`` and ``redteam`` take it (``ok_exits`` reads it)."""


@click.command(cls=BeforeTheProgram)
@click.argument("cassettes", metavar="CASSETTE...", nargs=-1, required=True)
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
@running_options("Run cells on this many processes (with --executor ray: Ray CPUs).")
@click.option("--format", "fmt", type=FORMAT, default="text", help=FORMAT_HELP)
@branches_option(
    "record: a cell that leaves the recorded path goes on live from there (the upstream "
    "reachable) and is kept as a branch beside CASSETTE (CASSETTE.branches/); replay: a cell "
    "with a branch replays on it, offline; off: branches are not used."
)
@OK_EXIT
def rehearse(  # noqa: PLR0913 - one parameter per option, as click passes them
    cassettes: tuple[str, ...],
    command: tuple[str, ...],
    entrypoint: str | None,
    faults_: str,
    policy_spec: str | None,
    fmt: str,
    branches: str,
    ok_exit_text: str,
    running: Running,
) -> None:
    """Replay CASSETTE under every fault at every call it applies to; judge each run.

    Prints the matrix (faults x positions) of what held and what broke. Each fault runs
    only at the calls it can happen at ("all" is every kind that applies to the
    cassette's calls; stream faults only where an answer streamed; a service's faults only at
    model and http calls and tools that reach a service). Cells: ✓ held, ✗ broke, ~ off the
    recorded path, ! raised, ↻ killed by a crash, then restarted fault-free and finished as
    the clean run did (a restart that does not is ✗), ○ not fired (the loop never reached
    the fault's call), · does not apply at that call (not run, not counted). Exit 1 when a
    cell broke, went off the recorded path or raised (a finding); a crash restarted fine is
    not one. With --branches record, a cell off the recorded path goes live once from there
    and is kept as a branch beside CASSETTE, judged offline from then on.

    CASSETTE may be several files, a folder (every *.jsonl under it) or a quoted glob: then
    each gets its matrix, and a row each in a summary at the end.

    \b
    faultdeck rehearse golden.jsonl --entrypoint examples.workshop.rehearsal:good
    faultdeck rehearse golden.jsonl --faults plans/quota.toml --jobs 4 -- python agent.py
    faultdeck rehearse runs/ 'more/*.jsonl' --entrypoint agent:run --format json
    """
    from .._rehearse.render import LEGEND, matrix_json, matrix_summary, matrix_table

    if (entrypoint is None) == (not command):
        raise click.UsageError("give either --entrypoint MODULE:FUNCTION or -- CMD…, not both")
    paths, several = cassettes_in(cassettes)
    for path in paths:
        load(path)  # every cassette read before any runs: a bad one is an input error
    plans = None if faults_ == "all" else {Path(faults_).stem: FaultPlan.load(faults_)}
    policy = entry_policy(policy_spec)
    ok_exit = ok_exits(ok_exit_text, command)
    how = Rehearsal(entrypoint, command, plans, policy, running, ok_exit, branches)
    matrices = rehearse_each(paths, how, several=several)
    if policy_spec is not None:
        matrices = [replace(m, policy=f"{policy_spec} (--policy)") for m in matrices]
    out = console()
    if not several:
        (matrix,) = matrices
        if fmt == "json":
            emit_json(matrix_json(matrix))
        else:
            out.print(matrix_table(matrix))
            out.print(LEGEND, markup=False)
            for line in matrix_summary(matrix):
                out.print(line, markup=False)
            out.print(f"judged by {matrix.policy}", markup=False)
    elif fmt == "json":
        emit_json(several_json(paths, matrices))
    else:
        print_several(out, paths, matrices)
    if not all(matrix.ok for matrix in matrices):
        raise Finding


@dataclass(frozen=True, slots=True)
class Rehearsal:
    """What ``rehearse`` does to each cassette: the way it runs the loop (an entrypoint or a
    command), the plans (``None``: every fault), the policy and where the cells run."""

    entrypoint: str | None
    command: tuple[str, ...]
    plans: dict[str, FaultPlan] | None
    policy: Policy | None
    running: Running
    ok_exit: tuple[int, ...] = (0,)
    branches: str = "replay"


def ok_exits(text: str, command: Sequence[str]) -> tuple[int, ...]:
    """The exit codes ``--ok-exit`` names (``0,3``), for a program after ``--``.

    Raises:
        click.BadParameter: a code that is not a whole number from 0 to 255, or codes
            given to an entrypoint (it returns outcomes, not exit codes).
    """
    words = [word.strip() for word in text.split(",")]
    if not all(word.isdigit() and int(word) <= 255 for word in words):
        raise click.BadParameter(
            f"{text!r}: give exit codes from 0 to 255, separated by commas, e.g. --ok-exit 0,3",
            param_hint="--ok-exit",
        )
    codes = tuple(dict.fromkeys(int(word) for word in words))
    if codes != (0,) and not command:
        raise click.BadParameter(
            "exit codes judge a program run after --; an entrypoint returns its outcomes",
            param_hint="--ok-exit",
        )
    return codes


def cassettes_in(specs: Sequence[str]) -> tuple[list[str], bool]:
    """The cassettes the arguments name, in order, each once; and whether they are a set
    (several arguments, a folder, a glob), which gets a summary, even if only one matched.

    A folder is every ``*.jsonl`` under it, sorted; a pattern with ``*``, ``?`` or ``[`` is
    a glob (``**`` goes into folders); a URL and anything else is one cassette, as given.
    """
    paths: list[str] = []
    several = len(specs) > 1
    for spec in specs:
        if "://" in spec:
            found = [spec]
        elif os.path.isdir(spec):
            several = True
            found = sorted(str(p) for p in Path(spec).rglob("*.jsonl") if p.is_file())
            if not found:
                raise click.ClickException(f"no *.jsonl cassette under the folder {spec}")
        elif any(c in spec for c in "*?["):
            several = True
            found = sorted(p for p in glob.glob(spec, recursive=True) if os.path.isfile(p))
            if not found:
                where = "" if os.path.isabs(spec) else f" (from {os.getcwd()})"
                raise click.ClickException(f"no cassette matches {spec}{where}; check the pattern")
        else:
            found = [spec]
        paths += [path for path in found if path not in paths]
    return paths, several


def rehearse_each(paths: Sequence[str], how: Rehearsal, *, several: bool) -> list[Matrix]:
    """Each cassette's matrix, one after the other, with the progress on stderr."""
    from .._rehearse.command import rehearse_command
    from .._rehearse.inprocess import rehearse as run_matrix

    running = how.running
    run: Callable[..., Matrix] = (
        partial(run_matrix, how.entrypoint)
        if how.entrypoint is not None
        else partial(rehearse_command, how.command, ok_exit=how.ok_exit)
    )
    matrices: list[Matrix] = []
    findings = ("finding", "findings")
    with (
        _one_ray(running.address, running.jobs) if running.executor == "ray" else nullcontext(),
        meter(noun="cells", failure=findings, live=False, quiet=running.quiet) as progress,
    ):
        for path in paths:
            progress.begin(path if several else "")
            matrix = run(
                path,
                how.plans,
                branches=how.branches,
                policy=how.policy,
                jobs=running.jobs,
                progress=progress,
                executor=running.executor,
                address=running.address,
            )
            progress.failed(len(matrix.findings))
            progress.end()
            matrices.append(matrix)
    return matrices


@contextmanager
def _one_ray(address: str | None, jobs: int) -> Iterator[None]:
    """One Ray for the whole command: every cassette's cells run on it, rather than each
    cassette starting (and stopping) a local Ray of its own."""
    from .._rehearse.ray import cluster

    with cluster(address, cpus=jobs if jobs > 1 else None):
        yield


def several_json(paths: Sequence[str], matrices: Sequence[Matrix]) -> dict[str, Any]:
    """``{"ok", "cassettes": [{"cassette", "ok", "matrix"}], "summary": [row]}``: each
    matrix as ``matrix_json`` gives it, each row as ``summary_row``."""
    from .._rehearse.render import matrix_json, summary_row

    return {
        "ok": all(m.ok for m in matrices),
        "cassettes": [
            {"cassette": path, "ok": m.ok, "matrix": matrix_json(m)}
            for path, m in zip(paths, matrices, strict=True)
        ],
        "summary": [summary_row(path, m) for path, m in zip(paths, matrices, strict=True)],
    }


def print_several(out: Console, paths: Sequence[str], matrices: Sequence[Matrix]) -> None:
    """Each cassette's matrix (titled with it) and summary lines, the legend, then a row per
    cassette."""
    from .._rehearse.render import (
        LEGEND,
        matrix_summary,
        matrix_table,
        summary_row,
        summary_table,
    )

    for path, matrix in zip(paths, matrices, strict=True):
        table = matrix_table(matrix)
        table.title = path
        out.print(table)
        for line in matrix_summary(matrix):
            out.print(line, markup=False)
        out.print(f"judged by {matrix.policy}", markup=False)
        out.print()
    out.print(LEGEND, markup=False)
    out.print(summary_table([summary_row(p, m) for p, m in zip(paths, matrices, strict=True)]))
    bad = sum(not m.ok for m in matrices)
    out.print(f"{plural(len(matrices), 'cassette')}: {bad} with findings", markup=False)


def entry_policy(policy_spec: str | None) -> Policy | None:
    """The ``--policy`` a command was given, loaded (``None`` for none); entrypoints and
    policies are named relative to where the command runs, as ``python -m`` would."""
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    if policy_spec is None:
        return None
    found = load_attr(policy_spec, what="--policy", kind="POLICY")
    if not isinstance(found, Policy):
        raise click.UsageError(f"{policy_spec} is not a faultdeck Policy")
    return found
