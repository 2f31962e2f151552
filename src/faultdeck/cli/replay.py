"""``faultdeck replay``: run a program offline against a cassette (once, or ``--repeat``
times, ``--jobs`` at once, here or on Ray) and report its misses, unused and repeated calls,
and the pass rate."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import click

from .._base import terms
from ..faults import FaultPlan
from ._child import (
    Ran,
    Running,
    first_difference,
    location,
    print_replays,
    run_child,
    run_children,
    running_options,
)
from ._common import FORMAT, FORMAT_HELP, Finding, check_cassette, console, emit_json
from ._progress import meter


@click.command()
@click.argument("cassette", type=click.Path(dir_okay=False))
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
@click.option(
    "--repeat",
    type=click.IntRange(1, 10_000),
    default=1,
    show_default=True,
    help="Replay this many times and report the pass rate.",
)
@click.option(
    "--faults",
    "plan",
    type=click.Path(dir_okay=False),
    help="A fault plan (JSON or TOML) to inject on top of the recording.",
)
@click.option(
    "--strict",
    is_flag=True,
    help="Recorded calls the program never asked for fail the replay, as misses do.",
)
@running_options("With --repeat: run this many replays at once.")
@click.option("--format", "fmt", type=FORMAT, default="text", help=FORMAT_HELP)
def replay(
    cassette: str,
    command: tuple[str, ...],
    repeat: int,
    plan: str | None,
    strict: bool,
    fmt: str,
    running: Running,
) -> None:
    """Run a program offline against CASSETTE; report misses, unused and repeated calls.

    Each run sees FAULTDECK_RUN (0, 1, …), so a program can seed per run. A pass rate
    strictly between 0 and 1 is flakiness, shown with the first call the runs disagree on.
    With --jobs, that many runs go at once; the report is the same, in run order.

    \b
    faultdeck replay runs/base.jsonl -- python agent.py
    faultdeck replay runs/base.jsonl --repeat 20 --faults plans/quota.json -- python agent.py
    faultdeck replay runs/base.jsonl --repeat 200 --jobs 8 -- python agent.py
    faultdeck replay runs/base.jsonl --strict -- python agent.py
    """
    terms.use(terms.command_line(cassette, command))
    check_cassette(cassette)  # a missing or corrupt cassette is an input error before a run
    extra = {"FAULTDECK_CASSETTE_CHECKED": "1"}
    if plan is not None:
        FaultPlan.load(plan)
        extra["FAULTDECK_FAULTS"] = os.path.abspath(plan)
        extra["FAULTDECK_CLOCK"] = "virtual"  # a rehearsal: its waits take no real time
    extras = [dict(extra, FAULTDECK_RUN=str(index)) for index in range(repeat)]
    if running.executor == "ray":
        runs = replays_on_ray(command, cassette, extras, running, strict)
    elif repeat == 1:
        runs = [run_child(command, cassette, "replay", extra=extras[0])]
    else:
        runs = replays_here(command, cassette, extras, running, strict)
    passed = [replayed(code, report, strict) for code, report, _ in runs]
    rate = sum(passed) / repeat
    difference = first_difference([report for _, report, _ in runs])
    if fmt == "json":
        emit_json(
            {
                "cassette": cassette,
                "runs": repeat,
                "passed": sum(passed),
                "rate": rate,
                "flaky": 0 < rate < 1,
                "first_difference": difference,
                "reports": [report for _, report, _ in runs],
            }
        )
    else:
        print_replays(console(), cassette, command, runs, passed, difference, strict=strict)
    if rate < 1:
        raise Finding


FAILED = ("failed", "failed")
"""How the progress of replays counts a failed run."""


def replays_here(
    command: Sequence[str],
    cassette: str,
    extras: list[dict[str, str]],
    running: Running,
    strict: bool,
) -> list[Ran]:
    """The runs on this machine, ``running.jobs`` at once, counted on stderr as they end."""
    with meter(noun="runs", failure=FAILED, quiet=running.quiet) as progress:
        progress.begin(total=len(extras))
        done = [0]

        def finished(index: int, ran: Ran) -> None:
            done[0] += 1
            if not replayed(ran[0], ran[1], strict):
                progress.failed()
            progress(done[0], len(extras))

        runs = run_children(command, cassette, extras, jobs=running.jobs, finished=finished)
        progress.end()
    return runs


def replays_on_ray(
    command: Sequence[str],
    cassette: str,
    extras: list[dict[str, str]],
    running: Running,
    strict: bool,
) -> list[Ran]:
    """The runs as tasks on Ray; their failures are counted once all are back."""
    from .._rehearse.ray import run_replays

    quiet = running.quiet or len(extras) == 1
    with meter(noun="runs", failure=FAILED, live=False, quiet=quiet) as bar:
        bar.begin(total=len(extras))
        where = location(cassette)
        runs = run_replays(command, where, extras, address=running.address, progress=bar)
        bar.failed(sum(not replayed(code, report, strict) for code, report, _ in runs))
        bar.end()
    return runs


def replayed(code: int, report: dict[str, Any] | None, strict: bool) -> bool:
    """Whether a replay passed: exit 0, no miss, and (``strict``) no recorded call unused."""
    if code != 0 or report is None or report["misses"]:
        return False
    return not (strict and report["unused"])
