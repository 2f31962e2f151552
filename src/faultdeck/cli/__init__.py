"""The ``faultdeck`` command.

Exit codes: 0 ok, 1 a finding (a divergence, a miss, a violated invariant, a secret, a
failing run), 2 a usage or input error. Every error is one line; ``--debug`` adds the
traceback. Output is rich on a terminal and plain when piped; ``--format json`` is for
machines.
"""

from __future__ import annotations

import importlib
import os
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click
import orjson
from rich.console import Console
from rich.table import Table

from .._base import config as _config
from .._base.errors import FaultdeckError
from .._cassette.reader import Entry, Recording, load
from .._cassette.writer import partial_path
from .._diff.align import diff_recordings, render_html, render_json, render_text
from .._judge.policy import Policy
from .._keys.redact import Redactor
from ..faults._fault import FaultPlan
from ._run import first_difference, no_report, print_replays, progress_bar, run_child

EXIT_OK, EXIT_FINDING, EXIT_USAGE = 0, 1, 2


class Finding(Exception):
    """A command found something (exit 1); its message has been printed already."""


def console() -> Console:
    """stdout: rich on a terminal; plain, unwrapped text when piped."""
    out = Console(highlight=False, soft_wrap=True)
    if not out.is_terminal:
        out = Console(highlight=False, soft_wrap=True, width=max(out.width, 200))
    return out


def emit_json(data: Any) -> None:
    """Print JSON for machines."""
    click.echo(orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode())


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="faultdeck")
@click.option("--debug", is_flag=True, help="Show tracebacks on errors.")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """Record an agent's boundary calls, replay them offline, rehearse failures on top.

    \b
    faultdeck record runs/base.jsonl -- python agent.py
    faultdeck replay runs/base.jsonl --repeat 20 -- python agent.py
    faultdeck rehearse runs/base.jsonl --entrypoint myagent.rehearsal:run
    faultdeck diff runs/base.jsonl runs/new.jsonl
    """
    ctx.obj = {"debug": debug}


# -- running a program with a deck ---------------------------------------------------------


@cli.command(context_settings={"ignore_unknown_options": True})
@click.argument("cassette", type=click.Path(dir_okay=False))
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def record(cassette: str, command: tuple[str, ...]) -> None:
    """Run a program, recording its boundary calls into CASSETTE.

    The program creates its deck with fd.Deck.from_env(). An existing CASSETTE is
    replaced only when the program exits 0; otherwise it stays as it was and the new
    recording is kept beside it, for `faultdeck resume`.

    \b
    faultdeck record runs/base.jsonl -- python agent.py --task fix-retry
    """
    run_writing(cassette, command, "record")


@cli.command(context_settings={"ignore_unknown_options": True})
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
    partial = partial_path(os.path.realpath(cassette))
    extra = {"FAULTDECK_DEFER_REPLACE": "1"}
    code, report, _ = run_child(command, cassette, mode, extra=extra)
    out = console()
    if report is None:
        out.print(no_report(command))
        raise Finding
    calls = report["live"] + report["used"]
    placed = code == 0 and finished(partial)
    if placed:
        os.replace(partial, os.path.realpath(cassette))
    verb = "recorded" if mode == "record" else "resumed"
    out.print(f"{verb} {plural(calls, 'call')} ({report['live']} live) into {cassette}")
    if code != 0:
        out.print(f"the program exited with {code}")
        if os.path.exists(partial):
            kept = "left as it was" if os.path.exists(cassette) else "not written"
            out.print(
                f"{cassette} was {kept}; the new recording is in {partial} "
                f"(finish it with: faultdeck resume {cassette} -- {' '.join(command)})",
                markup=False,
            )
        raise Finding


def finished(path: str) -> bool:
    """Whether the recording at ``path`` exists and ended cleanly."""
    if not os.path.exists(path):
        return False
    recording = load(path)
    return recording.end is not None and recording.end.get("status") == "ok"


def plural(n: int, word: str) -> str:
    """``1 call``, ``2 calls``."""
    return f"{n} {word}{'' if n == 1 else 's'}"


@cli.command(context_settings={"ignore_unknown_options": True})
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
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text")
def replay(
    cassette: str, command: tuple[str, ...], repeat: int, plan: str | None, fmt: str
) -> None:
    """Run a program offline against CASSETTE; report misses, unused and repeated calls.

    Each run sees FAULTDECK_RUN (0, 1, …), so a program can seed per run. A pass rate
    strictly between 0 and 1 is flakiness, shown with the first call the runs disagree on.

    \b
    faultdeck replay runs/base.jsonl -- python agent.py
    faultdeck replay runs/base.jsonl --repeat 20 --faults plans/quota.json -- python agent.py
    """
    load(cassette)  # a missing or corrupt cassette is an input error before anything runs
    extra = {}
    if plan is not None:
        FaultPlan.load(plan)
        extra["FAULTDECK_FAULTS"] = os.path.abspath(plan)
    runs: list[tuple[int, dict[str, Any] | None, str]] = []
    for index in range(repeat):
        extra["FAULTDECK_RUN"] = str(index)
        runs.append(run_child(command, cassette, "replay", extra=extra, capture=repeat > 1))
    passed = [code == 0 and report is not None and not report["misses"] for code, report, _ in runs]
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
        print_replays(console(), cassette, command, runs, passed, difference)
    if rate < 1:
        raise Finding


# -- reading cassettes ---------------------------------------------------------------------


@cli.command()
@click.argument("a", type=click.Path(dir_okay=False))
@click.argument("b", type=click.Path(dir_okay=False))
@click.option("--responses", is_flag=True, help="Compare outputs too, not only args.")
@click.option(
    "--ignore", multiple=True, metavar="FIELD", help="A field never compared (repeatable)."
)
@click.option("--format", "fmt", type=click.Choice(["text", "json", "html"]), default="text")
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write to a file.")
def diff(
    a: str, b: str, responses: bool, ignore: tuple[str, ...], fmt: str, output: str | None
) -> None:
    """Diff the call paths of two cassettes; exit 1 when they diverge.

    \b
    faultdeck diff runs/base.jsonl runs/new.jsonl
    faultdeck diff runs/base.jsonl runs/new.jsonl --responses --ignore trace_id
    faultdeck diff runs/base.jsonl runs/new.jsonl --format html -o diff.html
    """
    result = diff_recordings(load(a), load(b), responses=responses, ignore=ignore)
    if fmt == "json":
        text = orjson.dumps(render_json(result), option=orjson.OPT_INDENT_2).decode()
    elif fmt == "html":
        text = render_html(result)
    else:
        text = render_text(result, width=max(60, console().width))
    if output:
        Path(output).write_text(text, "utf-8")
        click.echo(f"wrote {output}: {result.first_divergence()}")
    else:
        click.echo(text)
    if not result.identical:
        raise Finding


@cli.command()
@click.argument("cassette", type=click.Path(dir_okay=False))
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text")
def show(cassette: str, fmt: str) -> None:
    """Show a cassette: its header, its calls, and whether the run ended cleanly.

    \b
    faultdeck show runs/base.jsonl
    faultdeck show runs/base.jsonl --format json | jq '.calls[] | select(.error)'
    """
    recording = load(cassette)
    if fmt == "json":
        status = "interrupted" if recording.interrupted else "failed" if recording.failed else "ok"
        emit_json(
            {
                "cassette": cassette,
                "header": recording.header.to_json(),
                "ended": recording.end,
                "status": status,
                "interrupted": recording.interrupted,
                "in_flight": [i.seq for i in recording.in_flight()],
                "calls": [dict(e.to_json(), line=e.line) for e in recording.entries],
            }
        )
        return
    out = console()
    header = recording.header
    sha = header.harness.get("git_sha")
    where = f"recorded at commit {sha}" if sha else "recorded outside git"
    out.print(
        f"[bold]{cassette}[/]: format {header.version}, match {header.match}, "
        f"{where}{' (uncommitted changes)' if header.harness.get('dirty') else ''}"
    )
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
    partial = partial_path(os.path.realpath(cassette))
    if os.path.exists(partial) and os.path.realpath(cassette) != partial:
        out.print(
            f"a newer recording that did not finish is beside it: {partial} "
            f"(faultdeck resume {cassette} -- CMD finishes it)",
            markup=False,
        )


def ending(recording: Recording, cassette: str) -> str:
    """How the recorded run ended, in words."""
    calls = plural(len(recording.entries), "call")
    in_flight = len(recording.in_flight())
    if recording.interrupted:
        flying = f", {plural(in_flight, 'call')} in flight" if in_flight else ""
        return (
            f"interrupted: the run stopped after {calls}{flying} without closing (killed or "
            f"crashed); finish it with faultdeck resume {cassette} -- CMD, or mode='resume'"
        )
    if recording.failed:
        return (
            f"failed: the run raised an error after {calls} and closed; what it recorded "
            "replays, re-record it once the error is fixed"
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
        parts.append(f"stream, {len(entry.value['events'])} events")
    if entry.fault is not None:
        parts.append(f"fault: {entry.fault.get('fault')}")
    return "; ".join(parts)


@cli.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json"]),
    default="text",
    help="text for people, json for machines.",
)
def scan(paths: tuple[str, ...], fmt: str) -> None:
    """Audit cassettes for credential-shaped strings; exit 1 on any.

    Uses faultdeck's table of credential shapes and the project's own patterns
    ([tool.faultdeck.redact_patterns]). Prints file:line and the pattern's name, never the
    secret. A folder is searched for *.jsonl files.

    \b
    faultdeck scan cassettes/
    faultdeck scan cassettes/ --format json
    """
    redactor = Redactor(extra_patterns=_config.load_settings().redact_patterns)
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
    if fmt == "json":
        emit_json({"files": len(files), "files_with_findings": holding, "findings": findings})
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
    if findings:
        raise Finding


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


@cli.command(context_settings={"ignore_unknown_options": True})
@click.argument("cassette", type=click.Path(dir_okay=False))
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
@click.option(
    "--entrypoint",
    metavar="MODULE:FUNCTION",
    help="A function (deck, clock) -> outcomes that runs the loop in-process.",
)
@click.option(
    "--faults",
    "faults_",
    default="all",
    show_default=True,
    metavar="all|PLAN",
    help="Every fault at every call position, or a plan file (one cell).",
)
@click.option(
    "--policy",
    "policy_spec",
    metavar="MODULE:NAME",
    help="The Policy to judge by (default: the entrypoint module's POLICY).",
)
@click.option(
    "--jobs",
    type=click.IntRange(1, 256),
    default=1,
    show_default=True,
    help="Run cells on this many local processes.",
)
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text")
def rehearse(
    cassette: str,
    command: tuple[str, ...],
    entrypoint: str | None,
    faults_: str,
    policy_spec: str | None,
    jobs: int,
    fmt: str,
) -> None:
    """Replay CASSETTE under every fault at every call position and judge each run.

    Prints the matrix (faults x positions) of what held and what broke; exit 1 exactly
    when an invariant breaks. Cells: ✓ held, ✗ broke, ~ off the recorded path, ! raised,
    ↻ killed and restarted.

    \b
    faultdeck rehearse golden.jsonl --entrypoint examples.workshop.rehearsal:good
    faultdeck rehearse golden.jsonl --faults plans/quota.toml --jobs 4 -- python agent.py
    """
    from .._rehearse.command import rehearse_command
    from .._rehearse.inprocess import rehearse as run_matrix
    from .._rehearse.render import matrix_json, matrix_summary, matrix_table

    if (entrypoint is None) == (not command):
        raise click.UsageError("give either --entrypoint MODULE:FUNCTION or -- CMD…, not both")
    load(cassette)
    plans = None if faults_ == "all" else {Path(faults_).stem: FaultPlan.load(faults_)}
    # Entrypoints are named relative to where the command runs, as `python -m` would.
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    policy = None
    if policy_spec is not None:
        module, _, name = policy_spec.partition(":")
        try:
            found = getattr(importlib.import_module(module), name, None)
        except ImportError as exc:
            raise click.UsageError(f"cannot import {module!r} ({exc})") from None
        if not isinstance(found, Policy):
            raise click.UsageError(f"{policy_spec} is not a faultdeck Policy")
        policy = found
    out = console()
    with progress_bar(out, enabled=fmt == "text") as update:
        if entrypoint is not None:
            matrix = run_matrix(
                entrypoint, cassette, plans, policy=policy, jobs=jobs, progress=update
            )
        else:
            matrix = rehearse_command(
                command, cassette, plans, policy=policy, jobs=jobs, progress=update
            )
    if fmt == "json":
        emit_json(matrix_json(matrix))
    else:
        out.print(matrix_table(matrix))
        for line in matrix_summary(matrix):
            out.print(line, markup=False)
    if not matrix.ok:
        raise Finding


@cli.command()
def demo() -> None:
    """The walkthrough on the bundled workshop agent (about a second, no network)."""
    from ..demo import main as run_demo

    if run_demo() != 0:
        raise Finding


# -- the entry point -----------------------------------------------------------------------


def fail(message: str, debug: bool) -> int:
    """Print a usage or input error in one line (the traceback too with ``--debug``)."""
    if debug:
        traceback.print_exc()
    click.echo(f"faultdeck: error: {message}", err=True)
    return EXIT_USAGE


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args
    try:
        cli.main(args=args, prog_name="faultdeck", standalone_mode=False)
    except Finding:
        return EXIT_FINDING
    except click.exceptions.Exit as exc:
        return int(exc.exit_code)
    except click.Abort:
        click.echo("faultdeck: aborted", err=True)
        return EXIT_USAGE
    except click.UsageError as exc:
        where = exc.ctx.command_path if exc.ctx is not None else "faultdeck"
        return fail(f"{exc.format_message()} (see {where} --help)", debug)
    except click.ClickException as exc:
        return fail(exc.format_message(), debug)
    except FaultdeckError as exc:
        return fail(str(exc).splitlines()[0], debug)
    except OSError as exc:
        return fail(f"{exc.filename or ''}: {exc.strerror or exc}".lstrip(": "), debug)
    return EXIT_OK


def entry() -> None:
    """The console script."""
    sys.exit(main())
