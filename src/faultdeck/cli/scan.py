"""``faultdeck scan``: cassettes audited for credential-shaped strings and, with
``--max-age``, for being older than the project allows."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from .._base import config as _config
from .._base.words import plural
from .._keys.redact import Redactor
from ._common import FORMAT, FORMAT_HELP, Finding, emit_json


@click.command()
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
    """The files ``scan`` reads: the files named with their rehearsal branches
    (``base.branches/*.jsonl`` beside ``base.jsonl``), and the *.jsonl files under the
    folders named (a folder whose name ends in .jsonl is a folder, not a cassette)."""
    from .._rehearse.branches import folder_of

    files: list[Path] = []
    for name in paths:
        path = Path(name)
        if path.is_dir():
            files.extend(sorted(p for p in path.rglob("*.jsonl") if p.is_file()))
        elif path.is_file():
            files.append(path)
            branches = Path(folder_of(name))
            if branches.is_dir():
                files.extend(sorted(p for p in branches.glob("*.jsonl") if p.is_file()))
        else:
            raise click.UsageError(f"no such file or folder: {name}")
    return list(dict.fromkeys(files))
