"""``faultdeck compare``: cassettes side by side, a row each.

Each row sums one cassette up (``_cassette/summary.py``): its calls, the tokens its answers
say they used, the time its calls took as recorded, the calls recorded under an injected
fault, the models its requests asked for. With a program after ``--``, the program is run
once against each cassette, as ``faultdeck replay`` runs it, and its exit code is the
row's verdict: which of two runs (a recording and its fork onto another model, say) still
replays with the program as it is now. Every cassette is read before any program runs.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from typing import Any

import click
from rich.table import Table

from .._base import terms
from .._base.words import plural
from .._cassette.summary import Brief, brief
from ._child import run_child
from ._common import (
    FORMAT,
    FORMAT_HELP,
    BeforeTheProgram,
    Finding,
    check_cassette,
    console,
    emit_json,
)

Verdict = tuple[int, int | None, str]
"""A program's replay of one cassette: its exit code, its deck's misses (``None``: its deck
wrote no report) and the last line it wrote on stderr."""


@click.command(cls=BeforeTheProgram)
@click.argument("cassettes", metavar="CASSETTE...", nargs=-1, required=True)
@click.option("--format", "fmt", type=FORMAT, default="text", help=FORMAT_HELP)
def compare(cassettes: tuple[str, ...], command: tuple[str, ...], fmt: str) -> None:
    """Compare cassettes, a row each: calls, tokens, time, faults, models.

    Tokens are summed from the usage the recorded answers hold (OpenAI's prompt and
    completion tokens or input and output tokens, Anthropic's input and output tokens, a
    stream's last usage); time is the calls' recorded ms, summed; faults are the calls
    recorded under an injected fault; models are those the requests asked for. With a
    program after --, it is replayed once against each cassette (as faultdeck replay runs
    it) and its exit code shown; exit 1 when it failed on any.

    \b
    faultdeck compare runs/base.jsonl runs/4o.jsonl
    faultdeck compare runs/base.jsonl runs/4o.jsonl -- python agent.py
    faultdeck compare runs/*.jsonl --format json
    """
    briefs = [brief(check_cassette(path)) for path in cassettes]  # bad input: before any run
    verdicts = [verify(command, path) for path in cassettes] if command else None
    if fmt == "json":
        emit_json(compare_json(cassettes, briefs, verdicts, command))
    else:
        print_rows(cassettes, briefs, verdicts, command)
    if verdicts is not None and not all(passed(v) for v in verdicts):
        raise Finding


def verify(command: Sequence[str], cassette: str) -> Verdict:
    """Replay ``cassette`` through ``command`` once, its output not shown."""
    with terms.speaking(terms.command_line(cassette, command)):
        extra = {"FAULTDECK_CASSETTE_CHECKED": "1"}  # read here already: said once
        code, report, stderr = run_child(command, cassette, "replay", extra=extra, capture=True)
    last = next((line for line in reversed(stderr.splitlines()) if line.strip()), "")
    return code, len(report["misses"]) if report is not None else None, last.strip()


def passed(verdict: Verdict) -> bool:
    """Whether a replay passed, as ``faultdeck replay`` says: exit 0 and no miss."""
    return verdict[:2] == (0, 0)


def compare_json(
    cassettes: Sequence[str],
    briefs: Sequence[Brief],
    verdicts: Sequence[Verdict] | None,
    command: Sequence[str],
) -> dict[str, Any]:
    """``compare --format json``: a row a cassette, and the program that verified them."""
    rows = []
    for index, (path, row) in enumerate(zip(cassettes, briefs, strict=True)):
        data: dict[str, Any] = {
            "cassette": path,
            "calls": row.calls,
            "tokens": {"input": row.tokens_in, "output": row.tokens_out},
            "ms": row.ms,
            "faults": row.faults,
            "models": list(row.models),
        }
        if verdicts is not None:
            code, misses, _ = verdicts[index]
            data["verify"] = {"exit": code, "misses": misses, "passed": passed(verdicts[index])}
        rows.append(data)
    return {"cassettes": rows, "verify": list(command) if command else None}


def print_rows(
    cassettes: Sequence[str],
    briefs: Sequence[Brief],
    verdicts: Sequence[Verdict] | None,
    command: Sequence[str],
) -> None:
    """``compare``'s table, then a line for each cassette the program failed on."""
    out = console()
    table = Table(header_style="bold", box=None, pad_edge=False)
    columns = ["cassette", "calls", "tokens in", "tokens out", "ms", "faults", "models"]
    for column in [*columns, "verify"] if verdicts is not None else columns:
        left = column in ("cassette", "models", "verify")
        table.add_column(column, justify="left" if left else "right")
    for index, (path, row) in enumerate(zip(cassettes, briefs, strict=True)):
        cells = [
            path,
            str(row.calls),
            _count(row.tokens_in),
            _count(row.tokens_out),
            f"{row.ms:g}",
            str(row.faults),
            ", ".join(row.models) or "-",
        ]
        if verdicts is not None:
            cells.append(_verdict(verdicts[index]))
        table.add_row(*cells)
    out.print(table)
    if verdicts is None:
        return
    program = shlex.join(command)
    failed = [(path, v) for path, v in zip(cassettes, verdicts, strict=True) if not passed(v)]
    for path, (_, _, last) in failed:
        said = f" ({last})" if last else ""
        again = f"faultdeck replay {shlex.quote(path)} -- {program}"
        out.print(f"{program} failed on {path}{said}; see why with: {again}", markup=False)
    if not failed:
        out.print(f"{program} replays on each of {plural(len(cassettes), 'cassette')}")


def _count(tokens: int | None) -> str:
    return "-" if tokens is None else f"{tokens:,}"


def _verdict(verdict: Verdict) -> str:
    code, misses, _ = verdict
    if misses is None:
        return f"exit {code}, no report"
    return f"exit {code}, {plural(misses, 'miss', 'misses')}" if misses else f"exit {code}"
