"""``faultdeck drift``: has the world moved under a recording?

"Replay passes, live fails" means the recording is stale. ``drift`` runs the program live,
recording into a temporary cassette beside CASSETTE (side-effecting tools run their
``dry_run`` stand-in unless ``--allow-side-effects``), then says call by call which answers
changed (the world moved), which calls changed (the code moved) and whether the outcome
did. ``--update`` then puts the live recording in CASSETTE's place, in one rename, as
``record`` does; never without it, never when the live run failed. The branches
``rehearse --branches record`` kept beside CASSETTE are run again and compared the same
way, each as it was recorded (``_drift_branches``).
"""

from __future__ import annotations

import os
import shlex
import shutil
import tempfile

import click

from .._base import terms
from .._cassette import store
from .._cassette.reader import load
from .._diff.drift import Drift, compare_drift, drift_json, drift_text
from .._rehearse.branches import branches_of
from ._child import no_report, run_child
from ._common import FORMAT, FORMAT_HELP, Finding, check_cassette, console, emit_json
from ._drift_branches import (
    BranchDrift,
    branch_json,
    branches_text,
    rerun_all,
    stale_now,
    update_branches,
    why_kept,
)

ALLOW_ENV = "FAULTDECK_ALLOW_SIDE_EFFECTS"
"""Tells the program's deck whether side-effecting tools may run for real (``1``) or must
run their stand-in (``0``)."""


@click.command()
@click.argument("cassette", type=click.Path(dir_okay=False))
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
@click.option(
    "--allow-side-effects",
    is_flag=True,
    help="Let side-effecting tools run for real in the live run (default: their dry_run).",
)
@click.option(
    "--update",
    is_flag=True,
    help="After the report, replace CASSETTE with the live recording, or if it is kept, each "
    "drifted branch with its own (never with a failed run's).",
)
@click.option(
    "--ignore", multiple=True, metavar="FIELD", help="A field never compared (repeatable)."
)
@click.option("--format", "fmt", type=FORMAT, default="text", help=FORMAT_HELP)
def drift(
    cassette: str,
    command: tuple[str, ...],
    allow_side_effects: bool,
    update: bool,
    ignore: tuple[str, ...],
    fmt: str,
) -> None:
    """Run a program live and say what moved since CASSETTE was recorded; exit 1 if anything.

    Answers changed: the same call got another answer (the world moved). Calls changed: a
    call in one run only, or asked with other args (the code moved). Outcome: whether the
    run still succeeds. CASSETTE is left as it was unless --update is given.

    Its branches (CASSETTE.branches/, kept by rehearse --branches record) are run again
    the way each was recorded, under its fault, the recording replayed up to where it left
    the path and live from there, and each is reported the same way; a stale one is
    warned of and skipped. Side effects run their dry_run there too, unless
    --allow-side-effects. --update replaces a drifted branch with its live run; once it
    replaces CASSETTE itself, its branches are stale and not run: record them again.

    \b
    faultdeck drift runs/base.jsonl -- python agent.py
    faultdeck drift runs/base.jsonl --update -- python agent.py
    faultdeck drift runs/base.jsonl --format json -- python agent.py
    """
    if store.is_url(cassette):
        raise click.UsageError(
            f"{cassette}: drift compares a local cassette file; copy it here first"
        )
    if not command:
        raise click.UsageError("give the program to run after --, e.g. -- python agent.py")
    terms.use(terms.command_line(cassette, command))
    recorded = check_cassette(cassette)
    branches = list(branches_of(cassette).values())  # a stale one is warned of, not run
    target = os.path.realpath(cassette)
    again = (*(["--allow-side-effects"] if allow_side_effects else []), "--", *command)
    # Beside the cassette: the same file system, so --update is one atomic rename.
    folder = tempfile.mkdtemp(prefix=".faultdeck-drift-", dir=os.path.dirname(target))
    try:
        live_path = os.path.join(folder, os.path.basename(target))
        extra = {ALLOW_ENV: "1" if allow_side_effects else "0"}
        code, report, stderr = run_child(
            command, live_path, "record", extra=extra, capture=fmt == "json"
        )
        out = console()
        if report is None or not os.path.exists(live_path):
            out.print(no_report(command, code, stderr), markup=False)
            out.print(f"no live recording to compare; {cassette} was left as it was")
            raise Finding
        live = load(live_path)
        blocked = frozenset(c["key"] for c in report["calls"] if c["source"] == "blocked")
        found = compare_drift(recorded, live, live_code=code, ignore=ignore, blocked=blocked)
        kept = why_kept(found, report["unanswered"], cassette)
        if fmt != "json":
            out.print(drift_text(found, cassette=cassette, width=40), markup=False)
            out.print(verdict(found, cassette, again), markup=False)
        # Replacing the cassette makes its branches stale: then they are not run against it.
        replacing = update and kept is None
        ran: list[BranchDrift] = []
        if not replacing:
            ran = rerun_all(
                command,
                cassette,
                branches,
                folder,
                allow_side_effects=allow_side_effects,
                ignore=ignore,
            )
        if fmt == "json":
            said = [branch_json(one) for one in ran]
            emit_json({**drift_json(found, cassette=cassette), "branches": said})
        else:
            text = branches_text(ran, cassette, again, replaces_cassette=kept is None)
            if text:
                out.print(text, markup=False)
        if update:
            _update(cassette, target, live_path, found, kept)
            if replacing and branches:
                click.echo(stale_now(cassette, len(branches), again), err=True)
            update_branches(ran)
        if found.drifted or any(one.finding for one in ran):
            raise Finding
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def verdict(found: Drift, cassette: str, command: tuple[str, ...]) -> str:
    """The last line: nothing moved, or how to take the live run as the new recording."""
    if not found.drifted:
        return f"no drift: {cassette} still matches a live run"
    if not found.live.ok and found.blocked:
        return (
            "the live run failed at a side effect it was not let run, so it does not say "
            "whether the world moved; see the blocked line above"
        )
    if not found.live.ok:
        return (
            f"drifted, and the live run failed: {cassette} replays a world that is gone; "
            "fix the program against the changes above before re-recording"
        )
    again = f"faultdeck drift {cassette} --update {shlex.join(command)}"
    return f"drifted: {cassette} is stale; review the changes above, then: {again}"


def _update(cassette: str, target: str, live_path: str, found: Drift, kept: str | None) -> None:
    """``--update``: put the live recording in place, unless ``kept`` says why not."""
    if kept is not None:
        click.echo(kept, err=True)
        return
    os.replace(live_path, target)
    click.echo(f"updated {cassette} with the live recording", err=True)
    if found.appended:
        n = len(found.appended)
        click.echo(
            f"faultdeck: warning: the {n} call{'s' if n > 1 else ''} a later append run had "
            f"added to {cassette} (paths taken under faults) {'are' if n > 1 else 'is'} not in "
            "the live recording; "
            "record them again with: faultdeck record --mode append",
            err=True,
        )
