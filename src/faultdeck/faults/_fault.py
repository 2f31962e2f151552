"""A fault and where it may land: a kind from the table, its parameters, a ``Selector``.

``Fault`` and ``Selector`` are values: immutable, checked when made, each selector method
returning a new fault. What a kind does lives in ``_kinds.KINDS``; which call a fault lands
on, in a run, is ``_plan``'s.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from .._base.errors import ConfigError
from .._base.words import ordinal
from ._checks import SELECTOR_CHECKS, check_params, check_value, hint
from ._kinds import FAULT_KINDS, KINDS, FaultKind


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
        after: the onset: the first ``after`` matching calls pass untouched.
        burst: only the ``burst`` matching calls in a row from the onset (the first, or the
            one after ``after``).

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
    after: int | None = None
    burst: int | None = None

    def __post_init__(self) -> None:
        for name, check in SELECTOR_CHECKS.items():
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, check_value(check, value, f"selector {name}"))
        if self.seed is not None and self.p is None:
            raise ConfigError("selector seed: only means something with p; set p too")

    def landing(self) -> str:
        """Which of the calls it matches it lands on, for people: ``call 2``, ``calls 3 to
        4``, ``every call from 3``, ``every 5th call``, ``calls drawn at p=0.1``."""
        onset = (self.after or 0) + 1
        if self.nth is not None:
            return f"call {self.nth}"
        if self.burst is not None:
            end = onset + self.burst - 1
            shown = f"call {onset}" if end == onset else f"calls {onset} to {end}"
        elif self.every is not None:
            shown = f"every {ordinal(self.every)} call" if self.every > 1 else "every call"
        else:
            shown = "every call"
        if self.burst is None and onset > 1:
            shown += f" from {onset}"
        return shown if self.p is None else f"{shown}, drawn at p={self.p:g}"


ANY = Selector()
"""The selector of a fault that may land on any call."""


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
    selector: Selector = ANY

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
        params = check_params(KINDS[kind].params, given, lambda n: f"{kind}: {n}", kind)
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

    def always(self) -> Fault:
        """Return this fault landing on every matching call: no ``nth``, ``every``,
        ``random`` or ``burst`` left (``at``, ``on``'s kind and name, ``after`` and
        ``times`` are kept)."""
        return self._with(nth=None, every=None, p=None, seed=None, burst=None)

    def burst(self, n: int) -> Fault:
        """Return this fault landing on ``n`` matching calls in a row, from the onset (the
        first matching call, or the one ``after(k)`` names), then on none."""
        return self._with(burst=n)

    def after(self, k: int) -> Fault:
        """Return this fault starting after ``k`` matching calls: those pass untouched, and
        the strategy (``always``, ``burst``, ``random``) starts at the next."""
        return self._with(after=k)

    def param(self, name: str, default: Any = None) -> Any:
        """The value of parameter ``name`` (defaults filled in), else ``default``."""
        for key, value in self.params:
            if key == name:
                return value
        return default

    @property
    def spec(self) -> FaultKind:
        """What this fault's kind does (its entry in ``KINDS``)."""
        return KINDS[self.kind]

    @property
    def values(self) -> dict[str, Any]:
        """The parameters as a dict, defaults filled in."""
        return dict(self.params)

    @property
    def raises(self) -> bool:
        """Whether the call fails (rather than being slowed down, or answering with a
        changed result)."""
        return KINDS[self.kind].error is not None

    @property
    def delay_ms(self) -> float:
        """Milliseconds added before the answer (``latency``) or its first token, else 0."""
        return float(self.param("ms", 0.0)) if KINDS[self.kind].delays else 0.0

    def error(self) -> BaseException:
        """The exception an in-process call raises for this fault.

        Raises:
            ValueError: the fault only delays (``latency``, ``slow_first_token``) or changes
                the result (``tool_result``, ``injection``).
        """
        make = KINDS[self.kind].error
        if make is None:
            does = "only delays the call" if KINDS[self.kind].delays else "changes its result"
            raise ValueError(f"a {self.kind} fault {does}; it has no error to raise")
        return make(self.values)

    def describe(self) -> str:
        """A short label such as ``quota(retry_after=2)``, ``transient(503)`` or ``timeout``."""
        return KINDS[self.kind].label(self.values)

    def to_json(self) -> dict[str, Any]:
        """This fault in plan-file syntax: ``{"fault": kind, **params, selector fields}``."""
        out: dict[str, Any] = {"fault": self.kind, **dict(self.params)}
        sel = self.selector
        if sel.seq is not None:
            out["at"] = sel.seq
        on = {
            k: getattr(sel, k)
            for k in ("kind", "name", "nth", "after")
            if getattr(sel, k) is not None
        }
        if on:
            out["on"] = on
        if sel.every is not None:
            out["every"] = sel.every
        if sel.p is not None:
            out["random"] = {"p": sel.p} if sel.seed is None else {"p": sel.p, "seed": sel.seed}
        if sel.times is not None:
            out["times"] = sel.times
        if sel.burst is not None:
            out["burst"] = sel.burst
        return out
