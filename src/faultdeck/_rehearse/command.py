"""The fault matrix for any program: each cell runs the command in a subprocess.

A Python program gets its deck from the bootstrap, whatever its code (one that calls
``fd.Deck.from_env()`` gets the same deck), and any other program through the proxy
(``_base/bootstrap.started``); each run gets the cassette in
replay mode, its fault plan, a virtual clock and a report file. A program cannot hand back
its outcomes, so a cell is judged on its deck's call log and waits (call budget, bounded
waiting, no early retry, committed streams), its misses and its exit code. A run killed by
a ``crash`` fault is restarted fault-free: it must exit 0 having made the clean run's calls.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import tempfile
from collections.abc import Callable, Collection, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from .._base.bootstrap import started
from .._base.clock import VirtualClock
from .._base.errors import ConfigError
from .._deck.report import CallRecord
from .._judge.invariants import Violation, check
from .._judge.policy import Policy
from ..faults import FaultPlan
from ..faults._kinds import kills
from .branches import (
    Branching,
    branch_of,
    branches_of,
    check_branching,
    header,
    on_branches,
    path_of,
)
from .matrix import (
    NOT_FIRED,
    REPLAY_ROW,
    Cell,
    Executor,
    Matrix,
    Task,
    answers_of,
    check_executor,
    fired,
    judging_policy,
    menu_rows,
    plan_cells,
    positions_of,
)

if TYPE_CHECKING:
    from .ray import Shipped


def rehearse_command(  # noqa: PLR0913 - the public call: options by keyword
    command: Sequence[str],
    cassette: str | os.PathLike[str],
    plans: Mapping[str, FaultPlan] | None = None,
    *,
    policy: Policy | None = None,
    jobs: int = 1,
    progress: Callable[[int, int], None] | None = None,
    executor: Executor = "local",
    address: str | None = None,
    ok_exit: Collection[int] = (0,),
    branches: Branching = "replay",
) -> Matrix:
    """Run ``command`` against ``cassette`` under each fault and judge each run.

    Args:
        command: the program and its arguments.
        cassette: the golden cassette.
        plans: named plans, one cell each; ``None`` for every fault at every call it applies to.
        policy: the policy to judge by (``Policy()`` by default).
        jobs: how many runs go at once (under Ray: the CPUs of a local cluster).
        progress: called as ``progress(done, total)``.
        executor: ``"local"`` (subprocesses here) or ``"ray"`` (each cell a Ray task, which
            gets the cassette and its plan as data).
        address: the Ray cluster to join; ``None`` starts a local one for the call.
        ok_exit: the exit codes that mean the program ended well (``0``; a program whose
            graceful stop under a fault exits 3 passes ``(0, 3)``): any other is ``raised``.
        branches: ``replay``, ``record`` or ``off``, as for ``fd.rehearse``: a cell that
            leaves the recorded path is recorded once as a branch (the program's calls
            from there live), then replays on it.

    Raises:
        ConfigError: the clean run does not replay, or writes no report; a bad executor,
            or Ray missing.
    """
    executor = check_executor(executor)
    if executor == "ray":
        from .ray import import_ray

        import_ray()  # a missing Ray is said before any run
    policy, judged_by = judging_policy(policy)
    path = os.path.abspath(os.fspath(cassette))
    with tempfile.TemporaryDirectory(prefix="faultdeck-rehearse-") as folder:
        clean = _run(command, path, None, folder, "clean", ok_exit=ok_exit)
        if clean.report is None or not clean.ok or clean.report["misses"]:
            why = (
                "wrote no report"
                if clean.report is None
                else ("missed calls" if clean.ok else "exited")
            )
            raise ConfigError(
                f"the clean replay of {path} with {' '.join(command)} {why} "
                f"({clean.ending()}); re-record the cassette, and check that the program "
                "runs on a Python with faultdeck installed (the bootstrap gives it its deck)"
            )
        calls = _calls(clean.report)
        positions = positions_of(calls)
        replay = _judge(REPLAY_ROW, None, clean, policy)
        answers = answers_of(calls, path) if plans is None else None  # the full matrix's
        tasks = plan_cells(plans, policy, calls, clean.report.get("remote_tools", ()), answers)
        branched = branches_of(path) if check_branching(branches) != "off" else {}
        on_golden = [task for task in tasks if branch_of(branched, task) is None]
        total = len(tasks) + 1
        if progress is not None:
            progress(1, total)
        done = [1]

        def one(index: int) -> Cell:
            cell = run_cell(
                command, path, folder, str(index), on_golden[index], calls, policy,
                ok_exit=ok_exit,
            )  # fmt: skip
            done[0] += 1
            if progress is not None:
                progress(done[0], total)
            return cell

        if executor == "ray":
            from .ray import Placement, rehearse_cells

            shared = (list(command), calls, dataclasses.asdict(policy), os.getcwd(), [*ok_exit])
            placed = Placement(address, jobs, progress, total)
            cells = rehearse_cells(_ray_cell, path, shared, on_golden, placed)
        else:
            with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
                cells = list(pool.map(one, range(len(on_golden))))
        cells = on_branches(
            tasks,
            branched,
            cells,
            branches,
            lambda on, task: run_cell(
                command, on, folder, "branched", task, calls, policy, ok_exit=ok_exit
            ),
            lambda task: _record_branch(command, path, folder, task, path_of(path, *task[:2])),
        )
        if progress is not None and len(on_golden) < len(tasks):
            progress(total, total)
    rows = menu_rows(plans, tasks)
    return Matrix(path, " ".join(command), positions, rows, (replay, *cells), (), judged_by)


@dataclass(frozen=True, slots=True)
class _Ran:
    """One run of the program: its exit code, its deck's report (``None`` if it wrote
    none) and what it printed on stderr."""

    code: int
    report: dict[str, Any] | None
    stderr: str
    ok_exit: Collection[int] = (0,)

    @property
    def ok(self) -> bool:
        """It exited with a code that means it ended well."""
        return self.code in self.ok_exit

    def ending(self) -> str:
        """How it ended: ``exit 1: ValueError: …``, the exception line a traceback ends
        with, as the entrypoint path shows an exception."""
        raw = self.stderr.splitlines()
        lines = [line.strip() for line in raw if line.strip()]
        if self.ok or not lines:
            return f"exit {self.code}"
        line = lines[-1]
        last = max((i for i, s in enumerate(raw) if s.startswith("Traceback (")), default=None)
        if last is not None:
            # The exception's own line: the first one after the last traceback's frames (which
            # are indented); pydantic's and others' messages go on over further lines.
            line = next((s for s in raw[last + 1 :] if s.strip() and not s[0].isspace()), line)
        return f"exit {self.code}: {line if len(line) <= 200 else line[:197] + '...'}"


def run_cell(  # noqa: PLR0913 - a cell's parts, and how its program ends well
    command: Sequence[str],
    cassette: str,
    folder: str,
    name: str,
    task: Task,
    calls: Sequence[CallRecord],
    policy: Policy,
    cwd: str | None = None,
    *,
    ok_exit: Collection[int] = (0,),
) -> Cell:
    """One cell: run the program under the task's plan (its files named ``name`` in
    ``folder``) and judge it; after a crash, a fault-free restart must finish as the clean
    run did. An exit code in ``ok_exit`` is the program ending well."""
    label, seq, plan = task
    ran = _run(command, cassette, plan, folder, name, cwd, ok_exit=ok_exit)
    cell = _judge(label, seq, ran, policy)
    if cell.status == "killed":
        again = _run(command, cassette, None, folder, f"{name}.restart", cwd, ok_exit=ok_exit)
        cell = _restarted(cell, again, calls, policy)
    elif cell.status == "held" and ran.report and not fired(plan, ran.report["calls"]):
        cell = Cell(label, seq, "not fired", (), NOT_FIRED)
    return cell


def _ray_cell(  # noqa: PLR0913 - a Ray task's arguments: the cell and what cells share
    cassette: Shipped,
    label: str,
    seq: int | None,
    plan: dict[str, Any],
    command: list[str],
    calls: list[CallRecord],
    policy_fields: dict[str, Any],
    cwd: str,
    ok_exit: list[int],
) -> Cell:
    """A cell as a Ray task: the cassette's bytes become a file of the worker's own, and the
    program runs in the driver's folder if the worker has it."""
    from .ray import here

    with tempfile.TemporaryDirectory(prefix="faultdeck-ray-") as folder:
        copy = cassette.write(folder)
        task = (label, seq, FaultPlan.from_dict(plan))
        policy = Policy(**policy_fields)
        cell = run_cell(
            command, copy, folder, "cell", task, calls, policy, here(cwd), ok_exit=ok_exit
        )
    return dataclasses.replace(cell, detail=cassette.named(cell.detail, copy))


def _run(
    command: Sequence[str],
    cassette: str,
    plan: FaultPlan | None,
    folder: str,
    name: str,
    cwd: str | None = None,
    *,
    ok_exit: Collection[int] = (0,),
    extra: Mapping[str, str] | None = None,
) -> _Ran:
    report = os.path.join(folder, f"{name}.report.json")
    env = dict(os.environ)
    env.update(
        FAULTDECK_CASSETTE=cassette,
        FAULTDECK_MODE="replay",
        FAULTDECK_CLOCK="virtual",
        FAULTDECK_REPORT=report,
    )
    env.pop("FAULTDECK_FAULTS", None)
    if plan is not None:
        plan_path = os.path.join(folder, f"{name}.plan.json")
        Path(plan_path).write_bytes(orjson.dumps(plan.to_json()))
        env["FAULTDECK_FAULTS"] = plan_path
    env.update(extra or {})
    argv, env = started(command, env)
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, check=False)
    stderr = done.stderr.decode("utf-8", errors="replace")
    if not os.path.exists(report):
        return _Ran(done.returncode, None, stderr, ok_exit)
    written = orjson.loads(Path(report).read_bytes())
    if written.get("refused"):  # the plan holds a fault a call cannot show: bad input, no cell
        raise ConfigError(written["refused"])
    return _Ran(done.returncode, written, stderr, ok_exit)


def _restarted(killed: Cell, again: _Ran, clean: Sequence[CallRecord], policy: Policy) -> Cell:
    """After a crash, a fresh fault-free run must finish as the clean run did."""
    where = killed.detail.partition(" (")[0]
    label, seq = killed.label, killed.seq
    report = again.report
    if report is None:
        detail = f"{where}; a fresh run then wrote no report ({again.ending()})"
        return Cell(label, seq, "broke", (), detail)
    if report["misses"]:
        miss = report["misses"][0]
        detail = (
            f"{where}; a fresh run then missed at seq {miss['seq']} {miss['kind']} {miss['name']}"
        )
        return Cell(label, seq, "broke", (), detail)
    calls = _calls(report)
    found = [
        v
        for v in check((), policy=policy, calls=calls, clock=_slept(report))
        if v.invariant != "partial_work"
    ]
    path, expected = [c.key for c in calls], [c.key for c in clean]
    if path != expected:
        at = next(
            (i for i, (a, b) in enumerate(zip(path, expected, strict=False)) if a != b),
            min(len(path), len(expected)),
        )
        bound = "a fresh run after a crash makes the clean run's calls"
        found.append(
            Violation(
                "replay_determinism",
                None,
                bound,
                f"{len(path)} calls, the clean run's {len(expected)}; they part at call {at + 1}",
            )
        )
    if not again.ok:
        detail = f"{where}; a fresh run then ended {again.ending()}"
        return Cell(label, seq, "broke", tuple(found), detail)
    if found:
        detail = f"{where}; a fresh run then broke {', '.join(v.invariant for v in found)}"
        return Cell(label, seq, "broke", tuple(found), detail)
    return Cell(
        label, seq, "killed", (), f"{where}; a fresh run then finished as the clean run did"
    )


def _slept(report: dict[str, Any]) -> VirtualClock:
    clock = VirtualClock()
    for seconds in report.get("sleeps", ()):
        clock.sleep(seconds)
    return clock


def _calls(report: dict[str, Any]) -> list[CallRecord]:
    return [CallRecord(**call) for call in report["calls"]]


def _judge(label: str, seq: int | None, ran: _Ran, policy: Policy) -> Cell:
    report = ran.report
    if report is None:
        return Cell(label, seq, "raised", (), f"the program wrote no report ({ran.ending()})")
    if report["misses"]:
        miss = report["misses"][0]
        return Cell(
            label, seq, "miss", (), f"miss at seq {miss['seq']} {miss['kind']} {miss['name']}"
        )
    # Without the program's outcomes, partial work cannot be judged; the rest can.
    found = tuple(
        v
        for v in check((), policy=policy, calls=_calls(report), clock=_slept(report))
        if v.invariant != "partial_work"
    )
    killed = any(kills(c["fault"]) for c in report["calls"])
    if found:
        return Cell(label, seq, "broke", found, ran.ending())
    if killed:
        at = next((c["seq"] for c in reversed(report["calls"]) if kills(c["fault"])), seq)
        return Cell(label, seq, "killed", (), f"killed at seq {at} (exit {ran.code})")
    return Cell(label, seq, "held" if ran.ok else "raised", (), ran.ending())


def _record_branch(
    command: Sequence[str], cassette: str, folder: str, task: Task, path: str
) -> tuple[str, tuple[str, ...]]:
    """Run the cell's program again into its branch at ``path`` (``run_branch``): that path,
    and the error type of each live call that got no answer."""
    recorded = run_branch(command, cassette, folder, path, header(*task, 0))
    report = recorded.report or {}
    return path, tuple(report.get("unanswered", ()))


def run_branch(
    command: Sequence[str],
    cassette: str,
    folder: str,
    path: str,
    told: Mapping[str, Any],
    *,
    allow_side_effects: bool = True,
) -> _Ran:
    """Run the program as a branch is recorded: under ``told``'s plan, ``cassette``'s calls
    replayed up to the one before ``told["left_at"]`` (``0``: until the first one it lacks)
    and the rest live, into ``path`` (``told`` is what the branch's header says of it,
    ``header``). Side-effecting tools run for real, as ``record`` lets them, unless
    ``allow_side_effects`` is false (their ``dry_run`` stand-ins, as ``drift`` runs them)."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    fork = {
        "FAULTDECK_MODE": "fork",
        "FAULTDECK_CASSETTE": path,
        "FAULTDECK_FORK_PARENT": cassette,
        "FAULTDECK_FORK_AT": str(int(told["left_at"]) - 1) if told["left_at"] else "",
        "FAULTDECK_FORK_BRANCH": orjson.dumps(told).decode(),
        "FAULTDECK_ALLOW_SIDE_EFFECTS": "1" if allow_side_effects else "0",
    }
    plan = FaultPlan.from_dict(told["plan"])
    return _run(command, cassette, plan, folder, "branch.record", extra=fork)
