"""Redteam: search combined fault plans for the smallest one that breaks an invariant.

The matrix tries one fault at a time; real outages combine (a timeout, then a quota with
Retry-After while the retry is pending, then a bad tool call in the repair). ``redteam``
lets Hypothesis draw plans of up to ``max_faults`` faults, each aimed at a call of the
clean run (``.on(kind=, name=, nth=)``) with a kind that applies there and its parameters,
replays the cassette under each plan and judges it as a matrix cell is judged. Hypothesis
then shrinks the first plan that breaks an invariant: fewest faults, earliest calls,
smallest parameters.

    clean replay (twice) ─► the calls faults can aim at ─► Hypothesis draws a plan
        ─► replay under it (in-process: twice, the second judging determinism) ─► broke?
        ─► shrink ─► Redteam(plan, violations, replays, pytest_snippet)

Deterministic for a seed: the search is derandomized from it and each plan's verdict is
kept, so a plan is replayed at most once and judged the same each time Hypothesis asks.
``budget`` bounds the plans replayed, the shrinking included, and the branches recorded.
A plan that leads the loop off the recorded path is judged on its branch where there is
one, and with ``branches="record"`` recorded live from there (``redteam_branches.py``).
"""

from __future__ import annotations

import contextlib
import os
import random
import sys
import tempfile
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .._base.errors import ConfigError
from .._judge.invariants import Violation
from .._judge.policy import Policy
from ..faults import FaultPlan
from .branches import REDTEAM, Branching, check_branching, plan_key
from .matrix import Cell, Entrypoint
from .redteam_branches import PlanBranches, Runs
from .redteam_loop import in_process, of_program
from .redteam_space import STRATEGIES, Target, plans_of, python_fault

if TYPE_CHECKING:
    from types import ModuleType

SEARCHES: tuple[tuple[str, ...], ...] = (("once",), STRATEGIES)
"""The searches a redteam makes in turn, each while none before it found a plan: faults
that land once, then every strategy (a burst, every call from an onset) too; the budget is
shared."""
INSTALL = "redteam needs hypothesis: pip install 'faultdeck[redteam]'"
"""What a missing Hypothesis says: the one line the command line prints."""
LABEL = REDTEAM


@dataclass(frozen=True, slots=True)
class Redteam:
    """What a redteam search found.

    Attributes:
        cassette: the cassette replayed.
        entrypoint: the entrypoint as ``module:function``, or the command.
        plan: the minimal plan that breaks an invariant; ``None`` when none was found.
        cell: the run under ``plan``, judged as a matrix cell (``None`` with no plan).
        replays: how many plans were replayed and branches recorded (at most the budget).
        budget: the budget the search had.
        seed: the seed it ran with.
        pytest_snippet: a pytest test pinning the finding (the ``faultdeck`` marker and
            ``assert_invariants``; it fails until the loop is fixed); ``None`` with no plan,
            for a command, or for an entrypoint a test cannot import by name (a lambda).
        policy: which policy judged the runs, and where it came from.
        branch: the branch cassette ``plan`` was judged on (found beside the cassette, or
            recorded by this search and kept there); ``None`` when it was judged on the
            cassette itself.
    """

    cassette: str
    entrypoint: str
    plan: FaultPlan | None
    cell: Cell | None
    replays: int
    budget: int
    seed: int
    pytest_snippet: str | None = None
    policy: str = "the policy given"
    branch: str | None = None

    @property
    def found(self) -> bool:
        """Whether a breaking plan was found."""
        return self.plan is not None

    @property
    def violations(self) -> tuple[Violation, ...]:
        """Every invariant the minimal plan breaks."""
        return self.cell.violations if self.cell is not None else ()

    @property
    def violation(self) -> Violation | None:
        """The first invariant the minimal plan breaks, or ``None``."""
        return self.violations[0] if self.violations else None


def import_hypothesis() -> ModuleType:
    """The ``hypothesis`` module.

    Raises:
        ConfigError: Hypothesis is not installed; the line says how to install it.
    """
    try:
        import hypothesis
    except ImportError:
        raise ConfigError(INSTALL) from None
    return hypothesis


def redteam(  # noqa: PLR0913 - the public call: options by keyword
    cassette: str | os.PathLike[str],
    entrypoint: str | Entrypoint | None = None,
    *,
    command: Sequence[str] = (),
    budget: int = 500,
    max_faults: int = 3,
    seed: int = 0,
    policy: Policy | None = None,
    progress: Callable[[int, int], None] | None = None,
    ok_exit: Collection[int] = (0,),
    branches: Branching = "replay",
) -> Redteam:
    """Search plans of up to ``max_faults`` faults for the smallest that breaks an invariant.

    Args:
        cassette: the golden cassette.
        entrypoint: ``"package.module:function"`` or the function, taking ``(deck, clock)``
            and returning the outcomes; or ``None`` with ``command``.
        command: a program (its deck from the bootstrap, or ``fd.Deck.from_env()``), judged as
            ``rehearse_command`` judges a cell (its outcomes, and so partial work and
            determinism, out of reach).
        budget: the most runs: plans replayed (shrinking included) and branches recorded.
        max_faults: the most faults in a plan.
        seed: the search's seed: the same seed, cassette and loop find the same plan.
        policy: the policy to judge by; else the entrypoint module's ``POLICY``, else
            ``Policy()``.
        progress: called as ``progress(runs, budget)`` after each replay.
        ok_exit: with ``command``, the exit codes that mean the program ended well.
        branches: ``replay`` (default): a plan with a branch of the cassette recorded under
            the same plan is judged on it, offline; ``record``: a plan that leaves the
            recorded path goes on live from there, the upstream reachable, and is judged on
            what it recorded, the reported plan's branch kept beside the cassette
            (``redteam_branches.py``); ``off``: none are used.

    Raises:
        ConfigError: Hypothesis missing, a bad entrypoint, budget, ``max_faults`` or
            ``branches``, both or neither of ``entrypoint`` and ``command``, a cassette the
            loop does not replay cleanly, or a stray file in its branch folder.
        CassetteError: the cassette is missing or unreadable.
    """
    import_hypothesis()
    for name, value in (("budget", budget), ("max_faults", max_faults)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigError(f"{name} must be an integer >= 1, got {value!r}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ConfigError(f"seed must be an integer, got {seed!r}")
    if (entrypoint is None) == (not command):
        raise ConfigError("give either an entrypoint or a command, not both")
    branches = check_branching(branches)
    path = os.path.abspath(os.fspath(cassette))
    with tempfile.TemporaryDirectory(prefix="faultdeck-redteam-") as folder:
        if entrypoint is not None:
            loop = in_process(path, entrypoint, policy)
        else:
            loop = of_program(list(command), path, folder, policy, ok_exit)
        plans = PlanBranches(path, branches, os.path.join(folder, "branches"))
        runs = Runs(budget)
        plan, cell, replays = search(
            loop.targets,
            loop.policy,
            lambda plan: plans.judge(plan, runs, loop.run, loop.record),
            runs,
            max_faults,
            seed,
            progress,
        )
        branch = plans.keep(plan)
    snippet = None
    module, _, function = loop.spec.partition(":")
    # Only a function a test can import by name (not a lambda, a method or a script's own).
    importable = function.isidentifier() and module not in ("?", "__main__")
    if entrypoint is not None and plan is not None and cell is not None and importable:
        snippet = pytest_snippet(path, loop.spec, plan, cell.violations)
    return Redteam(
        path, loop.spec, plan, cell, replays, budget, seed, snippet, loop.judged_by, branch
    )


def search(
    targets: Sequence[Target],
    policy: Policy,
    judge: Callable[[FaultPlan], Cell],
    runs: Runs,
    max_faults: int,
    seed: int,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[FaultPlan | None, Cell | None, int]:
    """Hypothesis's search and shrinking over the plans ``plans_of`` draws: the minimal plan
    that ``judge`` says broke, its cell, and how many runs of the budget were made (each
    plan judged is one; ``judge`` counts the branches it records in ``runs`` too)."""
    hypothesis = import_hypothesis()
    from hypothesis.configuration import set_hypothesis_home_dir
    from hypothesis.errors import NoSuchExample

    if not targets:
        return None, None, 0
    seen: dict[bytes, Cell] = {}

    def breaks(plan: FaultPlan) -> bool:
        key = plan_key(plan)
        if key not in seen:
            if not runs.left:
                return False  # spent: only the plans already judged can still win
            runs.made += 1
            seen[key] = judge(plan)
            if progress is not None:
                progress(runs.made, runs.budget)
        return seen[key].status == "broke"

    settings = hypothesis.settings(
        max_examples=runs.budget,
        database=None,
        deadline=None,
        phases=(hypothesis.Phase.generate, hypothesis.Phase.shrink),
        print_blob=False,
    )
    plan = None
    # Hypothesis caches what it learns in ``.hypothesis`` under the working folder; a search
    # leaves nothing behind, so it keeps that in a folder of its own for the call.
    with tempfile.TemporaryDirectory(prefix="faultdeck-hypothesis-") as home:
        set_hypothesis_home_dir(home)
        try:
            # Faults that land once first, then bursts and onsets (``SEARCHES``): shrinking
            # cannot turn a burst into the two single faults at other calls that also break.
            for strategies in SEARCHES:
                strategy = plans_of(targets, policy, max_faults, strategies)
                with contextlib.suppress(NoSuchExample):
                    rng = random.Random(seed)
                    plan = hypothesis.find(strategy, breaks, settings=settings, random=rng)
                    break
        finally:
            set_hypothesis_home_dir(None)
    if plan is None:
        return None, None, runs.made
    plan = _earliest(plan, breaks, seen)
    return plan, seen[plan_key(plan)], runs.made


def _earliest(
    plan: FaultPlan, breaks: Callable[[FaultPlan], bool], seen: dict[bytes, Cell]
) -> FaultPlan:
    """``plan`` with each fault moved to the earliest call of its target at which the plan
    still breaks the invariant it broke first (a burst or an onset starting earlier):
    Hypothesis's shrinking can stop at the 4th call when the 2nd breaks the same one. Each
    fault in turn, every earlier call tried."""

    def first_broken(candidate: FaultPlan) -> str | None:
        key = plan_key(candidate)
        found = seen[key].violations if key in seen else ()
        return found[0].invariant if found else None

    wanted = first_broken(plan)
    for index in range(len(plan.faults)):
        data = plan.to_json()
        on = data["faults"][index].get("on", {})
        # Where it starts: its nth call, or (a burst, or always) the call after its onset.
        field = "nth" if isinstance(on.get("nth"), int) else "after"
        if not isinstance(on.get(field), int):
            continue
        lowest = 1 if field == "nth" else 0
        for earlier in range(lowest, on[field]):
            on[field] = earlier
            candidate = FaultPlan.from_dict(data)
            if breaks(candidate) and first_broken(candidate) == wanted:
                plan = candidate
                break
    return plan


def pytest_snippet(
    cassette: str,
    entrypoint: str,
    plan: FaultPlan,
    violations: Sequence[Violation],
    *,
    policy_spec: str | None = None,
) -> str:
    """A pytest test that pins the finding: the ``faultdeck`` marker replays the cassette
    under the plan, ``assert_invariants`` fails while the loop breaks it, judged by the
    policy that judged the search (``policy_spec``, ``MODULE:NAME``; else the entrypoint
    module's ``POLICY``; else the default). ``cassette`` is written as given: relative to
    the test's folder, for a marker reads it from there."""
    module, _, function = entrypoint.partition(":")
    loaded = sys.modules.get(module)
    has_policy = isinstance(getattr(loaded, "POLICY", None), Policy)
    policy = f"from {module} import POLICY" if has_policy else "POLICY = fd.Policy()"
    if policy_spec is not None:
        source, _, name = policy_spec.partition(":")
        policy = f"from {source} import {name}" + ("" if name == "POLICY" else " as POLICY")
    broken = sorted({v.invariant for v in violations}) or ["an invariant"]
    items = ",\n".join(f"        {python_fault(f)}" for f in plan.faults)
    return "\n".join(
        [
            "import pytest",
            "",
            "import faultdeck as fd",
            "from faultdeck import faults",
            "from faultdeck.testing import assert_invariants",
            f"from {module} import {function} as entrypoint",
            policy,
            "",
            "",
            "@pytest.mark.faultdeck(",
            f"    cassette={cassette!r},",
            f"    faults=[\n{items},\n    ],",
            ")",
            f"def test_{function}_survives_the_redteam_plan(deck, virtual_clock):",
            f"    # found by faultdeck redteam: breaks {', '.join(broken)}",
            "    outcomes = entrypoint(deck, virtual_clock)",
            "    assert_invariants(outcomes, policy=POLICY, deck=deck, clock=virtual_clock)",
            "",
        ]
    )
