"""Goals, the tables that show them, and the results file with the machine it ran on."""

from __future__ import annotations

import datetime
import os
import platform
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

PACKAGES = ("faultdeck", "httpx", "orjson", "vcrpy", "agenttape", "agentcassette", "cassette-fn")


@dataclass(frozen=True, slots=True)
class Goal:
    """One row of the results: a measured figure beside the goal it is held to.

    Attributes:
        row: the row's number, such as ``1.4``; stable across sizes.
        what: what is compared.
        measured: the figures behind the value, in words (``faultdeck 41.0 µs/call …``).
        value: the ratio or rate the goal judges.
        goal: the goal, in words (``≤ 1.5×``).
        passed: whether the value meets the goal.
        runs: how many timed runs each side had.
    """

    row: str
    what: str
    measured: str
    value: str
    goal: str
    passed: bool
    runs: str

    @property
    def verdict(self) -> str:
        """``PASS`` or ``MISS``."""
        return "PASS" if self.passed else "MISS"


def at_most(row: str, what: str, measured: str, ratio: float, limit: float, runs: str) -> Goal:
    """A ratio that must not exceed ``limit`` (faultdeck's cost over a floor's)."""
    value = _shown(ratio, limit, 2) + "×"
    return Goal(row, what, measured, value, f"≤ {limit:g}×", ratio <= limit, runs)


def at_least(row: str, what: str, measured: str, ratio: float, limit: float, runs: str) -> Goal:
    """A ratio that must reach ``limit`` (how many times faster than a peer)."""
    value = _shown(ratio, limit, 1) + "×"
    return Goal(row, what, measured, value, f"≥ {limit:g}×", ratio >= limit, runs)


def rate_at_least(row: str, what: str, measured: str, rate: float, limit: float, runs: str) -> Goal:
    """A rate per second that must reach ``limit``."""
    value = _shown(rate, limit, 0) + "/s"
    return Goal(row, what, measured, value, f"≥ {limit:,.0f}/s", rate >= limit, runs)


def _shown(value: float, limit: float, digits: int) -> str:
    """``value`` with ``digits`` decimals, or more when rounding would make a miss look like
    the limit itself (1.504 is not shown as 1.50 beside a goal of 1.5)."""
    while digits < 6 and value != limit and round(value, digits) == round(limit, digits):
        digits += 1
    return f"{value:,.{digits}f}"


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A Markdown table, padded so that it also reads as plain text."""
    widths = [max(len(cell) for cell in column) for column in zip(header, *rows, strict=True)]

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"

    rule = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([line(header), rule, *(line(r) for r in rows)])


def goals_table(goals: Sequence[Goal]) -> str:
    """The goals, one row each, with PASS or MISS."""
    header = ("#", "benchmark", "measured (medians)", "value", "goal", "result", "runs")
    rows = [(g.row, g.what, g.measured, g.value, g.goal, g.verdict, g.runs) for g in goals]
    return table(header, rows)


def machine() -> list[tuple[str, str]]:
    """The machine and software the figures come from, as (what, value) pairs."""
    cores = str(os.cpu_count() or "?")
    if hasattr(os, "sched_getaffinity"):
        cores += f" ({len(os.sched_getaffinity(0))} usable by this process)"
    found = [
        ("date", datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")),
        ("python", f"{platform.python_implementation()} {platform.python_version()}"),
        ("platform", platform.platform()),
        ("cpu", _cpu_model()),
        ("cores", cores),
    ]
    for name in PACKAGES:
        try:
            version = metadata.version(name)
        except metadata.PackageNotFoundError:
            version = "not installed"
        found.append((name, version))
    found.append(("faultdeck commit", _commit()))
    return found


def _commit() -> str:
    """The checkout's commit, and whether the measured code (src/) differs from it."""
    root = Path(__file__).resolve().parents[1]
    try:
        sha = _git(root, "rev-parse", "--short=12", "HEAD")
        dirty = _git(root, "status", "--porcelain", "--", "src")
    except (OSError, subprocess.SubprocessError):
        return "not a git checkout"
    return f"{sha} (src/ has uncommitted changes)" if dirty else f"{sha} (src/ clean)"


def _git(root: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=root, capture_output=True, text=True, timeout=10, check=True
    )
    return done.stdout.strip()


def _cpu_model() -> str:
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return platform.processor() or "unknown"
    for raw in text.splitlines():
        name, _, value = raw.partition(":")
        if name.strip() in ("model name", "Model", "Hardware", "cpu model"):
            return value.strip()
    return platform.processor() or "unknown"


def render(
    *,
    goals: Sequence[Goal],
    details: Sequence[tuple[str, str]],
    notes: Sequence[str],
    found_on: Sequence[tuple[str, str]],
    quick: bool,
    seconds: float,
) -> str:
    """The results file: the goals, the detailed figures, the method and the machine
    (``found_on``, from ``machine()`` as the run started)."""
    passed = sum(g.passed for g in goals)
    parts = [
        "# faultdeck benchmarks",
        "",
        "Written by `python -m benchmarks`"
        + (" --quick (tiny sizes: checks that the code runs, not how fast)" if quick else "")
        + f"; {passed} of {len(goals)} goals met; the whole run took {seconds:.0f} s.",
        "",
        "## Goals",
        "",
        goals_table(goals),
    ]
    for title, text in details:
        parts += ["", f"## {title}", "", text]
    parts += ["", "## Method", ""]
    parts += [f"- {note}" for note in notes]
    parts += ["", "## Machine", "", table(("", ""), found_on), ""]
    return "\n".join(parts)
