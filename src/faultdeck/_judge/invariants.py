"""Properties every run must hold, checked on a loop's outcomes and the deck's call log.

Checks return ``Violation``s (empty when all hold) and never raise: the pytest helpers in
``fd.testing`` and the command line turn them into failures. They work on any loop's
outcomes, not only ``run_steps``'s, so users can judge their own loops.

1. call_budget: transport calls per op stay within what the policy allows for the
   failures that op met.
2. replay_determinism: the same cassette, policy and faults give the same outcomes.
3. partial_work: a quota stop returns every step completed before it.
4. bounded_waiting: the run waits no longer in all than the policy's maximum.
5. no_early_retry: no call repeats before a received Retry-After has passed, and a
   non-retryable quota error is never retried.
6. committed_streams: once part of a stream reached the loop, the call is not retried and
   the partial output is kept.
7. injection_contained: after a tool result that carried injected text (an ``injection``
   fault), no side-effect tool runs unless the policy allows it (``allow_after_injection``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields
from typing import Any

from .._base.clock import Clock, VirtualClock
from .._base.errors import QuotaExhausted
from .._base.words import plural
from .._deck.report import CallRecord
from .policy import NON_RETRYABLE_QUOTA, Outcome, Policy
from .sdk_errors import SDK_ERRORS

INVARIANTS = (
    "call_budget",
    "replay_determinism",
    "partial_work",
    "bounded_waiting",
    "no_early_retry",
    "committed_streams",
    "injection_contained",
)
# A call log names errors by type: faultdeck's own, and the SDKs' quota errors (the table).
_QUOTA_ERRORS = frozenset(
    {"QuotaExhausted", *(e.name for e in SDK_ERRORS if e.failure is QuotaExhausted)}
)
_SCHEMA_ERRORS = frozenset({"BadToolCall"})
_TRANSPORT = frozenset({"live", "replay", "fault"})
_INJECTION = "injection"  # the fault kind whose result carries injected text
_EPSILON = 1e-6


@dataclass(frozen=True, slots=True)
class Violation:
    """An invariant that did not hold, and why.

    Attributes:
        invariant: one of ``INVARIANTS``.
        op: the op it concerns, or ``None`` for the whole run.
        bound: what the policy allows.
        observed: what happened.
    """

    invariant: str
    op: Any
    bound: str
    observed: str

    def __str__(self) -> str:
        where = f"op {self.op!r}: " if self.op is not None else ""
        return f"{self.invariant}: {where}{self.observed} (allowed: {self.bound})"


def check(
    outcomes: Sequence[Outcome],
    *,
    policy: Policy,
    deck: Any = None,
    calls: Iterable[CallRecord] | None = None,
    clock: Clock | None = None,
    replays: Sequence[Sequence[Outcome]] = (),
    ignore: Iterable[str] = ("elapsed_ms",),
) -> list[Violation]:
    """Check the seven invariants; return the violations (empty when all hold).

    Args:
        outcomes: what the loop returned.
        policy: the policy the loop claims to follow.
        deck: the deck the run went through (its call log is used); or pass ``calls``.
        calls: the call log, when there is no deck.
        clock: the run's clock, for the waiting bound.
        replays: outcome lists of further runs of the same cassette, policy and faults.
        ignore: outcome fields that may differ between replays.
    """
    log = tuple(deck.calls if deck is not None else (calls or ()))
    found: list[Violation] = []
    found += _call_budget(outcomes, log, policy)
    found += _determinism(outcomes, replays, frozenset(ignore))
    found += _partial_work(outcomes, log)
    if clock is not None:
        found += _bounded_waiting(clock, policy)
    found += _no_early_retry(log)
    found += _committed_streams(outcomes, log)
    found += _injection_contained(log, policy)
    return found


def _by_step(log: Sequence[CallRecord]) -> dict[Any, list[CallRecord]]:
    groups: dict[Any, list[CallRecord]] = {}
    for call in sorted(log, key=lambda c: c.seq):
        if call.source in _TRANSPORT:
            groups.setdefault(call.step, []).append(call)
    return groups


def _is_quota(call: CallRecord) -> bool:
    return call.error in _QUOTA_ERRORS


def _is_transient(call: CallRecord) -> bool:
    return call.error is not None and not _is_quota(call) and call.error not in _SCHEMA_ERRORS


def _call_budget(
    outcomes: Sequence[Outcome], log: Sequence[CallRecord], policy: Policy
) -> list[Violation]:
    found = []
    groups = _by_step(log)
    unlabelled = groups.pop(None, [])
    for step, calls in groups.items():
        allowed, why = _allowance(calls, 1, policy)
        if len(calls) > allowed:
            found.append(
                Violation(
                    "call_budget",
                    step,
                    f"{allowed} ({why})",
                    made(calls),
                )
            )
    if unlabelled:
        ops = max(1, len(outcomes))
        allowed, why = _allowance(unlabelled, ops, policy)
        if len(unlabelled) > allowed:
            found.append(
                Violation(
                    "call_budget",
                    None,
                    f"{allowed} for {ops} ops ({why})",
                    made(unlabelled),
                )
            )
    return found


def made(calls: Sequence[CallRecord]) -> str:
    """The calls, by kind and seq: ``3 model calls at seq 1, 2, 3``; ``2 model calls at seq
    1, 3 and 1 tool call at seq 2``."""
    seqs: dict[str, list[str]] = {}
    for call in calls:
        seqs.setdefault(call.kind, []).append(str(call.seq))
    return " and ".join(
        f"{plural(len(at), f'{kind} call')} at seq {', '.join(at)}" for kind, at in seqs.items()
    )


def _allowance(calls: Sequence[CallRecord], ops: int, policy: Policy) -> tuple[int, str]:
    """How many transport calls the policy allows ``ops`` ops that met these failures.

    An attempt of an op costs as many calls as it has distinct requests (a retry re-runs
    the whole step); the policy grants further attempts for transient errors (up to
    ``max_attempts``), one after a Retry-After within bounds, and one repair after a
    schema-invalid tool call.
    """
    per_attempt = len({c.key for c in calls})
    transients = sum(1 for c in calls if _is_transient(c))
    retryable_quota = sum(
        1
        for c in calls
        if _is_quota(c)
        and c.code not in NON_RETRYABLE_QUOTA
        and c.retry_after is not None
        and c.retry_after <= policy.max_retry_after
    )
    schema = sum(1 for c in calls if c.error in _SCHEMA_ERRORS)
    retries = min(transients, ops * (policy.max_attempts - 1))
    quota = min(retryable_quota, ops)
    repairs = min(schema, ops)
    attempts = ops + retries + quota + repairs
    parts = [f"{ops} attempt{'s' if ops != 1 else ''}"]
    if retries:
        parts.append(f"{retries} retr{'ies' if retries != 1 else 'y'} after transient errors")
    if quota:
        parts.append(f"{quota} after Retry-After")
    if repairs:
        parts.append(f"{repairs} repair{'s' if repairs != 1 else ''}")
    why = f"{per_attempt} distinct call{'s' if per_attempt != 1 else ''} x ({' + '.join(parts)})"
    return per_attempt * attempts, why


def _comparable(outcome: Outcome, ignore: frozenset[str]) -> tuple[Any, ...]:
    return tuple(getattr(outcome, f.name) for f in fields(outcome) if f.name not in ignore)


def _determinism(
    outcomes: Sequence[Outcome], replays: Sequence[Sequence[Outcome]], ignore: frozenset[str]
) -> list[Violation]:
    first = [_comparable(o, ignore) for o in outcomes]
    found = []
    for number, other in enumerate(replays, start=2):
        again = [_comparable(o, ignore) for o in other]
        if again == first:
            continue
        index = next(
            (i for i, (x, y) in enumerate(zip(first, again, strict=False)) if x != y),
            min(len(first), len(again)),
        )
        op = outcomes[index].op if index < len(outcomes) else other[index].op
        a = _describe(outcomes[index]) if index < len(outcomes) else "no outcome"
        b = _describe(other[index]) if index < len(other) else "no outcome"
        found.append(
            Violation(
                "replay_determinism",
                op,
                "identical outcomes on every replay",
                f"run {number} of {len(replays) + 1} differs from run 1: {b} instead of {a}",
            )
        )
    return found


def _describe(outcome: Outcome) -> str:
    detail = f" ({outcome.reason})" if outcome.reason else ""
    return f"{outcome.status}{detail} after {plural(outcome.attempts, 'attempt')}"


def _partial_work(outcomes: Sequence[Outcome], log: Sequence[CallRecord]) -> list[Violation]:
    stopped = any(o.status == "stopped" for o in outcomes)
    quota_seen = any(_is_quota(c) for c in log)
    if not (stopped or quota_seen):
        return []
    returned = {_key(o.op) for o in outcomes if o.status in ("ok", "degraded")}
    found = []
    for step, calls in _by_step(log).items():
        if step is None or calls[-1].error is not None:
            continue
        if _key(step) not in returned:
            found.append(
                Violation(
                    "partial_work",
                    step,
                    "every step completed before a quota stop is returned",
                    f"completed at seq {calls[-1].seq}, but the outcomes do not return it",
                )
            )
    return found


def _key(op: Any) -> Any:
    try:
        hash(op)
    except TypeError:
        return repr(op)
    return op


def _bounded_waiting(clock: Clock, policy: Policy) -> list[Violation]:
    found = []
    if clock.waited > policy.max_total_wait + _EPSILON:
        found.append(
            Violation(
                "bounded_waiting",
                None,
                f"{policy.max_total_wait:g}s in all (max_total_wait)",
                f"waited {clock.waited:g}s",
            )
        )
    if isinstance(clock, VirtualClock):
        longest = max(policy.max_delay, policy.max_retry_after)
        for seconds in clock.sleeps:
            if seconds > longest + _EPSILON:
                found.append(
                    Violation(
                        "bounded_waiting",
                        None,
                        f"{longest:g}s per wait (max_delay, max_retry_after)",
                        f"one wait of {seconds:g}s",
                    )
                )
                break
    return found


def _no_early_retry(log: Sequence[CallRecord]) -> list[Violation]:
    ordered = sorted(log, key=lambda c: c.seq)
    found = []
    for i, call in enumerate(ordered):
        if not _is_quota(call):
            continue
        later = [c for c in ordered[i + 1 :] if c.key == call.key and c.source in _TRANSPORT]
        if not later:
            continue
        retry = later[0]
        if call.code in NON_RETRYABLE_QUOTA:
            found.append(
                Violation(
                    "no_early_retry",
                    call.step,
                    f"no retry after a non-retryable quota error ({call.code})",
                    f"seq {call.seq} {call.kind} {call.name} retried at seq {retry.seq}",
                )
            )
        elif call.retry_after is not None:
            gap = retry.started - call.started
            if gap + _EPSILON < call.retry_after:
                found.append(
                    Violation(
                        "no_early_retry",
                        call.step,
                        f"a retry no sooner than Retry-After {call.retry_after:g}s",
                        f"seq {call.seq} retried at seq {retry.seq} after {gap:g}s",
                    )
                )
    return found


def _committed_streams(outcomes: Sequence[Outcome], log: Sequence[CallRecord]) -> list[Violation]:
    ordered = sorted(log, key=lambda c: c.seq)
    found = []
    for i, call in enumerate(ordered):
        if not call.partial:
            continue
        retry = next(
            (c for c in ordered[i + 1 :] if c.key == call.key and c.source in _TRANSPORT), None
        )
        if retry is not None:
            found.append(
                Violation(
                    "committed_streams",
                    call.step,
                    "no retry once a stream's first event reached the loop",
                    f"seq {call.seq} {call.name} cut after its first event, retried at "
                    f"seq {retry.seq}",
                )
            )
        for outcome in outcomes:
            if (
                call.step is not None
                and _key(outcome.op) == _key(call.step)
                and (outcome.value is None)
            ):
                found.append(
                    Violation(
                        "committed_streams",
                        call.step,
                        "the partial output is kept",
                        "the outcome carries no value",
                    )
                )
    return found


def _injection_contained(log: Sequence[CallRecord], policy: Policy) -> list[Violation]:
    """After the first call whose result carried injected text, every side-effect call that
    ran (or was sent: ``_TRANSPORT``) is a violation, unless the policy allows its tool; a
    side effect the deck blocked never ran."""
    injections = [c for c in log if c.fault == _INJECTION]
    if not injections:
        return []
    injected = min(injections, key=lambda c: c.seq)
    allowed = policy.allow_after_injection
    bound = (
        f"after an injected tool result, only {', '.join(map(repr, allowed))} of the "
        "side-effect tools (allow_after_injection)"
        if allowed
        else "no side-effect tool after an injected tool result (allow_after_injection)"
    )
    return [
        Violation(
            "injection_contained",
            call.step,
            bound,
            f"injection at seq {injected.seq} ({injected.kind} {injected.name}), then "
            f"side-effect tool {call.name!r} at seq {call.seq}",
        )
        for call in sorted(log, key=lambda c: c.seq)
        if call.seq > injected.seq
        and call.side_effect
        and call.source in _TRANSPORT
        and call.name not in allowed
    ]
