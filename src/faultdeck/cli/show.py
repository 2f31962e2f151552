"""``faultdeck show``: a cassette's header, its calls, how its run ended, and the lineage of
a fork."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from typing import Any

import click
import orjson
from rich.markup import escape
from rich.table import Table

from .._base import config as _config
from .._base import terms
from .._base.words import plural
from .._cassette.format import Entry, Recording
from .._cassette.reader import load
from .._cassette.store import is_url
from .._cassette.summary import show_json
from .._cassette.writer import partial_path
from .._diff.fork import Link, lineage
from .._diff.order import run_order
from .._rehearse.branches import listed
from ._common import FORMAT, FORMAT_HELP, console, emit_json


@click.command()
@click.argument("cassette", type=click.Path(dir_okay=False))
@click.option("--format", "fmt", type=FORMAT, default="text", help=FORMAT_HELP)
def show(cassette: str, fmt: str) -> None:
    """Show a cassette: its header, its calls, and whether the run ended cleanly.

    A fork (faultdeck fork) shows its lineage too: the cassettes it descends from and
    the seq each one forked at; a rehearsed cassette, the branches kept beside it
    (rehearse --branches record).

    \b
    faultdeck show runs/base.jsonl
    faultdeck show runs/base.jsonl --format json | jq '.calls[] | select(.error)'
    """
    recording = load(cassette)
    links = lineage(cassette, recording, root=_config.load_settings().root)
    if fmt == "json":
        data = show_json(recording, cassette)
        if links:
            data["lineage"] = [
                {"path": k.path, "forked_at": k.forked_at, "state": k.state} for k in links
            ]
        kept = listed(cassette)
        if kept:
            data["branches"] = [
                {
                    "path": path,
                    "cell": branch.label if branch else None,
                    "seq": branch.seq if branch else None,
                    "left_at": branch.left_at if branch else None,
                    "state": state,
                }
                for path, branch, state in kept
            ]
        emit_json(data)
        return
    out = console()
    header = recording.header
    out.print(
        f"[bold]{escape(cassette)}[/]: format {header.version}, match {header.match}, "
        f"{recorded_at(header.harness)}"
    )
    for line in lineage_lines(links):
        out.print(line, markup=False)
    for line in branch_lines(cassette):
        out.print(line, markup=False)
    table = Table(header_style="bold", box=None, pad_edge=False)
    for column in ("seq", "kind", "name", "key", "ms", "size", "error or fault"):
        table.add_column(column, justify="right" if column in ("seq", "ms", "size") else "left")
    places = {id(entry): place for entry, place in run_order(recording.entries)}
    for entry in recording.entries:
        table.add_row(
            places[id(entry)],
            entry.kind,
            entry.name,
            entry.key,
            f"{entry.ms:.1f}",
            f"{len(orjson.dumps(entry.value)):,} B",
            outcome_text(entry),
        )
    out.print(table)
    if any("+" in place for place in places.values()):
        out.print("N+k: the k-th call that a later run in append mode added after seq N")
    out.print(ending(recording, cassette), markup=False)
    if is_url(cassette):
        return  # a store holds whole cassettes only: nothing unfinished lies beside one
    partial = partial_path(os.path.realpath(cassette))
    if os.path.exists(partial) and os.path.realpath(cassette) != partial:
        out.print(
            f"a newer recording that did not finish is beside it: {partial} "
            f"({terms.current().about(cassette).resume} finishes it)",
            markup=False,
        )


_STATE = {
    "found": "",
    "changed": "  (changed since the fork: its sha256 differs, so the calls are no longer shared)",
    "missing": "  (not found: the lineage stops here)",
}


def branch_lines(cassette: str) -> list[str]:
    """The branches ``rehearse --branches record`` kept beside the cassette, one a line."""
    found = listed(cassette)
    lines = ["branches:"] if found else []
    for path, branch, state in found:
        name = os.path.basename(path)
        if branch is None:
            lines.append(f"  {name}: not a branch of this cassette ({state})")
            continue
        at = "" if branch.seq is None else f" at seq {branch.seq}"
        stale = " (stale: the cassette changed since; not used)" if state == "stale" else ""
        lines.append(f"  {name}: {branch.label}{at}, off the path at seq {branch.left_at}{stale}")
    return lines


def lineage_lines(links: Sequence[Link]) -> list[str]:
    """A fork's lineage as a tree, oldest first: each cassette under its parent, with the
    seq it forked at (and the model it was sent to); ``[]`` for a cassette that is no fork."""
    if not links:
        return []
    lines = ["lineage:"]
    for depth, link in enumerate(links):
        head = f"  {link.path}" if depth == 0 else f"  {'   ' * (depth - 1)}└─ {link.path}"
        if link.forked_at is not None:
            head += f" forked at seq {link.forked_at}"
        if link.model is not None:
            head += f", sent to {link.model}"
        lines.append(head + (" (this cassette)" if depth == len(links) - 1 else _STATE[link.state]))
    return lines


_SHA = re.compile(r"[0-9a-f]{7,40}")


def recorded_at(harness: dict[str, Any]) -> str:
    """Where the cassette was recorded, in words: a commit, or outside git."""
    sha = harness.get("git_sha")
    if not (isinstance(sha, str) and _SHA.fullmatch(sha)):
        return "recorded outside git"
    return f"recorded at commit {sha}{' (uncommitted changes)' if harness.get('dirty') else ''}"


def ending(recording: Recording, cassette: str) -> str:
    """How the recorded run ended, in words."""
    calls = plural(len(recording.entries), "call")
    said = terms.current().about(cassette)
    in_flight = len(recording.in_flight())
    if recording.interrupted:
        flying = f", {plural(in_flight, 'call')} in flight" if in_flight else ""
        return (
            f"interrupted: the run stopped after {calls}{flying} without closing (killed or "
            f"crashed); finish it with {said.resume}"
        )
    if recording.failed:
        return (
            f"failed: the run raised an error after {calls} and closed; what it recorded "
            f"replays; re-record it once the error is fixed ({said.record})"
        )
    return f"ended cleanly: {calls}"


def outcome_text(entry: Entry) -> str:
    """The error or fault column of ``show``."""
    parts = []
    if entry.result == "error":
        error = entry.value
        detail = [f"{k} {error[k]}" for k in ("status", "retry_after", "code") if k in error]
        parts.append(f"{error['type']}" + (f" ({', '.join(detail)})" if detail else ""))
    elif entry.result == "stream":
        parts.append(f"stream, {plural(len(entry.value['events']), 'event')}")
    if entry.fault is not None:
        parts.append(f"fault: {entry.fault.get('fault')}")
    return "; ".join(parts)
