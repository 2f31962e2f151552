"""``faultdeck record`` and ``faultdeck resume``: run a program under a deck that records,
then put what it recorded in the cassette's place, only once the run finished cleanly
(else it stays beside the cassette, for ``resume`` to finish)."""

from __future__ import annotations

import os
import shutil

import click

from .._base import terms
from .._base.words import plural
from .._cassette import store
from .._cassette.reader import load
from .._cassette.writer import partial_path
from .._deck.outage import outage_line
from ._child import no_report, run_child
from ._common import Finding, console


@click.command()
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


@click.command()
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
