"""How the commands run programs: a child process under a deck, and what it reports.

``record`` and ``replay`` run the user's program with ``FAULTDECK_*`` set (a Python program
gets its deck from the bootstrap, whatever its code; another is served through a proxy),
read back the JSON report its deck writes when it exits, and print it; ``run_children``
runs many at once (``replay --repeat --jobs``); ``first_difference`` finds where repeated
replays part ways.
"""

from __future__ import annotations

import functools
import os
import shlex
import subprocess
import sys
import tempfile
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
import orjson
from rich.console import Console

from .._base import terms
from .._base.bootstrap import started
from .._base.errors import ConfigError
from .._base.words import plural
from .._rehearse.matrix import Executor

TAIL = 40
"""How many of the program's last stderr lines are kept, to say why it failed."""
SHOWN = 5
"""How many of a failed program's last lines are shown."""

Ran = tuple[int, dict[str, Any] | None, str]
"""A program's run: its exit code, its deck's report (``None`` if it wrote none) and the
last lines of its stderr."""


@dataclass(frozen=True, slots=True)
class Running:
    """How a command runs its programs (``--jobs``, ``--executor``, ``--address``, ``--quiet``).

    Attributes:
        jobs: how many at once.
        executor: ``"local"`` (processes here) or ``"ray"`` (tasks on a Ray cluster).
        address: the Ray cluster to join; ``None`` starts a local Ray for the command.
        quiet: show no progress.
    """

    jobs: int
    executor: Executor
    address: str | None
    quiet: bool


def running_options(jobs_help: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """``--jobs``, ``--executor``, ``--address`` and ``--quiet``, the same on ``rehearse`` and
    ``replay``; the command gets them as one ``running: Running``."""
    options = (
        click.option(
            "--jobs",
            type=click.IntRange(1, 256),
            default=1,
            show_default=True,
            help=jobs_help,
        ),
        click.option(
            "--executor",
            type=click.Choice(["local", "ray"]),
            default="local",
            show_default=True,
            help="Where the runs go: processes here, or tasks on a Ray cluster.",
        ),
        click.option(
            "--address",
            metavar="ADDR",
            help="With --executor ray: join the Ray cluster at ADDR (host:port, as `ray status` "
            "shows it); without it a local Ray is started for the command and stopped after.",
        ),
        click.option(
            "--quiet",
            "-q",
            is_flag=True,
            help="No progress on stderr (a bar on a terminal, a line now and then otherwise).",
        ),
    )

    def decorate(command: Callable[..., None]) -> Callable[..., None]:
        @functools.wraps(command)
        def gathered(
            *args: Any, jobs: int, executor: Executor, address: str | None, quiet: bool, **kw: Any
        ) -> None:
            if address is not None and executor != "ray":
                raise click.UsageError(
                    f"--address {address} joins a Ray cluster: add --executor ray"
                )
            command(*args, running=Running(jobs, executor, address, quiet), **kw)

        with_options: Callable[..., None] = gathered
        for option in reversed(options):
            with_options = option(with_options)
        return with_options

    return decorate


def run_child(
    command: Sequence[str],
    cassette: str,
    mode: str,
    *,
    extra: dict[str, str] | None = None,
    capture: bool = False,
) -> Ran:
    """Run ``command`` with ``FAULTDECK_*`` set; return its exit code, its deck's report
    and the last lines of its stderr. Its stderr reaches the terminal as it comes, unless
    ``capture`` (then its stdout is not shown either)."""
    if not command:
        raise click.UsageError("give the program to run after --, e.g. -- python agent.py")
    with tempfile.TemporaryDirectory(prefix="faultdeck-") as folder:
        report_path = os.path.join(folder, "report.json")
        env = dict(os.environ)
        env.update(
            FAULTDECK_CASSETTE=location(cassette),
            FAULTDECK_MODE=mode,
            FAULTDECK_REPORT=report_path,
            FAULTDECK_TERMS=terms.current().to_env(),
            **(extra or {}),
        )
        # A Python program gets its deck at start-up, whatever its code (docs/attach.md); any
        # other is served its deck through a proxy (docs/cli.md, *Programs that are not Python*).
        argv, env = started(command, env)
        try:
            child = subprocess.Popen(
                argv,
                env=env,
                stdout=subprocess.DEVNULL if capture else None,
                stderr=subprocess.PIPE,
                text=True,
                errors="replace",
            )
        except FileNotFoundError:
            raise click.UsageError(f"no such program: {command[0]}") from None
        except PermissionError:
            raise click.UsageError(f"cannot run {command[0]}: permission denied") from None
        tail: deque[str] = deque(maxlen=TAIL)
        assert child.stderr is not None
        with child:
            for line in child.stderr:  # only stderr is piped: reading it cannot deadlock
                if not capture:
                    sys.stderr.write(line)
                    sys.stderr.flush()
                tail.append(line)
        report = None
        if os.path.exists(report_path):
            report = orjson.loads(Path(report_path).read_bytes())
        if report is not None and report.get("refused"):
            # The program ended on bad input of faultdeck's (a fault its call cannot show).
            raise ConfigError(report["refused"])
        return child.returncode, report, "".join(tail)


def location(cassette: str) -> str:
    """The cassette as a child is given it: a URL (``s3://…``, ``memory://…``) as it is, a
    path made absolute (the child may run elsewhere)."""
    return cassette if "://" in cassette else os.path.abspath(cassette)


def run_children(
    command: Sequence[str],
    cassette: str,
    extras: Sequence[dict[str, str]],
    *,
    jobs: int,
    finished: Callable[[int, Ran], None] | None = None,
) -> list[Ran]:
    """Replay ``cassette`` through ``command`` once per dict of ``extras`` (its own
    ``FAULTDECK_*`` variables), ``jobs`` children at once, their output captured.

    Returns the runs in the order of ``extras``, whatever order they finished in;
    ``finished(index, ran)`` is called here, in the calling thread, as each one ends.
    """
    runs: list[Ran | None] = [None] * len(extras)
    # Threads suffice: each one only waits on its child process and reads its stderr.
    with ThreadPoolExecutor(max_workers=max(1, jobs), thread_name_prefix="faultdeck") as pool:
        futures = {
            pool.submit(run_child, command, cassette, "replay", extra=extra, capture=True): index
            for index, extra in enumerate(extras)
        }
        try:
            for future in as_completed(futures):
                index = futures[future]
                runs[index] = ran = future.result()
                if finished is not None:
                    finished(index, ran)
        except BaseException:
            for future in futures:
                future.cancel()  # the runs not started yet; the running ones end on their own
            raise
    return [ran for ran in runs if ran is not None]


def no_report(command: Sequence[str], code: int, stderr: str) -> str:
    """Why ``command`` ran but its deck wrote no report: its own failure, in its last lines,
    or a Python that ran without faultdeck's bootstrap."""
    program = shlex.join(command)
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    if code != 0 and lines:
        shown = "\n".join(f"  {line}" for line in lines[-SHOWN:])
        return (
            f"{program} failed (exit {code}) before its deck wrote a report; "
            f"its last lines:\n{shown}"
        )
    why = (
        "did its Python run without faultdeck's bootstrap (python -I or -S skip it)? Run "
        "it plainly, or give it a deck itself with fd.Deck.from_env()"
    )
    if code != 0:
        return (
            f"{program} exited with {code} and wrote no faultdeck report, nor anything on "
            f"stderr; {why}"
        )
    return f"{program} exited 0 but wrote no faultdeck report: {why}"


def print_replays(
    out: Console,
    cassette: str,
    command: Sequence[str],
    runs: list[Ran],
    passed: list[bool],
    difference: dict[str, Any] | None,
    *,
    strict: bool = False,
) -> None:
    """Print ``replay``'s text: one run's report, or the pass rate of many and a failure.

    Args:
        out: where to print.
        cassette: the cassette replayed.
        command: the program that ran.
        runs: each run's exit code, report (``None`` if it wrote none) and captured stderr.
        passed: whether each run passed.
        difference: the first call the runs disagree on (``first_difference``), if any.
        strict: recorded calls left unused failed a run.
    """
    if len(runs) == 1:
        code, report, stderr = runs[0]
        if report is None:
            out.print(no_report(command, code, stderr), markup=False)
            return
        out.print(report_text(report))
        if code != 0:
            out.print(f"the program exited with {code}")
        elif strict and report["unused"] and not report["misses"]:
            out.print(unused_text(report), markup=False)
        return
    count = sum(passed)
    out.print(
        f"{count}/{len(runs)} replays of {cassette} passed (pass rate {count / len(runs):.2f})"
    )
    if 0 < count < len(runs):
        out.print("[bold red]flaky[/]: the same cassette gave different runs")
    if difference is not None:
        out.print(f"first call that differed between runs: seq {difference['seq']}")
        for variant in difference["variants"]:
            runs_text = ", ".join(str(r) for r in variant["runs"][:8])
            more = "…" if len(variant["runs"]) > 8 else ""
            out.print(f"  runs {runs_text}{more}: {variant['call']}")
    failing = next((i for i, ok in enumerate(passed) if not ok), None)
    if failing is not None:
        code, report, stderr = runs[failing]
        out.print(f"run {failing} (exit {code}):")
        if report is not None:
            out.print("  " + report_text(report).replace("\n", "\n  "))
            if strict and report["unused"] and code == 0 and not report["misses"]:
                out.print(f"  {unused_text(report)}", markup=False)
        tail = stderr.strip().splitlines()[-SHOWN:]
        for line in tail:
            out.print(f"  {line}", markup=False)


def unused_text(report: dict[str, Any]) -> str:
    """Why a strict replay failed though the program passed."""
    unused = plural(len(report["unused"]), "recorded call")
    return (
        f"--strict: {unused} never asked for; re-record if the program no longer makes "
        f"them ({terms.current().record})"
    )


def report_text(report: dict[str, Any]) -> str:
    """A deck report (as JSON) in a few lines."""
    lines = [
        f"{report['cassette']} ({report['mode']}): {report['entries']} recorded, "
        f"{report['used']} used, {report['live']} live, {len(report['unused'])} unused, "
        f"{len(report['repeats'])} repeated, {len(report['misses'])} missed"
    ]
    for miss in report["misses"]:
        lines.append(f"  miss: seq {miss['seq']} {miss['kind']} {miss['name']} ({miss['key']})")
    for rep in report["repeats"]:
        lines.append(
            f"  repeat: {rep['kind']} {rep['name']} recorded {rep['recorded']}x, "
            f"asked {rep['asked']}x"
        )
    for ref in report["unused"][:10]:
        lines.append(f"  unused: seq {ref['seq']} {ref['kind']} {ref['name']}, line {ref['line']}")
    return "\n".join(lines)


def first_difference(reports: Sequence[dict[str, Any] | None]) -> dict[str, Any] | None:
    """The first call position at which the runs' call paths disagree, with each variant."""
    paths = [
        [
            f"{c['kind']} {c['name']} ({c['key']})"
            for c in sorted(r["calls"], key=lambda c: c["seq"])
        ]
        if r is not None
        else []
        for r in reports
    ]
    if len(paths) < 2:
        return None
    longest = max(len(p) for p in paths)
    for position in range(longest):
        seen: dict[str, list[int]] = {}
        for run, path in enumerate(paths):
            seen.setdefault(path[position] if position < len(path) else "(no call)", []).append(run)
        if len(seen) > 1:
            return {
                "seq": position + 1,
                "variants": [{"call": call, "runs": runs} for call, runs in seen.items()],
            }
    return None
