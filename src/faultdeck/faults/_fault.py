"""Fault kinds, selectors and plans: which injected failure lands on which call.

A ``Fault`` is a kind (``quota``, ``timeout``, …), its parameters and a ``Selector`` that
says which calls it may land on. A ``FaultPlan`` is an ordered tuple of faults and a seed;
it is immutable and reused across runs. Each run calls ``plan.start()`` for a ``FaultRun``,
which holds that run's counters and answers ``pick(call)``.

How a run picks, for each call:

1. A fault *matches* the call when each of ``seq``, ``kind`` and ``name`` that is set agrees
   (``name`` is a case-sensitive glob). A fault whose ``times`` is used up matches nothing
   any more, so its counter stops too.
2. Every matching fault advances its own 1-based counter ``m`` — the losers as well as the
   winner — so ``nth`` and ``every`` count matching calls, not injections.
3. A matching fault *accepts* when ``m == nth`` (if set), ``m % every == 0`` (if set) and
   the seeded draw for ``(seed, call.seq)`` is below ``p`` (if set).
4. The first accepting fault in plan order is injected and its ``times`` count goes up. A
   fault that accepted but lost to an earlier one is not injected and gets no second turn:
   its ``nth`` has gone by.

The draw is the first 8 bytes of ``sha256(f"{seed}:{seq}")`` over ``2**64``, so the same
plan on the same calls injects the same faults in every process, whatever
``PYTHONHASHSEED`` is. Two faults with one seed see the same draw at a call; give them
different seeds for independent coin flips.

Plan files live in ``_faultplan``: ``FaultPlan.load``, ``FaultPlan.from_dict`` and
``Fault.to_json`` delegate to it. The value checks live in ``_faultchecks``, shared by the
constructors here (and so the ``faultdeck.faults`` factories) and the plan-file parser.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

from .._base.errors import BadToolCall, ConfigError, ProcessKilled, QuotaExhausted, TransientError

# FAULT_KINDS and BAD_TOOL_CALL_HOWS are re-exported: faultdeck.faults takes them from here.
from ._checks import BAD_TOOL_CALL_HOWS as BAD_TOOL_CALL_HOWS
from ._checks import FAULT_KINDS as FAULT_KINDS
from ._checks import SELECTOR_CHECKS, check_params, check_value, hint, integer

_DELAYS = ("latency", "slow_first_token")


def _num(value: float) -> str:
    # "2" reads better than "2.0" in messages and labels; keep the fraction when there is one.
    return str(int(value)) if float(value).is_integer() else str(value)


def _unit(seed: int, seq: int) -> float:
    """A draw in [0, 1) fixed by ``(seed, seq)`` and the same in every process."""
    digest = hashlib.sha256(f"{seed}:{seq}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


@dataclass(frozen=True, slots=True)
class CallInfo:
    """What a fault selector sees of a call.

    Args:
        seq: the call's 1-based position in the run.
        kind: ``model``, ``tool``, ``env`` or ``http``.
        name: the call's name, such as ``read_file``.
        key: the call's key.
    """

    seq: int
    kind: str
    name: str
    key: str


@dataclass(frozen=True, slots=True)
class Selector:
    """Which calls a fault may land on; the fields that are set must all agree.

    With every field ``None`` the fault may land on every call.

    Args:
        seq: only the call with this 1-based seq.
        kind: only calls of this kind (``model``, ``tool``, ``env``, ``http``).
        name: only calls whose name matches this case-sensitive glob, like ``read_*``.
        nth: only the nth call (1-based) among those matching ``seq``/``kind``/``name``.
        every: only every nth matching call (n, 2n, 3n, …).
        p: only with this probability, drawn from ``(seed, call seq)``.
        seed: the seed for ``p``; the plan's seed when ``None``.
        times: at most this many injections per run.

    Raises:
        ConfigError: a field has a value it cannot take, or ``seed`` is set without ``p``.
    """

    seq: int | None = None
    kind: str | None = None
    name: str | None = None
    nth: int | None = None
    every: int | None = None
    p: float | None = None
    seed: int | None = None
    times: int | None = None

    def __post_init__(self) -> None:
        for name, check in SELECTOR_CHECKS.items():
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, check_value(check, value, f"selector {name}"))
        if self.seed is not None and self.p is None:
            raise ConfigError("selector seed: only means something with p; set p too")


_ANY = Selector()


@dataclass(frozen=True, slots=True)
class Fault:
    """One failure to inject: a kind, its parameters and where it may land.

    Build faults with the factories in ``faultdeck.faults`` (``faults.quota(retry_after=2)``)
    and narrow them with the chainable selector methods, each of which returns a new fault.

    Args:
        kind: one of ``FAULT_KINDS``.
        params: ``(name, value)`` pairs; missing defaults are filled in and the pairs sorted.
        selector: which calls the fault may land on; every call by default.

    Raises:
        ConfigError: an unknown kind or parameter, or a parameter value it cannot take.
    """

    kind: str
    params: tuple[tuple[str, Any], ...] = ()
    selector: Selector = _ANY

    def __post_init__(self) -> None:
        if self.kind not in FAULT_KINDS:
            raise ConfigError(
                f"unknown fault {self.kind!r}; known: {', '.join(FAULT_KINDS)}"
                f"{hint(self.kind, FAULT_KINDS)}"
            )
        if not isinstance(self.selector, Selector):
            raise ConfigError(f"{self.kind}: selector: expected a Selector, got {self.selector!r}")
        given: dict[str, Any] = {}
        for pair in self.params:
            if not (isinstance(pair, tuple) and len(pair) == 2 and isinstance(pair[0], str)):
                raise ConfigError(
                    f"{self.kind}: params: expected (name, value) pairs, got {pair!r}"
                )
            name, value = pair
            if name in given:
                raise ConfigError(f"{self.kind}: parameter {name!r} given twice")
            given[name] = value
        kind = self.kind
        params = check_params(kind, given, lambda n: f"{kind}: {n}", kind)
        object.__setattr__(self, "params", params)

    def _with(self, **fields: Any) -> Fault:
        return Fault(self.kind, self.params, dataclasses.replace(self.selector, **fields))

    def at(self, *, seq: int) -> Fault:
        """Return this fault landing only on the call with this 1-based seq."""
        return self._with(seq=seq)

    def on(
        self, *, kind: str | None = None, name: str | None = None, nth: int | None = None
    ) -> Fault:
        """Return this fault narrowed to some calls; the arguments left ``None`` are kept.

        Args:
            kind: only calls of this kind (``model``, ``tool``, ``env``, ``http``).
            name: only calls whose name matches this glob, like ``read_*``.
            nth: only the nth such call (1-based).
        """
        given = {"kind": kind, "name": name, "nth": nth}
        return self._with(**{k: v for k, v in given.items() if v is not None})

    def every(self, n: int) -> Fault:
        """Return this fault landing on every nth matching call (n, 2n, 3n, …)."""
        return self._with(every=n)

    def random(self, *, p: float, seed: int | None = None) -> Fault:
        """Return this fault landing with probability ``p``, drawn from (seed, call seq).

        Args:
            p: the probability, from 0 to 1.
            seed: the seed of the draw; the plan's seed when ``None``.
        """
        return self._with(p=p, seed=seed)

    def times(self, n: int) -> Fault:
        """Return this fault injected at most ``n`` times per run."""
        return self._with(times=n)

    def param(self, name: str, default: Any = None) -> Any:
        """The value of parameter ``name`` (defaults filled in), else ``default``."""
        for key, value in self.params:
            if key == name:
                return value
        return default

    @property
    def raises(self) -> bool:
        """Whether the call fails (rather than only being slowed down)."""
        return self.kind not in _DELAYS

    @property
    def delay_ms(self) -> float:
        """Milliseconds added before the answer (``latency``) or its first token, else 0."""
        return float(self.param("ms", 0.0)) if self.kind in _DELAYS else 0.0

    def error(self) -> BaseException:
        """The exception an in-process call raises for this fault.

        Raises:
            ValueError: the fault only delays (``latency``, ``slow_first_token``).
        """
        kind = self.kind
        if kind == "quota":
            code: str = self.param("code")
            retry_after: float | None = self.param("retry_after")
            wait = "no Retry-After" if retry_after is None else f"retry after {_num(retry_after)}s"
            return QuotaExhausted(
                f"injected quota fault: {code}, {wait}",
                status=429,
                retry_after=retry_after,
                code=code,
            )
        if kind == "timeout":
            return TransientError("injected timeout: no answer in time", code="timeout")
        if kind == "transient":
            status: int = self.param("status")
            error_code = "overloaded" if status == 529 else "server_error"
            return TransientError(
                f"injected transient fault: HTTP {status} ({error_code})",
                status=status,
                code=error_code,
            )
        if kind == "bad_tool_call":
            how: str = self.param("how")
            return BadToolCall(f"injected bad tool call ({how}): {_HOW_TEXT[how]}", code=how)
        if kind == "reset":
            return TransientError(
                "injected connection reset: the peer closed the connection",
                code="connection_reset",
            )
        if kind == "stream_cut":
            after: int = self.param("after")
            return TransientError(
                f"injected stream cut: the stream ended after {after} event(s)", code="stream_cut"
            )
        if kind == "malformed_stream":
            return TransientError(
                "injected malformed stream: an event could not be parsed", code="malformed_stream"
            )
        if kind == "crash":
            return ProcessKilled("injected crash: the process dies at this call")
        raise ValueError(f"a {kind} fault only delays the call; it has no error to raise")

    @classmethod
    def from_json(cls, obj: Any, *, where: str = "fault") -> Fault:
        """Read a fault from plan-file syntax (``{"fault": "quota", "retry_after": 2}``).

        Raises:
            ConfigError: naming ``where`` and the field.
        """
        from ._planfile import fault_from_json  # here, not on top: _faultplan imports this

        return fault_from_json(obj, where)

    def to_json(self) -> dict[str, Any]:
        """This fault in plan-file syntax: ``{"fault": kind, **params, selector fields}``."""
        from ._planfile import fault_to_json  # here, not on top: _faultplan imports this module

        return fault_to_json(self)

    def describe(self) -> str:
        """A short label such as ``quota(retry_after=2)``, ``transient(503)`` or ``timeout``."""
        kind = self.kind
        if kind == "quota":
            parts = []
            if self.param("code") != "rate_limit_exceeded":
                parts.append(str(self.param("code")))
            if self.param("retry_after") is not None:
                parts.append(f"retry_after={_num(self.param('retry_after'))}")
            return f"quota({', '.join(parts)})" if parts else "quota"
        if kind == "transient":
            return f"transient({self.param('status')})"
        if kind == "bad_tool_call":
            return f"bad_tool_call({self.param('how')})"
        if kind in _DELAYS:
            return f"{kind}({_num(self.param('ms'))}ms)"
        if kind == "stream_cut":
            return f"stream_cut(after={self.param('after')})"
        return kind


_HOW_TEXT = {
    "missing_field": "a required argument is missing",
    "wrong_type": "an argument has the wrong type",
    "unparseable": "the arguments are not valid JSON",
    "unknown_tool": "the named tool does not exist",
}


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
            if item.selector != _ANY:
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
        from ._planfile import load_plan  # here, not on top: _faultplan imports this module

        return load_plan(cls, path)

    @classmethod
    def from_dict(cls, data: Any, *, source: str = "fault plan") -> FaultPlan:
        """Build a plan from its plan-file form (``{"seed": …, "faults": […]}``).

        Args:
            data: the parsed JSON or TOML.
            source: what to call the plan in error messages, usually its file name.

        Raises:
            ConfigError: naming ``source`` and the field path, and saying what was expected.
        """
        from ._planfile import plan_from_dict  # here, not on top: _faultplan imports this module

        return plan_from_dict(cls, data, source=source)

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

    __slots__ = ("_injected", "_lock", "_plan", "_seen", "_used")

    def __init__(self, plan: FaultPlan) -> None:
        self._plan = plan
        self._seen = [0] * len(plan.faults)
        self._used = [0] * len(plan.faults)
        self._injected: list[tuple[int, Fault]] = []
        self._lock = threading.Lock()

    @property
    def plan(self) -> FaultPlan:
        """The plan this run follows."""
        return self._plan

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
                sel = fault.selector
                if (
                    (sel.times is not None and self._used[i] >= sel.times)
                    or (sel.seq is not None and sel.seq != call.seq)
                    or (sel.kind is not None and sel.kind != call.kind)
                    or (sel.name is not None and not fnmatchcase(call.name, sel.name))
                ):
                    continue
                self._seen[i] += 1
                if winner is None and _accepts(sel, self._seen[i], call.seq, seed):
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
    if sel.nth is not None and matched != sel.nth:
        return False
    if sel.every is not None and matched % sel.every:
        return False
    if sel.p is not None:
        return _unit(plan_seed if sel.seed is None else sel.seed, seq) < sel.p
    return True
