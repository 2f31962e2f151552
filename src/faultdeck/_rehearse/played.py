"""One run of an entrypoint over a cassette, and one cell of the matrix made of it.

A run is a fresh deck (replay, the cell's plan) on a fresh virtual clock; what the loop
returned, or let out, is judged (``_run_cell``); a crash is judged by a fault-free run after
it (``_restart``). The clean run is a run without a plan that must replay (``_clean``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .._base.clock import VirtualClock
from .._base.errors import CassetteError, ConfigError, ProcessKilled, ReplayMiss
from .._base.loading import first_line
from .._deck.deck import Deck
from .._judge.invariants import Violation, check
from .._judge.policy import Outcome, Policy
from ..faults import FaultPlan
from ..faults._kinds import kills
from .matrix import NOT_FIRED, Cell, Entrypoint, brief, difference, fired, judged, short


@dataclass(slots=True)
class _Played:
    """One replay of the cassette through the entrypoint, and how it ended."""

    deck: Deck
    clock: VirtualClock
    outcomes: tuple[Outcome, ...] = ()
    error: Exception | ReplayMiss | None = None
    killed: bool = False

    def miss(self) -> str | None:
        """The first line of the replay miss, if the run went off the recorded path."""
        if isinstance(self.error, ReplayMiss):
            return first_line(self.error)
        misses = self.deck.report().misses
        if misses:  # the loop caught the ReplayMiss; the deck's log still has it
            call = misses[0]
            return f"replay miss at seq {call.seq}: {call.kind} {call.name} (the loop caught it)"
        return None

    def problem(self) -> str | None:
        """What kept the run from finishing: the miss, the exception or the kill."""
        miss = self.miss()
        if miss is not None:
            return miss
        if self.error is not None:
            return f"{type(self.error).__name__}: {first_line(self.error)}"
        return "ProcessKilled: the run was killed" if self.killed else None


def _play(entry: Entrypoint, cassette: str, plan: FaultPlan | None) -> _Played:
    clock = VirtualClock()
    # Under a fault the loop retries steps, asking calls again that the clean run asked
    # once: they get the same answer again (counted as repeats), not a miss.
    deck = Deck(
        cassette,
        mode="replay",
        faults=plan,
        clock=clock,
        on_harness_change="ignore",
        repeats="last" if plan else "miss",
    )
    played = _Played(deck, clock)
    try:
        with deck:
            result: object = entry(deck, clock)
        if not (
            isinstance(result, Sequence)
            and not isinstance(result, str)
            and all(isinstance(o, Outcome) for o in result)
        ):
            raise ConfigError(
                f"the entrypoint returned {short(result)}; it must return the loop's "
                "outcomes (a list of fd.Outcome)"
            )
        played.outcomes = tuple(result)
    except ProcessKilled:
        played.killed = True
    except (Exception, ReplayMiss) as exc:  # the loop let it out: judged, never propagated
        played.error = exc
    return played


def _clean(entry: Entrypoint, cassette: str, spec: str) -> _Played:
    played = _play(entry, cassette, None)
    if isinstance(played.error, (ConfigError, CassetteError)):
        raise played.error
    problem = played.problem()
    if problem is not None:
        raise ConfigError(
            f"the clean replay of {cassette} with {spec} does not replay: {problem}; "
            "re-record the cassette"
        )
    return played


def _run_cell(
    entry: Entrypoint,
    cassette: str,
    policy: Policy,
    label: str,
    seq: int | None,
    plan: FaultPlan,
    baseline: tuple[Outcome, ...],
) -> Cell:
    played = _play(entry, cassette, plan)
    if isinstance(played.error, ConfigError):  # the plan is bad input (a fault a call cannot
        raise played.error  # show), not the loop's finding
    if played.killed:
        return _restart(entry, cassette, policy, label, seq, played, baseline)
    miss = played.miss()
    if miss is not None:
        return Cell(label, seq, "miss", detail=miss, outcomes=played.outcomes)
    if played.error is not None:
        # No outcomes came back: whatever the loop had finished is lost with the exception.
        found = check([], policy=policy, deck=played.deck, clock=played.clock)
        error = played.problem() or ""
        return Cell(label, seq, "broke" if found else "raised", tuple(found), error)
    found = check(played.outcomes, policy=policy, deck=played.deck, clock=played.clock)
    outcomes = played.outcomes
    if not found and not fired(plan, played.deck.calls):
        return Cell(label, seq, "not fired", (), NOT_FIRED, outcomes)
    return Cell(label, seq, judged(found), tuple(found), brief(outcomes), outcomes)


def _restart(
    entry: Entrypoint,
    cassette: str,
    policy: Policy,
    label: str,
    seq: int | None,
    killed: _Played,
    baseline: tuple[Outcome, ...],
) -> Cell:
    """After a crash, a fresh fault-free run must finish as the clean run did."""
    at = next((c.seq for c in reversed(killed.deck.calls) if kills(c.fault)), seq)
    where = f"killed at seq {at}" if at is not None else "killed"
    again = _play(entry, cassette, None)
    problem = again.problem()
    if problem is not None:
        return Cell(label, seq, "broke", (), f"{where}; a fresh replay then raised {problem}")
    found = check(again.outcomes, policy=policy, deck=again.deck, clock=again.clock)
    differs = difference(again.outcomes, baseline)
    if differs is not None:
        bound = "a fresh run after a crash finishes as the clean run did"
        found.append(Violation("replay_determinism", differs[0], bound, differs[1]))
    if found:
        detail = f"{where}; a fresh replay then broke {', '.join(v.invariant for v in found)}"
        return Cell(label, seq, "broke", tuple(found), detail, again.outcomes)
    detail = f"{where}; a fresh replay then finished as the clean run did"
    return Cell(label, seq, "killed", (), detail, again.outcomes)
