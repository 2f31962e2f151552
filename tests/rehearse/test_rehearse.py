"""The fault matrix on the workshop's golden cassette: the good loop holds, broken ones break."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from collections.abc import Iterator

import pytest
from rich.console import Console

import faultdeck as fd
from faultdeck import Matrix, faults, rehearse
from faultdeck._base.loading import load_attr
from faultdeck._rehearse.render import LEGEND, NOT_APPLICABLE, SYMBOLS, not_applicable
from faultdeck.render import matrix_json, matrix_summary, matrix_table
from faultdeck.types import FAULT_MENU, REPLAY_ROW, Cell
from faultdeck.workshop import OPS, POLICY, Workshop
from tests.support import GOLDEN, ROOT

ENTRY = "examples.workshop.rehearsal"
CLEAN_CALLS = (
    (1, "model chat"),
    (2, "tool read_file"),
    (3, "tool read_file"),
    (4, "model chat"),
    (5, "tool write_patch"),
)
PATCH_ASK = 4
"""The model call that asks for the patch: where the matrix lands a service's faults after
the plan and the reads finished (``read_file`` is local: it gets tool faults only)."""


@pytest.fixture(scope="module")
def examples_importable() -> Iterator[None]:
    """The entrypoints live in ``examples/``, a package at the repository root."""
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(ROOT))
        yield


pytestmark = pytest.mark.usefixtures("examples_importable")


@pytest.fixture(scope="module")
def good() -> Matrix:
    return rehearse(f"{ENTRY}:good", GOLDEN)


@pytest.fixture(scope="module")
def retrying() -> Matrix:
    return rehearse(f"{ENTRY}:retry_on_quota", GOLDEN)


def cell(matrix: Matrix, label: str, seq: int | None) -> Cell:
    [found] = [c for c in matrix.cells if (c.label, c.seq) == (label, seq)]
    return found


def invariants(found: Cell) -> set[str]:
    return {v.invariant for v in found.violations}


# -- the full matrix ----------------------------------------------------------------------


NETWORK = {"quota", "timeout", "transient", "reset", "disconnect"}
"""The faults a service sends: never at the workshop's tool, ``read_file``, which is local."""


def applicable(policy: fd.Policy = POLICY) -> list[tuple[str, int]]:
    """Each menu row at each clean call its kind applies to (nothing in it streams, and the
    one tool reaches no service)."""
    return [
        (label, seq)
        for label, make in FAULT_MENU.items()
        for seq, call in CLEAN_CALLS
        if call.split()[0] in make(policy).spec.applies_to
        and not make(policy).spec.needs_stream
        and not (call.startswith("tool ") and make(policy).kind in NETWORK)
    ]


def test_the_good_loop_holds_everything_that_applies(good: Matrix) -> None:
    assert good.positions == CLEAN_CALLS
    assert good.rows == (REPLAY_ROW, *FAULT_MENU)
    assert [(c.label, c.seq) for c in good.cells[1:]] == applicable()
    assert {c.status for c in good.cells} == {"held", "killed"}
    assert good.findings == ()
    assert good.ok
    assert [(o.op, o.status) for o in good.baseline] == [(op, "ok") for op in OPS]
    replay = good.cells[0]
    assert (replay.label, replay.seq, replay.status) == (REPLAY_ROW, None, "held")
    assert replay.outcomes == good.baseline


def test_quota_without_header_at_the_patch_stops_and_keeps_the_plan_and_notes(
    good: Matrix,
) -> None:
    found = cell(good, "quota no header", PATCH_ASK)
    assert found.status == "held"
    assert [(o.op, o.status, o.reason) for o in found.outcomes] == [
        ("plan", "ok", None),
        ("read", "ok", None),
        ("patch", "stopped", "quota"),
    ]
    assert found.detail == "plan ok, read ok, patch stopped(quota)"


def test_a_local_tool_gets_tool_faults_and_no_fault_of_a_service(good: Matrix) -> None:
    at_reads = {c.label for c in good.cells if c.seq in (2, 3)}
    assert at_reads == {"latency", "crash", "tool error", "malformed result", "injection"}
    at_models = {c.label for c in good.cells if c.seq in (1, PATCH_ASK)}
    assert {"quota no header", "timeout", "transient 503", "reset"} <= at_models


def test_a_tool_that_says_it_reaches_a_service_gets_a_services_faults() -> None:
    def remote_reads(deck: fd.Deck, clock: fd.VirtualClock) -> list[fd.Outcome]:
        deck.mark_remote("read_file")
        return Workshop(deck).run(POLICY, clock=clock)

    matrix = rehearse(remote_reads, GOLDEN)
    at_reads = {c.label for c in matrix.cells if c.seq == 2}
    assert {"quota no header", "timeout", "transient 503", "reset"} <= at_reads
    stopped = cell(matrix, "quota no header", 2)
    assert [(o.op, o.status) for o in stopped.outcomes] == [("plan", "ok"), ("read", "stopped")]


def test_a_fault_whose_call_never_comes_is_not_fired_and_not_held(good: Matrix) -> None:
    never = fd.FaultPlan([faults.timeout().on(kind="tool", name="search_web", nth=1)])
    matrix = rehearse(f"{ENTRY}:good", GOLDEN, {"never": never, "reads": READ_ERROR})
    found = cell(matrix, "never", None)
    assert (found.status, found.violations) == ("not fired", ())
    assert found not in matrix.findings
    assert matrix.ok
    assert cell(matrix, "reads", None).status == "held"
    data = matrix_json(matrix)
    assert data["counts"]["not fired"] == 1
    assert data["counts"]["held"] == 2
    lines = matrix_summary(matrix)
    assert lines[0].endswith("; 1 not fired")
    assert any(line.startswith("○ 1 not fired") and "never" in line for line in lines)


def test_a_crash_anywhere_is_killed_and_a_fresh_run_finishes_as_the_clean_run(
    good: Matrix,
) -> None:
    for seq, _ in CLEAN_CALLS:
        found = cell(good, "crash", seq)
        assert found.status == "killed"
        assert found.detail.startswith(f"killed at seq {seq}; a fresh replay then finished")
        assert found.outcomes == good.baseline


READ_ERROR = fd.FaultPlan([faults.tool_error().on(kind="tool", name="read_file", nth=1)])


def falls_back(deck: fd.Deck, clock: fd.VirtualClock) -> list[fd.Outcome]:
    """On a timeout this loop asks a fallback tool that the golden run never called."""
    workshop = Workshop(deck)

    def step(op: str) -> object:
        try:
            return workshop.step(op)
        except fd.TransientError:
            return deck.call("tool", "search_web", {"q": op}, lambda: None)

    return fd.run_steps(step, OPS, fd.Policy(), clock=clock, repair=workshop.repair)


def test_a_retry_gets_the_recorded_answer_again(good: Matrix) -> None:
    # The patch is asked again after the timeout: the same request gets the recorded
    # answer again, as in life.
    found = cell(good, "timeout", PATCH_ASK)
    assert found.status == "held"
    assert found.outcomes[2].attempts == 2


def test_a_path_the_cassette_never_recorded_is_a_miss_and_a_finding() -> None:
    matrix = rehearse(falls_back, GOLDEN, {"timeout": fd.FaultPlan([faults.timeout().at(seq=3)])})
    found = cell(matrix, "timeout", None)
    assert found.status == "miss"
    assert found.detail.startswith("replay miss at seq 4: tool search_web")
    assert found.violations == ()
    assert matrix.broken == ()
    assert matrix.findings == (found,)
    assert not matrix.ok


def test_the_menu_is_built_from_the_judging_policy() -> None:
    entry = f"{ENTRY}:good"
    by_module_policy = cell(rehearse(entry, GOLDEN), "quota retry-after", PATCH_ASK)
    assert by_module_policy.outcomes[2].retry_after == "2"
    strict = fd.Policy(max_retry_after=1.0, max_delay=1.0, max_total_wait=5.0)
    by_given_policy = cell(rehearse(entry, GOLDEN, policy=strict), "quota retry-after", PATCH_ASK)
    assert by_given_policy.outcomes[2].retry_after == "1"
    assert by_given_policy.status == "held"


def test_retrying_quota_at_once_breaks_no_early_retry(retrying: Matrix) -> None:
    assert not retrying.ok
    assert all(c in retrying.findings for c in retrying.broken)
    assert len(retrying.findings) > len(retrying.broken)  # its unhandled timeouts raise
    found = cell(retrying, "quota retry-after", PATCH_ASK)
    assert found in retrying.broken
    assert invariants(found) == {"no_early_retry"}
    assert "retried at seq 5 after 0s" in found.violations[0].observed
    assert "call_budget" in invariants(cell(retrying, "quota no header", PATCH_ASK))
    # Its unhandled timeouts break nothing they can be judged on: raised, not broke.
    timeout = cell(retrying, "timeout", PATCH_ASK)
    assert timeout.status == "raised"
    assert timeout.detail.startswith("TransientError: injected timeout")


def test_dropping_finished_work_breaks_partial_work() -> None:
    matrix = rehearse(f"{ENTRY}:drops_partial_work", GOLDEN)
    assert not matrix.ok
    found = cell(matrix, "quota no header", PATCH_ASK)
    assert found.status == "broke"
    assert [(v.invariant, v.op) for v in found.violations] == [
        ("partial_work", "plan"),
        ("partial_work", "read"),
    ]


def test_a_loop_that_dies_on_quota_loses_its_work_and_breaks() -> None:
    # unbounded_backoff catches only transient errors: the quota error escapes, and with
    # it every finished step.
    matrix = rehearse(f"{ENTRY}:unbounded_backoff", GOLDEN)
    found = cell(matrix, "quota no header", PATCH_ASK)
    assert found.status == "broke"
    assert found.detail.startswith("QuotaExhausted: injected quota fault")
    assert invariants(found) == {"partial_work"}
    raised = cell(matrix, "quota no header", 1)
    assert raised.status == "raised"  # nothing finished yet
    assert raised in matrix.findings
    assert cell(matrix, "transient 503", PATCH_ASK).status == "held"


# -- processes, progress and determinism -------------------------------------------------


def test_two_processes_give_the_same_matrix_as_one(retrying: Matrix) -> None:
    seen: list[tuple[int, int]] = []
    parallel = rehearse(
        f"{ENTRY}:retry_on_quota", GOLDEN, jobs=2, progress=lambda *a: seen.append(a)
    )
    assert matrix_json(parallel) == matrix_json(retrying)
    assert parallel == retrying
    total = len(retrying.cells)
    assert seen[-1] == (total, total)
    assert [done for done, _ in seen] == sorted(done for done, _ in seen)
    assert {t for _, t in seen} == {total}


def test_progress_reaches_the_total_on_one_process() -> None:
    seen: list[tuple[int, int]] = []
    matrix = rehearse(f"{ENTRY}:good", GOLDEN, progress=lambda *a: seen.append(a))
    total = len(matrix.cells)
    assert seen == [(n, total) for n in range(1, total + 1)]


def test_the_same_inputs_give_the_same_matrix(good: Matrix) -> None:
    assert rehearse(f"{ENTRY}:good", GOLDEN) == good


def test_several_processes_need_an_importable_entrypoint() -> None:
    def entry(deck: fd.Deck, clock: fd.VirtualClock) -> list[fd.Outcome]:
        return Workshop(deck).run(fd.Policy(), clock=clock)

    with pytest.raises(fd.ConfigError, match="pass the entrypoint as 'module:function'"):
        rehearse(entry, GOLDEN, jobs=2)
    with pytest.raises(fd.ConfigError, match="jobs must be an integer >= 1"):
        rehearse(f"{ENTRY}:good", GOLDEN, jobs=0)


# -- named plans ------------------------------------------------------------------------------


def test_named_plans_give_one_whole_run_cell_each() -> None:
    plans = {
        "quota on the first read": fd.FaultPlan([faults.quota().on(kind="tool", nth=1)]),
        "crash at the patch": fd.FaultPlan([faults.crash().on(kind="tool", name="write_patch")]),
    }
    matrix = rehearse(f"{ENTRY}:good", GOLDEN, plans)
    assert matrix.rows == (REPLAY_ROW, *plans)
    planned = [c for c in matrix.cells if c.label in plans]
    assert [(c.label, c.seq, c.status) for c in planned] == [
        ("quota on the first read", None, "held"),
        ("crash at the patch", None, "killed"),
    ]
    assert planned[0].detail == "plan ok, read stopped(quota)"
    assert planned[1].detail.startswith("killed at seq 5;")
    assert matrix.ok


def test_plans_travel_to_worker_processes_intact() -> None:
    plans = {
        "sequence": fd.FaultPlan.sequence(
            [None, faults.timeout(), None, None, faults.transient(529)]
        ),
        "coin": fd.FaultPlan([faults.quota(retry_after=1.5).random(p=0.5, seed=3)], seed=9),
    }
    alone = rehearse(f"{ENTRY}:good", GOLDEN, plans)
    assert [c.detail for c in alone.cells[1:]] == [
        "plan ok, read ok x2, patch ok x2",
        "plan stopped(quota) x2",  # the draws for seed 3 land on seq 1 and 2
    ]
    assert rehearse(f"{ENTRY}:good", GOLDEN, plans, jobs=2) == alone


def test_bad_plans_are_refused() -> None:
    with pytest.raises(fd.ConfigError, match="no fault plans given"):
        rehearse(f"{ENTRY}:good", GOLDEN, {})
    with pytest.raises(fd.ConfigError, match="expected a FaultPlan"):
        rehearse(f"{ENTRY}:good", GOLDEN, {"x": [faults.crash()]})  # type: ignore[dict-item]
    with pytest.raises(fd.ConfigError, match="taken by the clean replay"):
        rehearse(f"{ENTRY}:good", GOLDEN, {REPLAY_ROW: fd.FaultPlan([faults.crash()])})


class ForgetsAfterACrash:
    """A loop that, restarted after a crash, skips planning: it does not finish the same."""

    def __init__(self) -> None:
        self.crashed = False

    def __call__(self, deck: fd.Deck, clock: fd.VirtualClock) -> list[fd.Outcome]:
        workshop = Workshop(deck)
        ops = ("read", "patch") if self.crashed else OPS
        try:
            return fd.run_steps(workshop.step, ops, fd.Policy(), clock=clock)
        except fd.ProcessKilled:
            self.crashed = True
            raise


def test_a_restart_that_does_not_finish_as_the_clean_run_breaks() -> None:
    plan = fd.FaultPlan([faults.crash().on(kind="tool", name="read_file", nth=1)])
    matrix = rehearse(ForgetsAfterACrash(), GOLDEN, {"crash at the read": plan})
    found = cell(matrix, "crash at the read", None)
    assert found.status == "broke"
    assert found.detail.startswith("killed at seq 2; a fresh replay then broke")
    assert [(v.invariant, v.op) for v in found.violations] == [("replay_determinism", "plan")]
    assert "read ok instead of plan ok" in found.violations[0].observed


def swallows_everything(deck: fd.Deck, clock: fd.VirtualClock) -> list[fd.Outcome]:
    # ReplayMiss is a BaseException so that `except Exception` cannot hide it; a loop that
    # catches BaseException still can, and the deck's log still shows the miss.
    try:
        return falls_back(deck, clock)
    except BaseException:
        return []


def test_a_miss_the_loop_swallowed_is_still_a_miss() -> None:
    plan = fd.FaultPlan([faults.timeout().at(seq=3)])
    matrix = rehearse(swallows_everything, GOLDEN, {"timeout": plan})
    found = cell(matrix, "timeout", None)
    assert found.status == "miss"
    assert found.detail == "replay miss at seq 4: tool search_web (the loop caught it)"


def unrecorded(deck: fd.Deck, clock: fd.VirtualClock) -> list[fd.Outcome]:
    deck.call("tool", "not_recorded", {}, lambda: None)
    return []


def returns_nothing(deck: fd.Deck, clock: fd.VirtualClock) -> None:
    Workshop(deck).run(fd.Policy(), clock=clock)


def test_a_cassette_the_entrypoint_does_not_replay_is_a_config_error() -> None:
    with pytest.raises(fd.ConfigError) as caught:
        rehearse(unrecorded, GOLDEN)
    message = str(caught.value)
    assert message.startswith(f"the clean replay of {GOLDEN} with {__name__}:unrecorded ")
    assert "does not replay: replay miss at seq 1" in message
    assert message.endswith("; re-record the cassette")
    assert "\n" not in message
    with pytest.raises(fd.ConfigError, match=r"returned None; it must return the loop's outcomes"):
        rehearse(returns_nothing, GOLDEN)  # type: ignore[arg-type]
    with pytest.raises(fd.CassetteNotFound):
        rehearse(f"{ENTRY}:good", ROOT / "no-such.jsonl")


# -- entrypoints --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (ENTRY, f"entrypoint '{ENTRY}' must look like 'package.module:function'"),
        (":good", "entrypoint ':good' must look like 'package.module:function'"),
        (f"{ENTRY}:", f"entrypoint '{ENTRY}:' must look like 'package.module:function'"),
        ("a b:c", "entrypoint 'a b:c' must look like 'package.module:function'"),
        (
            "no_such_package_x.mod:fn",
            "entrypoint: cannot import 'no_such_package_x.mod' (ModuleNotFoundError: "
            "No module named 'no_such_package_x'); "
            "put the folder that holds it on PYTHONPATH, or install it",
        ),
        (f"{ENTRY}:nope", f"entrypoint: '{ENTRY}' has no 'nope'; write 'package.module:function'"),
        (f"{ENTRY}:POLICY", f"'{ENTRY}:POLICY' is not callable; name a function"),
    ],
)
def test_a_bad_entrypoint_says_what_to_write(spec: str, message: str) -> None:
    with pytest.raises(fd.ConfigError) as caught:
        rehearse(spec, GOLDEN)
    assert str(caught.value).startswith(message)
    assert "\n" not in str(caught.value)


def test_an_entrypoint_loads_by_name() -> None:
    from examples.workshop import rehearsal

    assert load_attr(f"{ENTRY}:good", what="entrypoint", kind="function") is rehearsal.good
    backoff = load_attr(f"{ENTRY}:POLICY.backoff", what="entrypoint", kind="function")
    assert backoff == rehearsal.POLICY.backoff  # a dotted name works too


def test_the_workshop_entrypoints_import_from_the_repository_root() -> None:
    code = (
        "import examples.workshop.rehearsal as r, faultdeck as fd; "
        "assert isinstance(r.POLICY, fd.Policy); "
        "print(sorted(n for n in ('good', 'retry_on_quota', 'unbounded_backoff', "
        "'drops_partial_work', 'coin_flip_retry') if callable(getattr(r, n))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("'") == 10


# -- rendering ------------------------------------------------------------------------------------


def test_matrix_json_is_json_and_keeps_every_cell(retrying: Matrix) -> None:
    data = matrix_json(retrying)
    again = json.loads(json.dumps(data))
    assert again == data
    assert set(data) == {
        "cassette",
        "entrypoint",
        "policy",
        "ok",
        "positions",
        "rows",
        "counts",
        "not_applicable",
        "cells",
        "baseline",
    }
    assert {"label": "bad tool call", "seq": 2} in data["not_applicable"]
    assert {"label": "quota no header", "seq": 2} in data["not_applicable"]
    assert {"label": "stream cut", "seq": 1} in data["not_applicable"]
    ran = {(c["label"], c["seq"]) for c in data["cells"]}
    assert not ran & {(n["label"], n["seq"]) for n in data["not_applicable"]}
    assert data["ok"] is False
    assert data["entrypoint"] == f"{ENTRY}:retry_on_quota"
    assert data["policy"] == f"{ENTRY}:POLICY, the entrypoint module's"
    assert data["positions"][1] == {"seq": 2, "call": "tool read_file"}
    assert sum(data["counts"].values()) == len(data["cells"]) == len(retrying.cells)
    assert data["counts"]["broke"] == len(retrying.broken)
    broke = next(
        c for c in data["cells"] if c["label"] == "quota retry-after" and c["seq"] == PATCH_ASK
    )
    assert broke["status"] == "broke"
    assert broke["call"] == "model chat"
    assert broke["violations"][0]["invariant"] == "no_early_retry"
    assert broke["violations"][0]["op"] == "patch"
    assert broke["outcomes"][2]["op"] == "patch"
    assert data["baseline"][2]["value"] == {"path": "agent/loop.py", "applied": True, "lines": 2}


def test_matrix_json_gives_a_repr_for_values_that_are_not_json() -> None:
    outcome = fd.Outcome(op=("read", 1), status="ok", value={1, 2})
    matrix = Matrix("c.jsonl", "m:f", (), (REPLAY_ROW,), (), (outcome,))
    data = matrix_json(matrix)
    json.dumps(data)
    assert data["baseline"][0]["op"] == ["read", 1]  # as a JSON reader gets it
    assert data["baseline"][0]["value"] == "{1, 2}"


def test_matrix_summary_names_every_broken_cell_and_its_violations(retrying: Matrix) -> None:
    lines = matrix_summary(retrying)
    counts = matrix_json(retrying)["counts"]
    skipped = len(not_applicable(retrying))
    assert skipped == len(FAULT_MENU) * len(CLEAN_CALLS) - len(applicable())
    assert lines[0] == (
        f"{len(retrying.cells)} cells: {counts['held']} held, {counts['broke']} broke, "
        f"{counts['miss']} miss, {counts['raised']} raised, {counts['killed']} killed "
        f"({skipped} not applicable, not run)"
    )
    text = "\n".join(lines)
    calls = dict(CLEAN_CALLS)
    for broken in retrying.broken:
        assert broken.seq is not None
        assert f"✗ {broken.label} at seq {broken.seq} ({calls[broken.seq]}):" in lines
        for violation in broken.violations:
            assert f"    {violation}" in lines
    assert "✗ quota retry-after at seq 4 (model chat):" in lines
    assert "! timeout at seq 4 (model chat): TransientError" in text
    missing = rehearse(falls_back, GOLDEN)
    summary = matrix_summary(missing)
    assert summary[-2].startswith(f"~ {matrix_json(missing)['counts']['miss']} off the recorded")
    assert "timeout at seq 4" in summary[-2]
    assert summary[-1].endswith("rehearse again with --branches record")


def test_matrix_summary_of_a_clean_matrix_has_no_broken_lines(good: Matrix) -> None:
    lines = matrix_summary(good)
    assert not any(line.startswith(SYMBOLS["broke"]) for line in lines)


def test_matrix_table_has_a_row_per_fault_and_a_column_per_call(retrying: Matrix) -> None:
    # The retrying loop under the fallback: every status appears at least once.
    retrying = rehearse(falls_back_and_retries_quota, GOLDEN)
    table = matrix_table(retrying)
    assert table.row_count == len(retrying.rows)
    assert len(table.columns) == 2 + len(CLEAN_CALLS)  # label, whole run, positions
    out = io.StringIO()
    Console(file=out, width=120, color_system=None).print(table)
    rendered = out.getvalue()
    for label in retrying.rows:
        assert label in rendered
    assert "read_file" in rendered
    assert "write_patch" in rendered
    for status in ("held", "broke", "miss", "raised", "killed"):
        assert SYMBOLS[status] in rendered
    stream_cut = next(line for line in rendered.splitlines() if "stream cut" in line)
    assert stream_cut.count(NOT_APPLICABLE) == len(CLEAN_CALLS)
    bad_call = next(line for line in rendered.splitlines() if "bad tool call" in line)
    assert bad_call.count(NOT_APPLICABLE) == 3  # the tool calls: only a model call has one
    assert NOT_APPLICABLE not in next(line for line in rendered.splitlines() if REPLAY_ROW in line)
    assert f"{NOT_APPLICABLE} does not apply" in LEGEND


def falls_back_and_retries_quota(deck: fd.Deck, clock: fd.VirtualClock) -> list[fd.Outcome]:
    """Both bugs at once: a fallback the cassette lacks, and quota retried at once."""
    from examples.workshop import broken

    workshop = Workshop(deck)

    def step(op: str) -> object:
        try:
            return workshop.step(op)
        except fd.TransientError as exc:
            if exc.code == "timeout":
                return deck.call("tool", "search_web", {"q": op}, lambda: None)
            raise

    return broken.retry_on_quota(step, OPS, fd.Policy(), clock=clock, repair=workshop.repair)


def test_a_worker_that_dies_is_its_cells_error_and_the_rest_run() -> None:
    matrix = rehearse("tests.support.dying:dies_on_timeout", GOLDEN, jobs=2)
    alone = rehearse(f"{ENTRY}:good", GOLDEN)
    died = [c for c in matrix.cells if c.label == "timeout"]
    assert died
    assert all(c.status == "raised" for c in died)
    assert all("worker process running it died" in c.detail for c in died)
    others = [(c.label, c.seq, c.status) for c in matrix.cells if c.label != "timeout"]
    assert others == [(c.label, c.seq, c.status) for c in alone.cells if c.label != "timeout"]
