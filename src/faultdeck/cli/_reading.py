"""The commands that read cassettes: ``diff``, ``show`` and ``scan``."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Sequence
from pathlib import Path
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
from .._diff.align import diff_recordings
from .._diff.fork import Link, forked, lineage
from .._diff.render import diff_html, diff_json, diff_text
from .._keys.redact import Redactor
from ._common import FORMAT, FORMAT_HELP, Finding, cli, console, emit_json


@cli.command()
@click.argument("a", type=click.Path(dir_okay=False))
@click.argument("b", type=click.Path(dir_okay=False))
@click.option("--responses", is_flag=True, help="Compare outputs too, not only args.")
@click.option(
    "--ignore", multiple=True, metavar="FIELD", help="A field never compared (repeatable)."
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "html"]),
    default="text",
    help=f"{FORMAT_HELP[:-1]}; html: one self-contained page (with -o FILE).",
)
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write to a file.")
def diff(
    a: str, b: str, responses: bool, ignore: tuple[str, ...], fmt: str, output: str | None
) -> None:
    """Diff the call paths of two cassettes; exit 1 when they diverge.

    When one forked from the other (faultdeck fork), the calls up to the fork point are
    shared: the diff says so and compares from there.

    \b
    faultdeck diff runs/base.jsonl runs/new.jsonl
    faultdeck diff runs/base.jsonl runs/new.jsonl --responses --ignore trace_id
    faultdeck diff runs/base.jsonl runs/new.jsonl --format html -o diff.html
    """
    rec_a, rec_b = load(a), load(b)
    fork = forked(a, rec_a, b, rec_b, root=_config.load_settings().root)
    result = diff_recordings(rec_a, rec_b, responses=responses, ignore=ignore, forked=fork)
    if fmt == "json":
        text = orjson.dumps(diff_json(result), option=orjson.OPT_INDENT_2).decode()
    elif fmt == "html":
        text = diff_html(result)
    else:
        text = diff_text(result, width=max(60, console().width))
    if output:
        Path(output).write_text(text, "utf-8")
        click.echo(f"wrote {output}: {result.first_divergence()}")
    else:
        click.echo(text)
    if not result.identical:
        raise Finding


@cli.command()
@click.argument("cassette", type=click.Path(dir_okay=False))
@click.option("--format", "fmt", type=FORMAT, default="text", help=FORMAT_HELP)
def show(cassette: str, fmt: str) -> None:
    """Show a cassette: its header, its calls, and whether the run ended cleanly.

    A fork (faultdeck fork) shows its lineage too: the cassettes it descends from and
    the seq each one forked at.

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
    table = Table(header_style="bold", box=None, pad_edge=False)
    for column in ("seq", "kind", "name", "key", "ms", "size", "error or fault"):
        table.add_column(column, justify="right" if column in ("seq", "ms", "size") else "left")
    for entry in recording.entries:
        table.add_row(
            str(entry.seq),
            entry.kind,
            entry.name,
            entry.key,
            f"{entry.ms:g}",
            f"{len(orjson.dumps(entry.value)):,} B",
            outcome_text(entry),
        )
    out.print(table)
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


def lineage_lines(links: Sequence[Link]) -> list[str]:
    """A fork's lineage as a tree, oldest first: each cassette under its parent, with the
    seq it forked at; ``[]`` for a cassette that is no fork."""
    if not links:
        return []
    lines = ["lineage:"]
    for depth, link in enumerate(links):
        head = f"  {link.path}" if depth == 0 else f"  {'   ' * (depth - 1)}└─ {link.path}"
        if link.forked_at is not None:
            head += f" forked at seq {link.forked_at}"
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


@cli.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option("--format", "fmt", type=FORMAT, default="text", help=FORMAT_HELP)
@click.option(
    "--max-age",
    "max_age",
    metavar="AGE",
    is_flag=False,
    flag_value="",
    default=None,
    help="Also report cassettes last committed longer ago than AGE (90d, 12h, 2w; "
    "default: [tool.faultdeck] max_age).",
)
def scan(paths: tuple[str, ...], fmt: str, max_age: str | None) -> None:
    """Audit cassettes for credential-shaped strings; exit 1 on any.

    Uses faultdeck's table of credential shapes and the project's own patterns
    ([tool.faultdeck.redact_patterns]). Prints file:line and the pattern's name, never the
    secret. A folder is searched for *.jsonl files. With --max-age, cassettes whose last
    git commit is older than the age are findings too (uncommitted ones are not).

    \b
    faultdeck scan cassettes/
    faultdeck scan cassettes/ --format json
    faultdeck scan cassettes/ --max-age 90d
    """
    settings = _config.load_settings()
    age = scan_age(max_age, settings.max_age)
    redactor = Redactor(extra_patterns=settings.redact_patterns)
    files = cassette_files(paths)
    findings: list[dict[str, Any]] = []
    for path in files:
        with open(path, encoding="utf-8", errors="replace") as fh:
            for number, line in enumerate(fh, start=1):
                findings.extend(
                    {"file": str(path), "line": number, "pattern": pattern}
                    for pattern in redactor.scan_text(line)
                )
    holding = len({f["file"] for f in findings})
    stale = stale_cassettes(files, age, time.time()) if age is not None else []
    if fmt == "json":
        data: dict[str, Any] = {"files": len(files), "files_with_findings": holding}
        data["findings"] = findings
        if age is not None:
            data.update(max_age=age[0], stale=stale)
        emit_json(data)
    else:
        for finding in findings:
            click.echo(f"{finding['file']}:{finding['line']}: {finding['pattern']}")
        if findings:
            click.echo(
                f"{plural(len(findings), 'credential-shaped string')} in "
                f"{plural(holding, 'file')} of {len(files)}; rotate them and re-record",
                err=True,
            )
        else:
            click.echo(f"no secrets in {plural(len(files), 'file')}")
        if age is not None:
            print_stale(stale, age[0], len(files))
    if findings or stale:
        raise Finding


def scan_age(given: str | None, setting: str | None) -> tuple[str, float] | None:
    """``--max-age``'s age as written and in seconds: the one given, the setting's when
    given bare, ``None`` when not asked."""
    if given is None:
        return None
    text = given or setting
    if not text:
        raise click.UsageError(
            "--max-age needs an AGE (e.g. --max-age 90d) or max_age in [tool.faultdeck]"
        )
    try:
        return text, _config.parse_age(text)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="'--max-age'") from None


def stale_cassettes(
    files: Sequence[Path], age: tuple[str, float], now: float
) -> list[dict[str, Any]]:
    """The files last committed more than ``age`` before ``now``; files outside git are
    said once, in a warning."""
    stale: list[dict[str, Any]] = []
    outside = 0
    for path in files:
        committed = _config.last_commit(path)
        outside += not committed.in_git
        if committed.at is not None and now - committed.at > age[1]:
            days = int((now - committed.at) // 86400)
            stamp = time.strftime("%Y-%m-%d", time.gmtime(committed.at))
            stale.append({"file": str(path), "committed": stamp, "days": days})
    if outside:
        click.echo(
            f"faultdeck: warning: {plural(outside, 'file')} not in a git repository: "
            f"--max-age cannot tell {'its' if outside == 1 else 'their'} age",
            err=True,
        )
    return stale


def print_stale(stale: list[dict[str, Any]], age: str, files: int) -> None:
    """``scan --max-age``'s lines: each stale cassette, then how many."""
    for found in stale:
        click.echo(
            f"{found['file']}: last committed {found['committed']} ({found['days']} days ago), "
            f"older than max_age {age}"
        )
    if stale:
        click.echo(
            f"{plural(len(stale), 'cassette')} of {files} last committed more than {age} ago; "
            "check each against a live run: faultdeck drift CASSETTE -- CMD",
            err=True,
        )
    else:
        click.echo(f"no cassette last committed more than {age} ago")


def cassette_files(paths: Sequence[str]) -> list[Path]:
    """The files ``scan`` reads: the files named, and the *.jsonl files under the folders
    named (a folder whose name ends in .jsonl is a folder, not a cassette)."""
    files: list[Path] = []
    for name in paths:
        path = Path(name)
        if path.is_dir():
            files.extend(sorted(p for p in path.rglob("*.jsonl") if p.is_file()))
        elif path.is_file():
            files.append(path)
        else:
            raise click.UsageError(f"no such file or folder: {name}")
    return files
