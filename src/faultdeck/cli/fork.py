"""``faultdeck fork``: replay a cassette's first calls, then record the rest into a new one.

It runs the program as ``record`` does (``FAULTDECK_*`` set, the deck from
``fd.Deck.from_env()``, mode ``fork`` with ``FAULTDECK_FORK_PARENT`` and
``FAULTDECK_FORK_AT``, and ``FAULTDECK_FORK_MODEL`` with ``--model``), and places the new
cassette the same way: over ``-o`` only once the program exits 0, else kept beside it. The
parent is only read. Bad input (a missing parent, a fork point beyond its calls, ``-o``
naming the parent, ``--model`` where the first live call names no model) is said before any
program runs, and nothing is written.
"""

from __future__ import annotations

import os
import shlex
import warnings

import click

from .._base import config as _config
from .._base import terms
from .._base.errors import CassetteWarning
from .._base.words import plural
from .._cassette import store
from .._cassette.reader import interrupted_warning
from .._cassette.writer import partial_path
from .._deck.fork import AT_ENV, PARENT_ENV, ForkPoint, start_fork
from .._deck.outage import outage_line
from .._deck.retarget import MODEL_ENV
from ._child import location, no_report, run_child
from ._common import Finding, console
from .record import finished


@click.command()
@click.argument("cassette", type=click.Path(dir_okay=False))
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
@click.option(
    "--at",
    type=click.IntRange(min=0),
    required=True,
    metavar="N",
    help="Replay CASSETTE's calls with seq 1 to N (as `faultdeck show` numbers them); "
    "every later call runs live.",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False),
    required=True,
    metavar="NEW",
    help="The new cassette: CASSETTE's first N calls, then what the program did live.",
)
@click.option(
    "--model",
    metavar="NAME",
    help="Send every live call that names a model in its request (the JSON body's `model`: "
    "OpenAI, Anthropic) to NAME instead; NEW records what was sent and replays with the "
    "same program.",
)
def fork(cassette: str, command: tuple[str, ...], at: int, output: str, model: str | None) -> None:
    """Replay CASSETTE's first N calls, then run live and record into a new cassette.

    The program needs no faultdeck in it: a Python one gets its deck at start-up. Calls
    1 to N must match CASSETTE as a replay matches them (a miss fails the run); from N+1
    every call runs live. NEW starts with CASSETTE's calls 1 to N, so it replays on its own, and its
    header names CASSETTE and N: `faultdeck diff CASSETTE NEW` compares from the fork
    point, `faultdeck show NEW` draws the lineage. CASSETTE is never written; an existing
    NEW is replaced only when the program exits 0.

    With --model, the live calls go to another model: their requests are rewritten as they
    are sent, NEW's header names the model, and `faultdeck replay NEW -- CMD` sends the
    same calls to it again, so the program needs no change.

    \b
    faultdeck fork runs/base.jsonl --at 3 -o runs/explore.jsonl -- python agent.py --try b
    faultdeck fork runs/base.jsonl --at 1 --model gpt-4o -o runs/4o.jsonl -- python agent.py
    """
    terms.use(terms.command_line(None, command))  # hints name the cassette they are about
    check_options(cassette, command, output, model)
    # A missing or corrupt parent, or a fork point beyond its calls: said before any run.
    shared, _ = start_fork(
        ForkPoint(cassette, at, model), root=_config.load_settings().root, option="--at "
    )
    if shared.interrupted:
        warnings.warn(interrupted_warning(cassette), CassetteWarning, stacklevel=2)
    partial = partial_path(os.path.realpath(output))
    extra = {
        "FAULTDECK_DEFER_REPLACE": "1",
        "FAULTDECK_CASSETTE_CHECKED": "1",
        PARENT_ENV: location(cassette),
        AT_ENV: str(at),
    }
    if model is not None:
        extra[MODEL_ENV] = model
    code, report, stderr = run_child(command, output, "fork", extra=extra)
    out = console()
    if report is None:
        out.print(no_report(command, code, stderr), markup=False)
        raise Finding
    answered = not report["unanswered"]  # else the recording lacks calls: it places nothing
    placed = code == 0 and answered and finished(partial)
    if placed:
        os.replace(partial, os.path.realpath(output))
    sent_to = f" (sent to {model})" if model is not None else ""
    out.print(
        f"forked {cassette} at seq {at} into {output}: {plural(report['used'], 'call')} "
        f"replayed, {report['stored']} live{sent_to}",
        markup=False,
    )
    if not answered:
        line = outage_line(
            mode="fork",
            stored=report["stored"],
            used=report["used"],
            unanswered=report["unanswered"],
            cassette=output,
            kept=partial if os.path.exists(partial) else None,
        )
        out.print(line, markup=False)
    if code != 0:
        out.print(f"the program exited with {code}")
        if answered and os.path.exists(partial):
            kept_as = "left as it was" if os.path.exists(output) else "not written"
            again = f"faultdeck resume {output} -- {shlex.join(command)}"
            out.print(
                f"{output} was {kept_as}; the new recording is in {partial} "
                f"(finish it with: {again})",
                markup=False,
            )
    if code != 0 or not answered:
        raise Finding


def check_options(cassette: str, command: tuple[str, ...], output: str, model: str | None) -> None:
    """The usage errors ``fork`` says before it reads the parent."""
    if not command:
        raise click.UsageError("give the program to run after --, e.g. -- python agent.py")
    if model is not None and not model.strip():
        raise click.UsageError("--model is empty: give the model to send the live calls to")
    if store.is_url(output):
        raise click.UsageError(
            f"-o {output}: a fork is written to a local file; fork into a path, then upload it"
        )
    if not store.is_url(cassette) and os.path.realpath(cassette) == os.path.realpath(output):
        raise click.UsageError(
            f"-o {output} is CASSETTE itself: a fork leaves its parent as it was; name a new file"
        )
