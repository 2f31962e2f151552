"""The space a redteam search draws plans from, as Hypothesis strategies.

A fault is aimed at a call of the clean run by its kind, name and ``nth`` (so that it
still lands on that call when an earlier fault makes the loop retry and the seqs shift);
its kind is one that applies there (``FaultKind.applies``); its parameters are drawn by
``param``; its strategy is ``once`` (that call only), a ``burst`` of calls in a row from
there, or ``always`` from there on (``STRATEGIES``). Hypothesis shrinks each draw towards
its first choice, so the order of every choice is the order of "smaller": the earlier
call, the kind listed first in ``KINDS``, no Retry-After before one, a shorter delay, a
lower ``nth``, once before a burst, a shorter burst.

Hypothesis is imported only inside the functions, so this module imports without it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._deck.report import CallRecord
from .._judge.policy import Policy
from ..faults import BAD_TOOL_CALL_HOWS, KINDS, Fault, FaultPlan
from ..faults._checks import REQUIRED

if TYPE_CHECKING:
    from hypothesis.strategies import SearchStrategy

STRATEGIES = ("once", "burst", "always")
"""How a drawn fault lands from the call it is aimed at: there only, on a burst of the
calls like it in a row (``BURSTS``), or on every one from there on."""
BURSTS = (2, 3)
"""The lengths of burst a search draws."""
EXTRA_NTH = 2
"""How many calls past the clean run's count of a call ``nth`` may reach: the retries a
fault earlier in the plan brings."""


@dataclass(frozen=True, slots=True)
class Target:
    """A call of the clean run that faults can aim at, named as a selector names it.

    Attributes:
        kind: the boundary kind (``model``, ``tool``, ``env``, ``http``).
        name: the call's name.
        streamed: whether its answer streamed (stream faults apply only then).
        count: how many times the clean run made it.
        remote: a tool that reaches a service (network faults apply to a tool only then).
    """

    kind: str
    name: str
    streamed: bool
    count: int
    remote: bool = False

    def kinds(self) -> tuple[str, ...]:
        """The fault kinds that can happen at this call and can be drawn, in table order:
        those of the full matrix (a kind with ``rehearse`` rows), so that a budget goes to
        the faults a rehearsal runs (the others are rehearsed by name, in a plan), and not
        the faults that change a tool's result (``injection``), which land only where the
        answer holds what they change: the matrix's row places them there."""
        return tuple(
            k.name
            for k in KINDS.values()
            if k.rehearse
            and k.alter is None
            and k.applies(self.kind, streamed=self.streamed, remote=self.remote)
            and all(d is not REQUIRED or (k.name, p) in VARIED for p, (_, d) in k.params.items())
        )


def targets_of(
    calls: Sequence[CallRecord], remote: Collection[str] = frozenset()
) -> tuple[Target, ...]:
    """Each distinct ``(kind, name)`` of the clean run's calls, in order of its first call
    (a tool in ``remote`` reaches a service)."""
    counts: dict[tuple[str, str], int] = {}
    streamed: dict[tuple[str, str], bool] = {}
    for call in calls:
        key = (call.kind, call.name)
        counts[key] = counts.get(key, 0) + 1
        streamed[key] = streamed.get(key, False) or call.streamed
    found = (
        Target(kind, name, streamed[kind, name], n, name in remote)
        for (kind, name), n in counts.items()
    )
    return tuple(t for t in found if t.kinds())


VARIED = frozenset(
    {
        ("quota", "retry_after"),
        ("quota", "code"),
        ("transient", "status"),
        ("bad_tool_call", "how"),
        ("slow_first_token", "ms"),
        ("latency", "ms"),
        ("stream_cut", "after"),
        ("stream_cut", "how"),
    }
)
"""The ``(kind, parameter)`` pairs a search varies (``param``); the others keep their
defaults."""


def param(kind: str, name: str, policy: Policy) -> SearchStrategy[Any]:
    """The values a search draws for one of ``VARIED``, smallest first, from the policy."""
    from hypothesis import strategies as st

    # Delays reach well past the slow-first-token threshold, so that both sides are drawn;
    # Retry-After values well past what the policy honours.
    delays = st.integers(0, math.ceil(policy.slow_first_token_ms * 3)).map(float)
    table: dict[tuple[str, str], SearchStrategy[Any]] = {
        ("quota", "retry_after"): st.one_of(
            st.none(), st.integers(0, math.ceil(policy.max_retry_after * 2)).map(float)
        ),
        ("quota", "code"): st.sampled_from(("rate_limit_exceeded", "insufficient_quota")),
        ("transient", "status"): st.sampled_from((503, 529, 500, 502)),
        ("bad_tool_call", "how"): st.sampled_from(BAD_TOOL_CALL_HOWS),
        ("slow_first_token", "ms"): delays,
        ("latency", "ms"): delays,
        ("stream_cut", "after"): st.integers(0, 5),
        ("stream_cut", "how"): st.sampled_from(("cut", "error_event")),
    }
    return table[kind, name]


def plans_of(
    targets: Sequence[Target],
    policy: Policy,
    max_faults: int,
    strategies: Sequence[str] = STRATEGIES,
) -> SearchStrategy[Any]:
    """Plans of 1 to ``max_faults`` faults aimed at ``targets``, each landing as one of
    ``strategies`` (of ``STRATEGIES``), in canonical form."""
    from hypothesis import strategies as st

    @st.composite
    def one(draw: Callable[[SearchStrategy[Any]], Any]) -> tuple[int, int, Fault]:
        at = draw(st.integers(0, len(targets) - 1))
        target = targets[at]
        kind = draw(st.sampled_from(target.kinds()))
        params = tuple(
            (name, draw(param(kind, name, policy)))
            for name in KINDS[kind].params
            if (kind, name) in VARIED
        )
        nth = draw(st.integers(1, target.count + EXTRA_NTH))
        fault = Fault(kind, params).on(kind=target.kind, name=target.name)
        strategy = draw(st.sampled_from(tuple(strategies)))
        if strategy == "once":
            fault = fault.on(nth=nth)
        else:
            fault = fault.after(nth - 1) if nth > 1 else fault  # from the first: no onset
            if strategy == "burst":
                fault = fault.burst(draw(st.sampled_from(BURSTS)))
        return at, nth, fault

    return st.lists(one(), min_size=1, max_size=max_faults).map(canonical)


def canonical(drawn: Sequence[tuple[int, int, Fault]]) -> FaultPlan:
    """The plan of the drawn faults, by call and ``nth``; of two aimed at one call the first
    drawn is kept (the second could never land), so equal plans are one plan."""
    kept: dict[tuple[int, int], Fault] = {}
    for at, nth, fault in drawn:
        kept.setdefault((at, nth), fault)
    return FaultPlan([kept[k] for k in sorted(kept)])


def python_fault(fault: Fault) -> str:
    """The fault as the Python that makes it: ``faults.quota(retry_after=2.0).on(…)``."""
    defaults = {name: default for name, (_, default) in KINDS[fault.kind].params.items()}
    args = ", ".join(
        f"{name}={value!r}" for name, value in fault.params if defaults.get(name) != value
    )
    sel = fault.selector
    on = {k: getattr(sel, k) for k in ("kind", "name", "nth") if getattr(sel, k) is not None}
    where = ", ".join(f"{k}={v!r}" for k, v in on.items())
    made = f"faults.{fault.kind}({args}).on({where})"
    for method in ("after", "burst", "every", "times"):
        value = getattr(sel, method)
        if value is not None:
            made += f".{method}({value!r})"
    if sel.p is not None:
        seed = "" if sel.seed is None else f", seed={sel.seed!r}"
        made += f".random(p={sel.p!r}{seed})"
    return made
