"""Fault plans: which faults to inject at which calls, and one run's use of a plan.

A ``FaultPlan`` is an ordered tuple of faults and a seed; it is immutable and reused across
runs. Each run calls ``plan.start()`` for a ``FaultRun``, which holds that run's counters
and answers ``pick(call)``.

How a run picks, for each call:

1. A fault *matches* the call when each of ``seq``, ``kind`` and ``name`` that is set agrees
   (``name`` is a case-sensitive glob). A fault whose ``times`` is used up matches nothing
   any more, so its counter stops too.
2. Every matching fault advances its own 1-based counter ``m`` — the losers as well as the
   winner — so ``nth`` and ``every`` count matching calls, not injections.
3. A matching fault *accepts* when ``m > after`` (if set: the onset), ``m - after <=
   burst`` (if set: that many calls in a row from the onset), ``m == nth`` (if set),
   ``m % every == 0`` (if set) and the seeded draw for ``(seed, call.seq)`` is below ``p``
   (if set).
4. The first accepting fault in plan order is injected and its ``times`` count goes up. A
   fault that accepted but lost to an earlier one is not injected and gets no second turn:
   its ``nth`` has gone by.

The draw is the first 8 bytes of ``sha256(f"{seed}:{seq}")`` over ``2**64``, so the same
plan on the same calls injects the same faults in every process, whatever
``PYTHONHASHSEED`` is. Two faults with one seed see the same draw at a call; give them
different seeds for independent coin flips. Plan files are read by ``_planfile``.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Iterable, Sequence
from fnmatch import fnmatchcase
from typing import Any

from .._base.errors import ConfigError
from ._checks import check_value, integer
from ._fault import ANY, CallInfo, Fault, Selector
from ._planfile import load_data, parse_plan


def _unit(seed: int, seq: int) -> float:
    """A draw in [0, 1) fixed by ``(seed, seq)`` and the same in every process."""
    digest = hashlib.sha256(f"{seed}:{seq}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


class FaultPlan:
    """Which faults to inject at which calls; immutable, reusable across runs.

    Args:
        faults: the faults, in priority order: at each call the first that accepts wins.
        seed: the seed of ``random`` selectors that do not set their own.

    Raises:
        ConfigError: an item is not a ``Fault``, or the seed is not an integer.
    """

    __slots__ = ("_faults", "_seed", "_sequence")

    def __init__(self, faults: Iterable[Fault] = (), *, seed: int = 0) -> None:
        items = tuple(faults)
        for i, fault in enumerate(items):
            if not isinstance(fault, Fault):
                raise ConfigError(
                    f"faults[{i}]: expected a Fault (see faultdeck.faults), got {fault!r}"
                )
        self._faults = items
        self._seed: int = check_value(integer, seed, "seed")
        self._sequence: tuple[Fault | None, ...] | None = None

    @property
    def faults(self) -> tuple[Fault, ...]:
        """The plan's faults, in priority order."""
        return self._faults

    @property
    def seed(self) -> int:
        """The seed of ``random`` selectors that do not set their own."""
        return self._seed

    @classmethod
    def sequence(cls, items: Sequence[Fault | None], *, seed: int = 0) -> FaultPlan:
        """A plan that gives item i to the call with seq i+1 and nothing after the list.

        Calls are numbered 1, 2, 3, … in a run, so this consumes one item per call; being
        keyed by seq, it stays the same whatever order concurrent calls reach the plan.

        Args:
            items: one fault, or ``None`` for no fault, per call; items take no selector.
            seed: kept for the plan file; a sequence has no random selectors.

        Raises:
            ConfigError: an item is neither a ``Fault`` nor ``None``, or has a selector.
        """
        steps = tuple(items)
        faults: list[Fault] = []
        for i, item in enumerate(steps):
            if item is None:
                continue
            if not isinstance(item, Fault):
                raise ConfigError(
                    f"sequence[{i}]: expected a Fault or None (no fault), got {item!r}"
                )
            if item.selector != ANY:
                raise ConfigError(
                    f"sequence[{i}]: {item.describe()} has a selector, but in a sequence "
                    f"position {i} is call seq {i + 1}; drop the selector or use FaultPlan()"
                )
            faults.append(item.at(seq=i + 1))
        plan = cls(faults, seed=seed)
        plan._sequence = steps
        return plan

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> FaultPlan:
        """Read a plan from a ``.json`` or ``.toml`` file.

        Raises:
            ConfigError: the file is missing, unreadable, not JSON/TOML, or not a valid plan;
                the message names the file and the field.
        """
        where = os.fspath(path)
        return cls.from_dict(load_data(where), source=where)

    @classmethod
    def from_dict(cls, data: Any, *, source: str = "fault plan") -> FaultPlan:
        """Build a plan from its plan-file form (``{"seed": …, "faults": […]}``).

        Args:
            data: the parsed JSON or TOML.
            source: what to call the plan in error messages, usually its file name.

        Raises:
            ConfigError: naming ``source`` and the field path, and saying what was expected.
        """
        try:
            faults, seed, sequence = parse_plan(data, source=source)
        except RecursionError:
            raise ConfigError(
                f"{source}: nested too deeply for a fault plan; fix the file"
            ) from None
        if sequence:
            return cls.sequence(faults, seed=seed)
        return cls([f for f in faults if f is not None], seed=seed)

    def to_json(self) -> dict[str, Any]:
        """This plan in plan-file syntax; ``FaultPlan.from_dict`` reads it back."""
        if self._sequence is not None:
            steps = [None if f is None else f.to_json() for f in self._sequence]
            return {"seed": self._seed, "sequence": steps}
        return {"seed": self._seed, "faults": [f.to_json() for f in self._faults]}

    def start(self) -> FaultRun:
        """Fresh counters for one run; call once per run."""
        return FaultRun(self)

    def __bool__(self) -> bool:
        return bool(self._faults)

    def __len__(self) -> int:
        return len(self._faults)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FaultPlan):
            return NotImplemented
        return (self._faults, self._seed) == (other._faults, other._seed)

    def __hash__(self) -> int:
        return hash((self._faults, self._seed))

    def __repr__(self) -> str:
        labels = ", ".join(f.describe() for f in self._faults)
        return f"FaultPlan([{labels}], seed={self._seed})"


class FaultRun:
    """One run's use of a plan: the counters behind ``nth``, ``every`` and ``times``.

    Thread-safe: concurrent calls pick under a lock. See the module docstring for how a
    call is matched and which fault wins.

    Args:
        plan: the plan this run follows.
    """

    __slots__ = ("_injected", "_lock", "_plan", "_seen", "_seqs", "_used")

    def __init__(self, plan: FaultPlan) -> None:
        self._plan = plan
        self._seen = [0] * len(plan.faults)
        self._used = [0] * len(plan.faults)
        self._injected: list[tuple[int, Fault]] = []
        self._lock = threading.Lock()
        # When every fault names its seq (a rehearsal's plans do), a call at any other seq
        # meets none of them: ``passes`` says so from this set alone.
        seqs = [fault.selector.seq for fault in plan.faults]
        self._seqs = frozenset(seqs) if seqs and None not in seqs else None

    @property
    def plan(self) -> FaultPlan:
        """The plan this run follows."""
        return self._plan

    def passes(self, seq: int, kind: str, name: str) -> bool:
        """Whether no fault can land on this call: each is used up, or its selector names
        another seq, kind or name. ``pick`` would then give ``None`` and count nothing, so
        a caller may skip it. A run whose ``pick`` brings faults of its own says so here
        too (the server's per-request fault does)."""
        seqs = self._seqs
        if seqs is not None and seq not in seqs:
            return True
        with self._lock:
            return all(self._rules_out(i, seq, kind, name) for i in range(len(self._used)))

    def _rules_out(self, i: int, seq: int, kind: str, name: str) -> bool:
        """Whether fault ``i`` is used up, or its selector names another seq, kind or name:
        it does not even count the call."""
        sel = self._plan.faults[i].selector
        return (
            (sel.times is not None and self._used[i] >= sel.times)
            or (sel.seq is not None and sel.seq != seq)
            or (sel.kind is not None and sel.kind != kind)
            or (sel.name is not None and not fnmatchcase(name, sel.name))
        )

    def pick(self, call: CallInfo) -> Fault | None:
        """The fault to inject at ``call``, or ``None``; counts the call either way.

        The first fault in plan order whose selector accepts the call wins. Every fault that
        matches the call advances its counter, winner or not; a fault whose ``times`` is
        used up matches no more calls.
        """
        seed = self._plan.seed
        with self._lock:
            winner: int | None = None
            for i, fault in enumerate(self._plan.faults):
                if self._rules_out(i, call.seq, call.kind, call.name):
                    continue
                self._seen[i] += 1
                if winner is None and _accepts(fault.selector, self._seen[i], call.seq, seed):
                    winner = i
            if winner is None:
                return None
            self._used[winner] += 1
            chosen = self._plan.faults[winner]
            self._injected.append((call.seq, chosen))
            return chosen

    @property
    def injected(self) -> tuple[tuple[int, Fault], ...]:
        """``(seq, fault)`` for each injection so far, in order."""
        with self._lock:
            return tuple(self._injected)

    def __repr__(self) -> str:
        return f"FaultRun({self._plan!r}, injected={len(self._injected)})"


def _accepts(sel: Selector, matched: int, seq: int, plan_seed: int) -> bool:
    onset = sel.after or 0
    if matched <= onset or (sel.burst is not None and matched - onset > sel.burst):
        return False
    if sel.nth is not None and matched != sel.nth:
        return False
    if sel.every is not None and matched % sel.every:
        return False
    if sel.p is not None:
        return _unit(plan_seed if sel.seed is None else sel.seed, seq) < sel.p
    return True
