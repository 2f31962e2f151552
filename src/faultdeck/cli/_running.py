"""The commands that run a program under a deck: ``record``, ``resume`` and ``replay`` (once,
or ``--repeat`` times, ``--jobs`` at once, here or on Ray)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from typing import Any

import click

from .._base import terms
from .._base.words import plural
from .._cassette import store
from .._cassette.reader import load
from .._cassette.writer import partial_path
from .._deck.outage import outage_line
from ..faults import FaultPlan
from ._child import (
    Ran,
    Running,
    first_difference,
    location,
    no_report,
    print_replays,
    run_child,
    run_children,
    running_options,
)
from ._common import FORMAT, FORMAT_HELP, Finding, check_cassette, cli, console, emit_json
from ._progress import meter


@cli.command()
@click.argument("cassette", type=click.Path(dir_okay=False))
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
@click.option(
    "--mode",
    type=click.Choice(["record", "append"]),
    default="record",
    show_default=True,
    help="record: the whole run, afresh; append: only the calls CASSETTE lacks, added to it.",
)
def record(cassette: str, command: tuple[str, ...], mode: str) -> None:
    """Run a program, recording its boundary calls into CASSETTE.

    The program creates its deck with fd.Deck.from_env(). An existing CASSETTE is
    replaced only when the program exits 0; otherwise it stays as it was and the new
    recording is kept beside it, for `faultdeck resume`. With --mode append, the calls
    CASSETTE already answers replay and only the new ones are recorded, at its end.

    \b
    faultdeck record runs/base.jsonl -- python agent.py --task fix-retry
    faultdeck record --mode append runs/base.jsonl -- python agent.py --task new-step
    """
    run_writing(cassette, command, mode)


@cli.command()
@click.argument("cassette", type=click.Path(dir_okay=False))
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def resume(cassette: str, command: tuple[str, ...]) -> None:
    """Finish a recording that was killed or failed: replay what it recorded, go on live.

    Continues the recording left beside CASSETTE by a run that did not finish, or CASSETTE
    itself when it was interrupted; replaces CASSETTE when the program exits 0.

    \b
    faultdeck resume runs/base.jsonl -- python agent.py --task fix-retry
    """
    run_writing(cassette, command, "resume")


def run_writing(cassette: str, command: tuple[str, ...], mode: str) -> None:
    """``record`` and ``resume``: run the program, then keep or place what it recorded."""
    terms.use(terms.command_line(cassette, command))
    url = store.is_url(cassette)
    partial = "" if url else partial_path(os.path.realpath(cassette))
    extra = {"FAULTDECK_DEFER_REPLACE": "1"}
    code, report, stderr = run_child(command, cassette, mode, extra=extra)
    out = console()
    if report is None:
        out.print(no_report(command, code, stderr), markup=False)
        raise Finding
    # Live calls that got no answer: the recording lacks them, so it replaces nothing.
    answered = not report["unanswered"]
    if url:
        # The program's deck left its finished copy local (report["kept"]); it goes to the
        # store, whole, only once the program has exited 0.
        partial = report.get("kept") or ""
        placed = code == 0 and answered and bool(partial) and finished(partial)
        if placed:
            store.upload(partial, cassette)
            shutil.rmtree(os.path.dirname(partial), ignore_errors=True)
    else:
        placed = code == 0 and answered and finished(partial)
        if placed:
            os.replace(partial, os.path.realpath(cassette))
    verb = {"record": "recorded", "append": "appended"}.get(mode, "resumed")
    stored, used = report["stored"], report["used"]
    if not answered:
        line = outage_line(
            mode=mode,
            stored=stored,
            used=used,
            unanswered=report["unanswered"],
            cassette=cassette,
            kept=partial if partial and os.path.exists(partial) else None,
        )
        out.print(line, markup=False)
    elif mode == "append":
        out.print(f"{verb} {plural(stored, 'call')} to {cassette} ({used} replayed from it)")
    else:
        out.print(f"{verb} {plural(stored + used, 'call')} ({stored} live) into {cassette}")
    if code != 0:
        out.print(f"the program exited with {code}")
        if answered and partial and os.path.exists(partial):
            there = store.exists(cassette) if url else os.path.exists(cassette)
            kept_as = "left as it was" if there else "not written"
            again = f"faultdeck {'record' if url else 'resume'} {cassette} -- {' '.join(command)}"
            finish = (
                f" (a store's recording cannot be resumed; record it again: {again})"
                if url
                else f" (finish it with: {again})"
            )
            out.print(
                f"{cassette} was {kept_as}; the new recording is in {partial}{finish}",
                markup=False,
            )
    if code != 0 or not answered:
        raise Finding


def finished(path: str) -> bool:
    """Whether the recording at ``path`` exists and ended cleanly."""
    if not os.path.exists(path):
        return False
    recording = load(path)
    return recording.end is not None and recording.end.get("status") == "ok"


@cli.command()
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
