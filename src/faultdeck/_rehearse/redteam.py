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
``budget`` bounds the plans replayed, the shrinking included.
"""

from __future__ import annotations

import os
import random
import sys
import tempfile
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import orjson

from .._base.errors import ConfigError
from .._deck.report import CallRecord
from .._judge.invariants import Violation
from .._judge.policy import Policy
from ..faults import FaultPlan
from .command import _calls, _run, run_cell
from .inprocess import _clean, _play, _run_cell
from .matrix import Cell, Entrypoint, difference, judging_policy, load_entrypoint
from .redteam_space import Target, plans_of, python_fault, targets_of

if TYPE_CHECKING:
    from types import ModuleType

INSTALL = "redteam needs hypothesis: pip install 'faultdeck[redteam]'"
"""What a missing Hypothesis says: the one line the command line prints."""
LABEL = "redteam"


@dataclass(frozen=True, slots=True)
class Redteam:
    """What a redteam search found.

    Attributes:
        cassette: the cassette replayed.
        entrypoint: the entrypoint as ``module:function``, or the command.
        plan: the minimal plan that breaks an invariant; ``None`` when none was found.
        cell: the run under ``plan``, judged as a matrix cell (``None`` with no plan).
        replays: how many plans were replayed (at most the budget).
        budget: the budget the search had.
        seed: the seed it ran with.
        pytest_snippet: a pytest test pinning the finding (the ``faultdeck`` marker and
            ``assert_invariants``; it fails until the loop is fixed); ``None`` with no plan,
            for a command, or for an entrypoint a test cannot import by name (a lambda).
        policy: which policy judged the runs, and where it came from.
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
) -> Redteam:
    """Search plans of up to ``max_faults`` faults for the smallest that breaks an invariant.

    Args:
        cassette: the golden cassette.
        entrypoint: ``"package.module:function"`` or the function, taking ``(deck, clock)``
            and returning the outcomes; or ``None`` with ``command``.
        command: a program (its deck from the bootstrap, or ``fd.Deck.from_env()``), judged as
            ``rehearse_command`` judges a cell (its outcomes, and so partial work and
            determinism, out of reach).
        budget: the most plans replayed, shrinking included.
        max_faults: the most faults in a plan.
        seed: the search's seed: the same seed, cassette and loop find the same plan.
        policy: the policy to judge by; else the entrypoint module's ``POLICY``, else
            ``Policy()``.
        progress: called as ``progress(replays, budget)`` after each replay.
        ok_exit: with ``command``, the exit codes that mean the program ended well.

    Raises:
        ConfigError: Hypothesis missing, a bad entrypoint, budget or ``max_faults``, both or
            neither of ``entrypoint`` and ``command``, or a cassette the loop does not replay
            cleanly.
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
    path = os.path.abspath(os.fspath(cassette))
    if entrypoint is not None:
        return _in_process(path, entrypoint, budget, max_faults, seed, policy, progress)
    with tempfile.TemporaryDirectory(prefix="faultdeck-redteam-") as folder:
        policy, judged_by = judging_policy(policy)
        judge, calls, spec, remote = _command_judge(list(command), path, folder, policy, ok_exit)
        plan, cell, replays = search(
            targets_of(calls, remote), policy, judge, budget, max_faults, seed, progress
        )
    return Redteam(path, spec, plan, cell, replays, budget, seed, None, judged_by)


def _in_process(
    path: str,
    entrypoint: str | Entrypoint,
    budget: int,
    max_faults: int,
    seed: int,
    policy: Policy | None,
    progress: Callable[[int, int], None] | None,
) -> Redteam:
    if isinstance(entrypoint, str):
        spec, entry = entrypoint, load_entrypoint(entrypoint)
    elif callable(entrypoint):
        entry = entrypoint
        name = getattr(entry, "__qualname__", type(entry).__qualname__)
        spec = f"{getattr(entry, '__module__', '?')}:{name}"
    else:
        raise ConfigError(f"entrypoint must be 'package.module:function', got {entrypoint!r}")
    policy, judged_by = judging_policy(policy, spec)
    first = _clean(entry, path, spec)
    baseline = first.outcomes

    def judge(plan: FaultPlan) -> Cell:
        cell = _run_cell(entry, path, policy, LABEL, None, plan, baseline)
        if cell.status != "held":
            return cell
        # A second replay under the same plan must give the same outcomes, as the matrix's
        # "replay (x2)" row asks of the clean run.
        again = _play(entry, path, plan)
        problem = again.problem()
        differs = None if problem is not None else difference(again.outcomes, cell.outcomes)
        if problem is None and differs is None:
            return cell
        op, observed = (None, f"a second replay raised {problem}") if differs is None else differs
        bound = "replays of one cassette under one plan give the same outcomes"
        found = (Violation("replay_determinism", op, bound, observed),)
        return Cell(LABEL, None, "broke", found, cell.detail, cell.outcomes)

    plan, cell, replays = search(
        targets_of(first.deck.calls, first.deck.remote_tools),
        policy,
        judge,
        budget,
        max_faults,
        seed,
        progress,
    )
    snippet = None
    module, _, function = spec.partition(":")
    # Only a function a test can import by name (not a lambda, a method or a script's own).
    importable = function.isidentifier() and module not in ("?", "__main__")
    if plan is not None and cell is not None and importable:
        snippet = pytest_snippet(path, spec, plan, cell.violations)
    return Redteam(path, spec, plan, cell, replays, budget, seed, snippet, judged_by)


def _command_judge(
    command: list[str], path: str, folder: str, policy: Policy, ok_exit: Collection[int]
) -> tuple[Callable[[FaultPlan], Cell], list[CallRecord], str, list[str]]:
    clean = _run(command, path, None, folder, "clean", ok_exit=ok_exit)
    if clean.report is None or not clean.ok or clean.report["misses"]:
        raise ConfigError(
            f"the clean replay of {path} with {' '.join(command)} does not replay "
            f"({clean.ending()}); re-record the cassette, and check that the program runs "
            "on a Python with faultdeck installed (the bootstrap gives it its deck)"
        )
    calls = _calls(clean.report)
    runs = [0]

    def judge(plan: FaultPlan) -> Cell:
        runs[0] += 1
        task = (LABEL, None, plan)
        return run_cell(command, path, folder, str(runs[0]), task, calls, policy, ok_exit=ok_exit)

    return judge, calls, " ".join(command), clean.report.get("remote_tools", [])


def search(
    targets: Sequence[Target],
    policy: Policy,
    judge: Callable[[FaultPlan], Cell],
    budget: int,
    max_faults: int,
    seed: int,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[FaultPlan | None, Cell | None, int]:
    """Hypothesis's search and shrinking over the plans ``plans_of`` draws: the minimal plan
    that ``judge`` says broke, its cell, and how many plans were replayed."""
    hypothesis = import_hypothesis()
    from hypothesis.configuration import set_hypothesis_home_dir
    from hypothesis.errors import NoSuchExample

    if not targets:
        return None, None, 0
    seen: dict[bytes, Cell] = {}

    def breaks(plan: FaultPlan) -> bool:
        key = orjson.dumps(plan.to_json(), option=orjson.OPT_SORT_KEYS)
        if key not in seen:
            if len(seen) >= budget:
                return False  # spent: only the plans already judged can still win
            seen[key] = judge(plan)
            if progress is not None:
                progress(len(seen), budget)
        return seen[key].status == "broke"

    settings = hypothesis.settings(
        max_examples=budget,
        database=None,
        deadline=None,
        phases=(hypothesis.Phase.generate, hypothesis.Phase.shrink),
        print_blob=False,
    )
    strategy = plans_of(targets, policy, max_faults)
    # Hypothesis caches what it learns in ``.hypothesis`` under the working folder; a search
    # leaves nothing behind, so it keeps that in a folder of its own for the call.
    with tempfile.TemporaryDirectory(prefix="faultdeck-hypothesis-") as home:
        set_hypothesis_home_dir(home)
        try:
            plan = hypothesis.find(strategy, breaks, settings=settings, random=random.Random(seed))
        except NoSuchExample:
            return None, None, len(seen)
        finally:
            set_hypothesis_home_dir(None)
    plan = _earliest(plan, breaks, seen)
    key = orjson.dumps(plan.to_json(), option=orjson.OPT_SORT_KEYS)
    return plan, seen[key], len(seen)


def _earliest(
    plan: FaultPlan, breaks: Callable[[FaultPlan], bool], seen: dict[bytes, Cell]
) -> FaultPlan:
    """``plan`` with each fault moved to the earliest call of its target at which the plan
    still breaks the invariant it broke first: Hypothesis's shrinking can stop at the 4th
    call when the 2nd breaks the same one. Each fault in turn, every earlier call tried."""

    def first_broken(candidate: FaultPlan) -> str | None:
        key = orjson.dumps(candidate.to_json(), option=orjson.OPT_SORT_KEYS)
        found = seen[key].violations if key in seen else ()
        return found[0].invariant if found else None

    wanted = first_broken(plan)
    for index in range(len(plan.faults)):
        data = plan.to_json()
        nth = data["faults"][index].get("on", {}).get("nth")
        if not isinstance(nth, int):
            continue
        for earlier in range(1, nth):
            data["faults"][index]["on"]["nth"] = earlier
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
