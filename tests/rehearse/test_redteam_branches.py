"""Redteam on branches: a plan that leads the loop off the recorded path is recorded live once
from there (``branches="record"``) and judged on what it recorded; the branch of the plan
it reports is kept beside the cassette, and the next search judges that plan on it,
offline."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path
from typing import Any

import pytest

import faultdeck as fd
from faultdeck import faults, rehearse
from faultdeck._cassette.reader import load
from faultdeck._cassette.session import file_sha256
from faultdeck._rehearse.branches import branches_of, of_plan, plan_key
from faultdeck._rehearse.redteam import redteam
from faultdeck._rehearse.redteam_branches import PlanBranches, Runs
from faultdeck._rehearse.redteam_loop import in_process
from faultdeck.workshop import OPS, Workshop
from tests.support import GOLDEN

QUOTA_FIRST = fd.FaultPlan([faults.quota().on(kind="model", name="chat", nth=1)])
"""The first plan the search draws on the workshop's cassette: a quota at its first call."""
TIMEOUT_SECOND = fd.FaultPlan([faults.timeout().on(kind="model", name="chat", nth=2)])


def waits_then_falls_back(
    deck: fd.Deck, clock: fd.VirtualClock, search: Any = lambda: None
) -> list[fd.Outcome]:
    """On any boundary error this loop waits ten minutes, then asks a fallback tool the
    golden run never called (``search`` answers it when it runs live): off the recorded
    path, where it breaks bounded waiting."""
    workshop = Workshop(deck)

    def step(op: str) -> object:
        try:
            return workshop.step(op)
        except fd.BoundaryError:
            clock.sleep(600.0)
            return deck.call("tool", "search_web", {"q": op}, search)

    return fd.run_steps(step, OPS, fd.Policy(), clock=clock, repair=workshop.repair)


def never_live() -> None:
    raise AssertionError("the fallback ran live: the branch was not replayed")


def offline(deck: fd.Deck, clock: fd.VirtualClock) -> list[fd.Outcome]:
    """The same loop, its fallback failing the test if it ever runs live."""
    return waits_then_falls_back(deck, clock, never_live)


def service_down() -> None:
    raise ConnectionRefusedError("the search service is down")


def unreachable(deck: fd.Deck, clock: fd.VirtualClock) -> list[fd.Outcome]:
    """The same loop, its fallback's service down while a branch is recorded."""
    return waits_then_falls_back(deck, clock, service_down)


@pytest.fixture
def golden(tmp_path: Path) -> Path:
    path = tmp_path / "golden.jsonl"
    shutil.copy(GOLDEN, path)
    return path


def kept(golden: Path, plan: fd.FaultPlan) -> Path:
    digest = hashlib.sha256(plan_key(plan)).hexdigest()[:12]
    return golden.parent / "golden.branches" / f"redteam-{digest}.jsonl"


def test_off_the_path_every_plan_is_a_miss_without_branches(golden: Path) -> None:
    result = redteam(golden, waits_then_falls_back, budget=8)
    assert not result.found
    assert result.branch is None
    assert not (golden.parent / "golden.branches").exists()


def test_a_plan_off_the_path_is_recorded_judged_on_its_branch_and_kept(golden: Path) -> None:
    result = redteam(golden, waits_then_falls_back, budget=8, branches="record")
    assert result.plan == QUOTA_FIRST
    assert result.cell is not None
    assert result.cell.status == "broke"
    assert {v.invariant for v in result.violations} == {"bounded_waiting"}
    assert "waited 600s" in str(result.violation)
    assert result.replays >= 2  # the plan's replay and its recording, each one run
    branch = kept(golden, QUOTA_FIRST)
    assert result.branch == str(branch)
    # Only the reported plan's branch is kept, beside the cassette.
    assert list(branch.parent.iterdir()) == [branch]
    parent = load(branch).header.extra["parent"]
    assert parent["at"] == 1
    assert parent["sha256"] == file_sha256(str(golden))
    assert parent["branch"] == {
        "cell": "redteam",
        "seq": None,
        "plan": QUOTA_FIRST.to_json(),
        "left_at": 2,
    }
    assert [e.name for e in load(branch).entries][:2] == ["chat", "search_web"]


def test_the_next_search_judges_the_plan_on_its_branch_offline(golden: Path) -> None:
    recorded = redteam(golden, waits_then_falls_back, budget=8, branches="record")
    branch = Path(str(recorded.branch))
    written = branch.read_bytes()

    again = redteam(golden, offline, budget=8)  # branches replay by default
    assert again.plan == QUOTA_FIRST
    assert again.branch == str(branch)
    assert again.cell == recorded.cell
    assert again.replays == 1  # the plan judged on its branch: nothing recorded
    assert branch.read_bytes() == written
    assert again.pytest_snippet is not None  # the same test: its marker names the plan

    off = redteam(golden, offline, budget=8, branches="off")
    assert not off.found
    assert off.branch is None


def test_a_plan_is_judged_on_a_rehearse_cells_branch_of_the_same_plan(golden: Path) -> None:
    matrix = rehearse(waits_then_falls_back, golden, {"quota": QUOTA_FIRST}, branches="record")
    assert [c.status for c in matrix.cells if c.label == "quota"] == ["broke"]
    result = redteam(golden, offline, budget=8)
    assert result.plan == QUOTA_FIRST
    assert result.branch == str(golden.parent / "golden.branches" / "quota.jsonl")


def test_each_plans_branch_is_found_by_its_plan_beside_a_cells(
    golden: Path, tmp_path: Path
) -> None:
    redteam(golden, waits_then_falls_back, budget=8, branches="record")
    # Another plan's branch, recorded and kept as a search keeps the one it reports.
    other = fd.FaultPlan([faults.timeout().on(kind="model", name="chat", nth=1)])
    loop = in_process(str(golden), waits_then_falls_back, None)
    plans = PlanBranches(str(golden), "record", str(tmp_path / "recorded"))
    assert plans.judge(other, Runs(2), loop.run, loop.record).status == "broke"
    assert plans.keep(other) == str(kept(golden, other))
    # A rehearse cell of the same plan is judged on the search's branch: it records none.
    rehearse(waits_then_falls_back, golden, {"quota": QUOTA_FIRST}, branches="record")
    rehearse(waits_then_falls_back, golden, {"timeout": TIMEOUT_SECOND}, branches="record")

    branched = branches_of(str(golden))
    stems = {kept(golden, plan).stem for plan in (QUOTA_FIRST, other)}
    assert set(branched) == {("timeout", None), *((stem, None) for stem in stems)}
    found = of_plan(branched, other)
    assert found is not None
    assert found.path == str(kept(golden, other))
    # Offline, each cell is judged on its branch: its own, or the one of its plan.
    matrix = rehearse(offline, golden, {"quota": QUOTA_FIRST, "timeout": TIMEOUT_SECOND})
    assert {c.label: c.status for c in matrix.cells if c.label != "replay (x2)"} == {
        "quota": "broke",
        "timeout": "broke",
    }


def test_a_branch_whose_live_calls_go_unanswered_is_not_kept(golden: Path, tmp_path: Path) -> None:
    result = redteam(golden, unreachable, budget=6, branches="record")
    assert not result.found
    assert result.branch is None
    assert result.replays == 6  # three plans, each replayed and recorded
    assert not (golden.parent / "golden.branches").exists()
    # The plan stays a miss, and says why.
    loop = in_process(str(golden), unreachable, None)
    plans = PlanBranches(str(golden), "record", str(tmp_path / "recorded"))
    cell = plans.judge(QUOTA_FIRST, Runs(2), loop.run, loop.record)
    assert cell.status == "miss"
    assert cell.detail.endswith(
        "; its branch was not kept: 1 live call got no answer (ConnectionRefusedError); with "
        "the upstream reachable, redteam again with --branches record"
    )
    assert list((tmp_path / "recorded").iterdir()) == []


def test_a_recording_is_a_run_of_the_budget(golden: Path) -> None:
    # The one run the budget allows replays the first plan: none is left to record it.
    result = redteam(golden, waits_then_falls_back, budget=1, branches="record")
    assert not result.found
    assert result.replays == 1
    assert not (golden.parent / "golden.branches").exists()


def test_bad_branches_say_what() -> None:
    with pytest.raises(fd.ConfigError, match="branches must be 'record', 'replay' or 'off'"):
        redteam(GOLDEN, waits_then_falls_back, branches="sometimes")  # type: ignore[arg-type]
