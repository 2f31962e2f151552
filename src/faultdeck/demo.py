"""``faultdeck demo``: the walkthrough on the bundled workshop agent.

In a temporary folder: record the golden run, replay it 20 times offline, show the miss a
changed prompt meets on replay, rehearse each row
of the degradation policy on top of the recording and judge it by the invariants, catch a
naive loop breaking them, kill a run and resume it, change the prompt and show the
call-path diff, then let a redteam search find the smallest plan that breaks the naive
loop. Nothing to start, no network, nothing left behind. ``command`` is the ``faultdeck demo``
command (the command line registers it); ``python -m faultdeck.demo`` runs the same.
"""

from __future__ import annotations

import tempfile
import textwrap
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from . import faults
from ._base.clock import VirtualClock
from ._base.errors import BadToolCall, BoundaryError, ProcessKilled, ReplayMiss
from ._cassette.reader import load
from ._deck.deck import Deck
from ._diff.align import diff_recordings
from ._diff.render import diff_text
from ._judge.invariants import INVARIANTS, Violation, check
from ._judge.policy import Outcome, Policy
from .faults import Fault
from .workshop import OPS, POLICY, Workshop, record_golden

READ = {"kind": "tool", "name": "read_file"}
ROWS: list[tuple[str, list[Fault]]] = [
    ("quota, retry 2 s", [faults.quota(retry_after=2).on(**READ, nth=1)]),
    ("quota, no header", [faults.quota().on(**READ, nth=1)]),
    ("timeout", [faults.timeout().on(**READ, nth=1)]),
    ("bad tool call", [faults.bad_tool_call().on(kind="model", name="chat", nth=2)]),
    ("slow first token", [faults.slow_first_token(2500).on(kind="model", name="chat", nth=1)]),
]
CHANGED = "Make the agent loop respect the retry budget and quota."
"""The question of the run with a changed prompt (steps 6 and 7)."""


def rehearse(
    cassette: Path, plan: list[Fault], runner: Callable[..., list[Outcome]] | None = None
) -> tuple[list[Outcome], list[Violation], VirtualClock]:
    """Replay the golden cassette under ``plan``; return outcomes, violations and the clock."""
    clock = VirtualClock()
    deck = Deck(cassette, mode="replay", faults=plan, clock=clock, on_harness_change="ignore")
    with deck:
        workshop = Workshop(deck)
        outcomes = workshop.run(POLICY, clock=clock, **({"runner": runner} if runner else {}))
    return outcomes, check(outcomes, policy=POLICY, deck=deck, clock=clock), clock


def naive_loop(
    step: Callable[[Any], Any],
    ops: Iterable[Any],
    policy: Policy,
    *,
    clock: Any,
    repair: Callable[[Any, BadToolCall], Any] | None = None,
) -> list[Outcome]:
    """What many agents ship: retry any error three times, at once."""
    from ._base.context import step as step_context

    outcomes = []
    for op in ops:
        with step_context(op):
            for attempt in range(1, 4):
                try:
                    outcomes.append(Outcome(op, "ok", step(op), attempts=attempt))
                    break
                except BoundaryError:
                    if attempt == 3:
                        outcomes.append(Outcome(op, "degraded", None, "error", attempt))
    return outcomes


def cell(outcome: Outcome | None) -> str:
    """One op's result as a table cell."""
    if outcome is None:
        return "[dim]not run[/]"
    color = {"ok": "green", "degraded": "yellow", "stopped": "red"}[outcome.status]
    detail = [f"x{outcome.attempts}"] if outcome.attempts > 1 else []
    if outcome.reason:
        detail.append(_SHORT.get(outcome.reason, outcome.reason.replace("_", " ")))
    suffix = f" ({', '.join(detail)})" if detail else ""
    return f"[{color}]{outcome.status}[/]{suffix}"


_SHORT = {"slow_first_token": "slow start"}
"""A reason as a cell of the table says it, where its name is long."""


def verdict(violations: list[Violation]) -> str:
    """The invariants' verdict as a table cell."""
    if not violations:
        return f"[green]{len(INVARIANTS)}/{len(INVARIANTS)} hold[/]"
    broken = sorted({v.invariant for v in violations})
    return f"[red]broken: {', '.join(broken)}[/]"


def main(console: Console | None = None) -> int:
    """Run the walkthrough; return the exit code (0 when every step showed what it should)."""
    out = console or Console(highlight=False)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="faultdeck-demo-") as folder:
        golden = Path(folder) / "golden.jsonl"
        out.rule("[bold]faultdeck demo[/]: the workshop agent (plan → read → patch)")

        out.print("\n[bold]1. Record[/] the golden run (and the repair and no-notes paths)")
        record_golden(golden)
        recording = load(golden)
        kinds = sorted({f"{e.kind} {e.name}" for e in recording.entries})
        out.print(f"   {len(recording.entries)} calls in {golden.name}: {', '.join(kinds)}")

        out.print("\n[bold]2. Replay[/] it 20 times, offline")
        results = [rehearse(golden, []) for _ in range(20)]
        first = results[0][0]
        same = sum(1 for outcomes, violations, _ in results if outcomes == first and not violations)
        rate = same / len(results)
        out.print(f"   {same}/20 replays gave the same outcomes, every invariant holding")
        out.print(f"   pass rate {rate:.2f} (strictly between 0 and 1 would be flakiness)")

        out.print("\n[bold]3. Miss[/]: replay it with a changed prompt")
        missed = replay_changed(golden)
        for line in missed:
            said(out, line)

        out.print("\n[bold]4. Rehearse[/] each row of the degradation policy on the recording")
        table = Table(header_style="bold underline", box=None, padding=(0, 1, 0, 0))
        table.add_column("fault", no_wrap=True)
        for op in OPS:
            table.add_column(op, no_wrap=True)
        table.add_column("waited", justify="right", no_wrap=True)
        table.add_column("verdict", no_wrap=True)
        healthy = True
        for label, plan in ROWS:
            outcomes, violations, clock = rehearse(golden, plan)
            by_op = {o.op: o for o in outcomes}
            table.add_row(
                label,
                *(cell(by_op.get(op)) for op in OPS),
                f"{clock.waited:.2f} s",
                verdict(violations),
            )
            healthy = healthy and not violations
        out.print(table)

        out.print("\n[bold]5. Judge[/] a naive loop (any error retried 3 times, at once)")
        _, violations, _ = rehearse(golden, ROWS[0][1], runner=naive_loop)
        for violation in violations:
            said(out, str(violation), "✗")
        caught = any(v.invariant == "no_early_retry" for v in violations)

        out.print("\n[bold]6. Kill[/] a run at its patch request, then resume it")
        killed = Path(folder) / "killed.jsonl"
        clock = VirtualClock()
        crash = [faults.crash().on(kind="model", name="chat", nth=2)]
        deck = Deck(killed, mode="record", allow_side_effects=True, clock=clock, faults=crash)
        try:
            with deck:
                Workshop(deck).run(POLICY, clock=clock)
        except ProcessKilled:
            pass
        before = load(killed)
        resumed = Deck(killed, mode="resume", allow_side_effects=True, clock=clock)
        with resumed:
            workshop = Workshop(resumed)
            outcomes = workshop.run(POLICY, clock=clock)
        report = resumed.report()
        out.print(f"   killed with {len(before.entries)} calls on disk and no end line")
        out.print(
            f"   resume replayed {report.used}, ran {report.live} live: "
            + ", ".join(f"{o.op} {o.status}" for o in outcomes)
        )
        resumed_ok = before.interrupted and all(o.status == "ok" for o in outcomes)

        out.print("\n[bold]7. Diff[/] against a run recorded with the changed prompt")
        changed = Path(folder) / "changed.jsonl"
        record_golden(changed, question=CHANGED)
        diff = diff_recordings(load(golden), load(changed))
        for line in diff_text(diff, width=min(out.width, 120) - 4, context=1).splitlines():
            out.print(f"   {line}", markup=False)

        redteamed = redteam_step(out, golden)

    seconds = time.perf_counter() - started
    ok = rate == 1.0 and bool(missed) and healthy and caught and resumed_ok
    ok = ok and not diff.identical and redteamed
    out.print(f"\n[bold]{'done' if ok else 'something is off'}[/] in {seconds:.2f} s")
    return 0 if ok else 1


def replay_changed(golden: Path) -> list[str]:
    """The replay miss of the loop asked the changed question, in brief: the call that
    diverged, after how many agreeing calls, and the argument that changed (``[]`` if
    nothing missed)."""
    clock = VirtualClock()
    deck = Deck(golden, mode="replay", clock=clock, on_harness_change="ignore")
    try:
        with deck:
            Workshop(deck, question=CHANGED).run(POLICY, clock=clock)
    except ReplayMiss as miss:
        lines = [line.strip() for line in str(miss).splitlines()]
        kept = [lines[0].partition(" (key ")[0]]
        return kept + [line for line in lines[1:] if "agreed" in line or line.startswith("args.")]
    return []


def said(out: Console, text: str, mark: str = "") -> None:
    """``text`` at a step's indent, wrapped to the terminal, its later lines under its
    first; ``mark`` (``✗``) in red before it."""
    head = f"{mark} " if mark else ""
    width = max(out.width - 3 - len(head), 30)
    for i, line in enumerate(textwrap.wrap(text, width, subsequent_indent="  ")):
        lead = f"[red]{head}[/]" if i == 0 else " " * len(head)
        out.print(f"   {lead}{escape(line)}")


def naive_entry(deck: Deck, clock: VirtualClock) -> list[Outcome]:
    """The workshop loop under ``naive_loop``, as a redteam entrypoint."""
    return Workshop(deck).run(POLICY, clock=clock, runner=naive_loop)


def redteam_step(out: Console, golden: Path) -> bool:
    """Step 7: Hypothesis searches plans of up to three faults for the smallest that breaks
    the naive loop; skipped (and passed) without the ``redteam`` extra."""
    from ._base.errors import ConfigError
    from ._rehearse.redteam import import_hypothesis, redteam

    out.print("\n[bold]8. Redteam[/] the naive loop: the smallest plan that breaks it")
    try:
        import_hypothesis()
    except ConfigError as exc:
        out.print(f"   [dim]skipped: {exc}[/]")
        return True
    result = redteam(golden, naive_entry, budget=200, max_faults=3, seed=0)
    if result.plan is None:
        out.print("   [red]no plan found[/]")
        return False
    for fault in result.plan.faults:
        sel = fault.selector
        out.print(f"   {fault.describe()} at {sel.kind} {sel.name} ({sel.landing()})", markup=False)
    for violation in result.violations:
        said(out, str(violation), "✗")
    from ._base.words import plural

    tried = plural(result.replays, "replay")
    out.print(f"   found and shrunk in {tried} (faultdeck redteam writes it as a plan file)")
    return True


@click.command("demo")
def command() -> None:
    """The walkthrough on the bundled workshop agent (about a second, no network)."""
    from .cli._common import Finding

    if main() != 0:
        raise Finding


if __name__ == "__main__":
    raise SystemExit(main())
