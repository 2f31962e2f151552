"""``faultdeck redteam``: search combined fault plans for the smallest that breaks the loop.

Prints the minimal plan, the invariants it breaks and a pytest test that pins it, and
writes the plan as a plan file (exit 1, a finding); exit 0 when the budget found none.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import click
import orjson

from .._base.words import plural
from ._common import (
    FORMAT,
    FORMAT_HELP,
    BeforeTheProgram,
    Finding,
    check_cassette,
    console,
    emit_json,
)
from ._progress import meter
from .rehearse import OK_EXIT, branches_option, entry_policy, ok_exits

if TYPE_CHECKING:
    from .._rehearse.redteam import Redteam


@click.command(cls=BeforeTheProgram)
@click.argument("cassette", metavar="CASSETTE")
@click.option(
    "--entrypoint",
    metavar="MODULE:FUNCTION",
    help="A function (deck, clock) -> outcomes that runs the loop in-process.",
)
@click.option(
    "--budget",
    type=click.IntRange(1, 1_000_000),
    default=500,
    show_default=True,
    help="The most runs: plans replayed, shrinking included, and branches recorded.",
)
@click.option(
    "--max-faults",
    type=click.IntRange(1, 20),
    default=3,
    show_default=True,
    help="The most faults in a plan.",
)
@click.option("--seed", type=int, default=0, show_default=True, help="The search's seed.")
@click.option(
    "--policy",
    "policy_spec",
    metavar="MODULE:NAME",
    help="The Policy to judge by (default: the entrypoint module's POLICY).",
)
@click.option(
    "--out",
    "out_path",
    default="redteam-plan.json",
    show_default=True,
    metavar="PLAN",
    help="Where the minimal plan is written, as a plan file (only when one is found).",
)
@click.option("--quiet", is_flag=True, help="Show no progress on stderr.")
@click.option("--format", "fmt", type=FORMAT, default="text", help=FORMAT_HELP)
@branches_option(
    "record: a plan that leaves the recorded path goes on live from there (the upstream "
    "reachable) and is judged on what it recorded; the branch of the plan found is kept "
    "beside CASSETTE (CASSETTE.branches/redteam-*.jsonl); replay: a plan with a branch "
    "recorded under it is judged on it, offline; off: branches are not used."
)
@OK_EXIT
@click.option(
    "--test",
    "test_path",
    metavar="FILE",
    help="Write the pytest test that pins the finding to FILE (its cassette path relative "
    "to FILE's folder); without it the test is printed with paths relative to here.",
)
def redteam(  # noqa: PLR0913 - one parameter per option, as click passes them
    cassette: str,
    command: tuple[str, ...],
    entrypoint: str | None,
    budget: int,
    max_faults: int,
    seed: int,
    policy_spec: str | None,
    out_path: str,
    quiet: bool,
    fmt: str,
    branches: str,
    ok_exit_text: str,
    test_path: str | None,
) -> None:
    """Search plans of up to --max-faults faults on CASSETTE for the smallest that breaks
    an invariant.

    Hypothesis draws plans (each fault aimed at a recorded call, of a kind that applies
    there, with its parameters: Retry-After, delays, nth), replays the loop under each and
    shrinks the first that breaks an invariant: fewest faults, earliest calls, smallest
    parameters. Prints the plan, the broken invariants and a pytest test that pins them;
    writes the plan to --out. Exit 1 when a plan was found, 0 when the budget found none.
    A plan that leads off the recorded path is judged on its branch where CASSETTE has one;
    with --branches record it goes live once from there (each recording one run of the
    budget), and the branch of the plan found is kept beside CASSETTE. Needs pip install
    'faultdeck[redteam]'.

    \b
    faultdeck redteam golden.jsonl --entrypoint examples.workshop.rehearsal:retry_on_quota
    faultdeck redteam golden.jsonl --budget 200 --seed 3 -- python agent.py
    faultdeck redteam golden.jsonl --branches record -- python agent.py
    """
    from .._rehearse.branches import check_branching
    from .._rehearse.redteam import import_hypothesis, pytest_snippet
    from .._rehearse.redteam import redteam as search

    if (entrypoint is None) == (not command):
        raise click.UsageError("give either --entrypoint MODULE:FUNCTION or -- CMD…, not both")
    import_hypothesis()  # a missing extra is said before anything runs
    check_cassette(cassette)
    out_dir = os.path.dirname(os.path.abspath(out_path))
    if not os.path.isdir(out_dir):
        raise click.BadParameter(
            f"{out_path}: the folder {out_dir} does not exist; create it or pick another path",
            param_hint="--out",
        )
    policy = entry_policy(policy_spec)
    ok_exit = ok_exits(ok_exit_text, command)
    noun = "runs" if branches == "record" else "replays"  # a recording is a run of the budget
    with meter(noun=noun, failure=("finding", "findings"), live=False, quiet=quiet) as shown:
        shown.begin(total=budget)
        result = search(
            cassette,
            entrypoint,
            command=command,
            budget=budget,
            max_faults=max_faults,
            seed=seed,
            policy=policy,
            progress=shown,
            ok_exit=ok_exit,
            branches=check_branching(branches),
        )
        shown.failed(int(result.found))
        shown.end()
    if policy_spec is not None:
        result = replace(result, policy=f"{policy_spec} (--policy)")
    if result.branch is not None and not os.path.isabs(cassette):
        result = replace(result, branch=os.path.relpath(result.branch))  # as CASSETTE is named
    if result.pytest_snippet is not None and result.plan is not None:
        # The marker reads its cassette from the test's folder: the path is written from there.
        folder = os.path.dirname(os.path.abspath(test_path)) if test_path else os.getcwd()
        named = cassette if "://" in cassette else os.path.relpath(cassette, folder)
        snippet = pytest_snippet(
            named, result.entrypoint, result.plan, result.violations, policy_spec=policy_spec
        )
        result = replace(result, pytest_snippet=snippet)
        if test_path:
            Path(test_path).write_text(snippet, "utf-8")
    if result.plan is not None:
        Path(out_path).write_bytes(orjson.dumps(result.plan.to_json(), option=orjson.OPT_INDENT_2))
    if fmt == "json":
        emit_json(
            {
                "found": result.found,
                "replays": result.replays,
                "budget": result.budget,
                "seed": result.seed,
                "plan": result.plan.to_json() if result.plan is not None else None,
                "plan_file": out_path if result.found else None,
                "violations": [str(v) for v in result.violations],
                "invariants": sorted({v.invariant for v in result.violations}),
                "pytest": result.pytest_snippet,
                "test_file": test_path if result.pytest_snippet and test_path else None,
                "policy": result.policy,
                "branch": result.branch,
            }
        )
    else:
        _print_text(result, out_path, cassette, command, recording=branches == "record")
    if result.found:
        raise Finding


def _print_text(
    result: Redteam, out_path: str, cassette: str, command: tuple[str, ...], recording: bool
) -> None:
    out = console()
    # With --branches record the budget counts branch recordings too: runs, not plans.
    unit, verb = ("run", "made") if recording else ("plan", "replayed")
    if result.plan is None or result.cell is None:
        out.print(
            f"no plan broke an invariant: {result.replays} of the budget's "
            f"{plural(result.budget, unit)} {verb} (seed {result.seed}), judged by "
            f"{result.policy}",
            markup=False,
        )
        return
    out.print(
        f"✗ a plan of {plural(len(result.plan), 'fault')} breaks the loop "
        f"({plural(result.replays, unit)} {verb}, seed {result.seed}):",
        markup=False,
    )
    for fault in result.plan.faults:
        sel = fault.selector
        where = f"{sel.kind} {sel.name} ({sel.landing()})"
        out.print(f"    {fault.describe()} at {where}", markup=False)
    out.print("violated:", markup=False)
    for violation in result.violations:
        out.print(f"    {violation}", markup=False)
    if result.cell.detail:
        out.print(f"outcomes: {result.cell.detail}", markup=False)
    if result.branch is not None:
        out.print(f"judged on its branch {result.branch}", markup=False)
    out.print(f"judged by {result.policy}", markup=False)
    out.print(f"plan written to {out_path}", markup=False)
    if result.pytest_snippet is not None:
        out.print("pin it in pytest:\n", markup=False)
        out.print(result.pytest_snippet, markup=False)
    else:
        again = f"faultdeck rehearse {cassette} --faults {out_path} -- {' '.join(command)}"
        out.print(f"pin it with: {again}", markup=False)
