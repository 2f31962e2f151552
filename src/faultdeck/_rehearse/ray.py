"""Rehearsal cells and repeated replays as tasks on a Ray cluster.

    cluster(address)  ─► join it (``ray.init(address=…)``), or start a local Ray on
                         127.0.0.1 and stop it after
    ray_map(task, args) ─► one task per cell or run, results in order, progress as they end;
                         a task whose worker died is a ``Failed``, not a hang
    run_replays(command, cassette, envs) ─► one run of the program per env, on a worker

Only data travels: the cassette's bytes and each plan as JSON go in the task arguments, so
a worker needs the program's code, never the driver's files. Each task writes the cassette
into a temporary folder of its own; what the run reports with that copy's path is given back
with the cassette's own. Ray is imported here only, and only when a Ray executor is asked for
(``pip install 'faultdeck[ray]'``).
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import subprocess
import sys
import tempfile
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

import orjson

from .._base import terms
from .._base.bootstrap import started
from .._base.errors import ConfigError
from .matrix import Cell, Task

INSTALL = "--executor ray needs ray: pip install 'faultdeck[ray]'"
"""What to do when Ray is not installed."""
STALL = 3600.0
"""Seconds to wait with no task finishing before the ones left are given up as failed."""
TAIL = 40
"""How many of a program's last stderr lines a replay keeps, as the local replay does."""

T = TypeVar("T")
Replayed = tuple[int, dict[str, Any] | None, str]
"""A program's run: its exit code, its deck's report (``None`` if none) and its last lines
of stderr."""


@dataclass(frozen=True, slots=True)
class Failed:
    """A task that returned nothing: its worker died, Ray failed it, or it never ended.

    Attributes:
        why: one line, naming the worker's death when that is what happened.
    """

    why: str


def import_ray() -> ModuleType:
    """The ``ray`` module.

    Raises:
        ConfigError: Ray is not installed; the line says how to install it.
    """
    try:
        import ray
    except ImportError:
        raise ConfigError(INSTALL) from None
    return ray


@contextlib.contextmanager
def cluster(address: str | None = None, *, cpus: int | None = None) -> Iterator[ModuleType]:
    """Ray, connected for the block: joined at ``address``, or a local one started on
    127.0.0.1 (with ``cpus`` CPUs, else all) and shut down after. A Ray this process
    already uses is used as it is and left running.

    Raises:
        ConfigError: Ray is missing, or the cluster at ``address`` cannot be joined.
    """
    if address is None and "ray" not in sys.modules:
        # Read when ray is imported: a Linux node would otherwise listen on its outward
        # address, where a private, local cluster has no business.
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
        # A private cluster on loopback needs no token: none is written to ~/.ray.
        os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    ray = import_ray()
    if ray.is_initialized():
        yield ray
        return
    # The driver's import path goes with the tasks, so that workers import the program's
    # modules as the driver does (the interpreter's own paths they have already).
    own = (sys.prefix, sys.base_prefix)
    paths = [p for p in sys.path if p and os.path.isdir(p) and not p.startswith(own)]
    runtime_env = {"env_vars": {"PYTHONPATH": os.pathsep.join(paths)}}
    options: dict[str, Any] = {
        "runtime_env": runtime_env,
        "log_to_driver": False,
        "logging_level": logging.WARNING,
    }
    if address is not None and not _answers(address):
        raise ConfigError(
            f"no Ray cluster answers at {address}; check the address (ray status on the "
            "head) or drop --address to start a local one"
        )
    try:
        if address is None:
            ray.init(num_cpus=cpus, include_dashboard=False, **options)
        else:
            ray.init(address=address, **options)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        if address is None:
            raise ConfigError(f"could not start a local Ray: {first}") from exc
        raise ConfigError(
            f"could not join the Ray cluster at {address}: {first}; check the address "
            "(ray status on the head) or drop --address to start a local one"
        ) from exc
    try:
        # Ray's own lines (a worker that died, said by the raylet) are printed on this
        # process's stdout, where a command's JSON goes: they go to stderr instead.
        with contextlib.redirect_stdout(sys.stderr):
            yield ray
    finally:
        with contextlib.redirect_stdout(sys.stderr):
            ray.shutdown()


def _answers(address: str) -> bool:
    """Whether something listens at ``host:port`` (Ray would retry a dead one for minutes);
    any other form (``auto``, ``ray://…``) is Ray's to resolve."""
    host, colon, port = address.rpartition(":")
    if not colon or not port.isdigit() or "/" in host:
        return True
    try:
        socket.create_connection((host, int(port)), timeout=5).close()
    except OSError:
        return False
    return True


def ray_map(
    ray: ModuleType,
    task: Callable[..., T],
    calls: Sequence[tuple[Any, ...]],
    *,
    progress: Callable[[int, int], None] | None = None,
    done: int = 0,
    total: int | None = None,
    stall: float = STALL,
) -> list[T | Failed]:
    """Run ``task(*args)`` for each of ``calls`` as a Ray task; the results in order.

    Args:
        ray: the connected ``ray`` module (``cluster``).
        task: a module-level function, so that workers import it.
        calls: each task's arguments (an ``ObjectRef`` among them stands for its value).
        progress: called as ``progress(done, total)`` as tasks finish.
        done: how much was done before (counted in ``progress``).
        total: the total ``progress`` reports; ``done + len(calls)`` by default.
        stall: seconds with no task finishing after which the rest are ``Failed``.
    """
    remote = ray.remote(max_retries=0)(task)
    refs = [remote.remote(*args) for args in calls]
    total = done + len(calls) if total is None else total
    results: dict[int, T | Failed] = {}
    index = {ref: i for i, ref in enumerate(refs)}
    pending = list(refs)
    while pending:  # each pass ends at least one task, or gives up on them all
        finished, pending = ray.wait(pending, num_returns=1, timeout=stall)
        if not finished:
            for ref in pending:
                ray.cancel(ref, force=True)
                results[index[ref]] = Failed(f"no answer from its Ray task in {stall:.0f} s")
            break
        for ref in finished:
            results[index[ref]] = _result(ray, ref)
            done += 1
            if progress is not None:
                progress(done, total)
    return [results[i] for i in range(len(refs))]


def _result(ray: ModuleType, ref: Any) -> Any:
    try:
        return ray.get(ref)
    except ray.exceptions.WorkerCrashedError:
        return Failed("the Ray worker running it died (its process was killed or exited)")
    except ray.exceptions.RayError as exc:
        cause = getattr(exc, "cause", None)
        text = f"{type(cause).__name__}: {cause}" if cause is not None else str(exc)
        line = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
        return Failed(f"its Ray task failed: {line}")


# -- the cassette as data ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Shipped:
    """A file's bytes, and the path it had on the driver."""

    path: str
    data: bytes

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> Shipped:
        """The file at ``path``, read on the driver."""
        full = os.path.abspath(os.fspath(path))
        return cls(full, Path(full).read_bytes())

    def write(self, folder: str) -> str:
        """Write the bytes into ``folder`` under the file's name; the copy's path."""
        copy = os.path.join(folder, os.path.basename(self.path))
        Path(copy).write_bytes(self.data)
        return copy

    def named(self, text: str, copy: str) -> str:
        """``text`` with the copy's path put back to the file's own."""
        return text.replace(copy, self.path)


def here(cwd: str) -> str | None:
    """The driver's folder, if this worker has it too: programs run there."""
    return cwd if os.path.isdir(cwd) else None


# -- rehearsal cells ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Placement:
    """How a rehearsal's cells go on Ray.

    Attributes:
        address: the cluster to join; ``None`` starts a local one.
        jobs: the CPUs of a local cluster (1: all of this machine's).
        progress: called as ``progress(done, total)`` as cells finish.
        total: the rehearsal's cell count, the clean replay's row included.
    """

    address: str | None
    jobs: int
    progress: Callable[[int, int], None] | None
    total: int


def rehearse_cells(
    body: Callable[..., Cell],
    cassette: str,
    shared: tuple[Any, ...],
    tasks: Sequence[Task],
    where: Placement,
) -> list[Cell]:
    """Each task's cell, from ``body(cassette, label, seq, plan, *shared)`` run as a Ray
    task: ``cassette`` is a ``Shipped``, ``plan`` the plan's JSON, ``shared`` is sent once.
    A cell whose worker died or whose task failed is ``raised``, saying why.
    """
    shipped = _read(cassette, "cassette")
    with cluster(where.address, cpus=where.jobs if where.jobs > 1 else None) as ray:
        data, refs = ray.put(shipped), [ray.put(value) for value in shared]
        args = [(data, label, seq, plan.to_json(), *refs) for label, seq, plan in tasks]
        results = ray_map(ray, body, args, progress=where.progress, done=1, total=where.total)
    return [
        Cell(label, seq, "raised", (), got.why) if isinstance(got, Failed) else got
        for got, (label, seq, _) in zip(results, tasks, strict=True)
    ]


# -- replays -----------------------------------------------------------------------------------


def run_replays(
    command: Sequence[str],
    cassette: str | os.PathLike[str],
    envs: Sequence[Mapping[str, str]],
    *,
    address: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> list[Replayed]:
    """Replay ``cassette`` through ``command`` once per env, each run a Ray task.

    A worker writes the cassette's bytes (and a ``FAULTDECK_FAULTS`` plan's) into a folder
    of its own, runs the program there with ``FAULTDECK_CASSETTE``, ``FAULTDECK_REPORT``,
    ``FAULTDECK_MODE=replay`` and the env on top of its own environment, and sends back
    what the local replay keeps: the exit code, the report and the last lines of stderr.

    Args:
        command: the program and its arguments.
        cassette: the cassette to replay.
        envs: one dict of extra variables per run (``FAULTDECK_RUN`` and the like).
        address: a Ray cluster to join; ``None`` starts a local one for the call.
        progress: called as ``progress(done, total)`` as runs finish.

    Raises:
        ConfigError: Ray is missing, the cluster cannot be joined, or a file is unreadable.
    """
    if not command:
        raise ConfigError("give the program to run after --, e.g. -- python agent.py")
    shipped = _read(cassette, "cassette")
    plans: dict[str, Shipped] = {}
    calls = []
    for env in envs:
        extra = dict(env)
        plan = extra.pop("FAULTDECK_FAULTS", None)
        if plan is not None and plan not in plans:
            plans[plan] = _read(plan, "fault plan")
        calls.append((extra, None if plan is None else plans[plan]))
    base = {"FAULTDECK_MODE": "replay", terms.ENV: terms.current().to_env()}
    with cluster(address) as ray:
        data = ray.put(shipped)
        args = [(list(command), data, {**base, **e}, p, os.getcwd()) for e, p in calls]
        results = ray_map(ray, _replay_task, args, progress=progress)
    return [r if not isinstance(r, Failed) else (1, None, f"{r.why}\n") for r in results]


def _read(path: str | os.PathLike[str], what: str) -> Shipped:
    try:
        return Shipped.read(path)
    except OSError as exc:
        raise ConfigError(f"cannot read the {what} {os.fspath(path)}: {exc.strerror}") from None


def _replay_task(
    command: list[str],
    cassette: Shipped,
    env: dict[str, str],
    plan: Shipped | None,
    cwd: str,
) -> Replayed:
    """One replay on a worker (a Ray task's body)."""
    with tempfile.TemporaryDirectory(prefix="faultdeck-ray-") as folder:
        copy = cassette.write(folder)
        report_path = os.path.join(folder, "report.json")
        full = {**os.environ, **env, "FAULTDECK_CASSETTE": copy, "FAULTDECK_REPORT": report_path}
        if plan is not None:
            full["FAULTDECK_FAULTS"] = plan.write(tempfile.mkdtemp(dir=folder))
        argv, full = started(command, full)
        done = subprocess.run(
            argv,
            env=full,
            cwd=here(cwd),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            check=False,
        )
        text = done.stderr.decode("utf-8", errors="replace")
        tail = "".join(deque(text.splitlines(keepends=True), maxlen=TAIL))
        report = None
        if os.path.exists(report_path):
            raw = Path(report_path).read_bytes()
            report = orjson.loads(raw.replace(_json(copy), _json(cassette.path)))
        return done.returncode, report, cassette.named(tail, copy)


def _json(text: str) -> bytes:
    return orjson.dumps(text)[1:-1]
