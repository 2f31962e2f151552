"""The degradation policy and a loop that follows it.

    failure                      policy                                        logged
    quota, Retry-After present   one retry after the stated delay, then stop;  retry_after
                                 stop at once if the delay exceeds
                                 max_retry_after or the wait budget left
    quota, no header             stop at once                                  reason=quota
    quota, non-retryable code    stop at once (insufficient_quota, spend caps) reason
    timeout / transient          up to max_attempts, exponential backoff with  attempts
                                 seeded jitter, then degrade
    schema-invalid tool call     one repair call, then degrade                 reason=schema
    slow first token             no retry; halve concurrency (AIMD)            elapsed_ms

``run_steps`` is that table as a loop. A failure is faultdeck's own (``QuotaExhausted``,
``TransientError``, ``BadToolCall``) or an SDK's or httpx's exception that ``sdk_errors``
reads as one (``openai.RateLimitError`` is a quota error, with its ``retry-after-ms`` and
its code); anything else is a bug and leaves the loop. Time comes from the clock passed
in, randomness from the policy's seed: the same faults on the same cassette always give
the same outcomes.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal

from .._base.clock import Clock
from .._base.context import enter_step, leave_step
from .._base.errors import BadToolCall, BoundaryError, ConfigError, QuotaExhausted, TransientError
from .sdk_errors import Failure, classify_error

Status = Literal["ok", "degraded", "stopped"]

NON_RETRYABLE_QUOTA = frozenset(
    {
        "insufficient_quota",
        "billing_hard_limit_reached",
        "spend_cap_reached",
        "billing_error",
        "enforced_spend_limit_reached",
        "contract_spend_limit_reached",
        "linked_organization_spend_limit_reached",
        "ServiceQuotaExceededException",
    }
)
"""Quota error codes that no wait fixes: retrying them is always wrong."""


@dataclass(frozen=True, slots=True)
class Policy:
    """How a loop degrades. Frozen: one policy describes every run it judges.

    Args:
        max_attempts: attempts per op for timeouts and transient errors (1 = no retry).
        base_delay: the first backoff, in seconds; it doubles per attempt.
        max_delay: no single backoff is longer.
        max_total_wait: the run never waits longer in all (backoffs and Retry-After).
        max_retry_after: a Retry-After longer than this stops the run instead.
        slow_first_token_ms: a call slower than this halves the concurrency limit.
        concurrency: the concurrency limit the run starts with.
        max_concurrency: the additive increase never goes above this.
        seed: seeds the backoff jitter.
        allow_after_injection: the side-effect tools the loop may still call after a tool
            result carried injected text (``injection_contained``); none by default. Any
            iterable of names (one name alone too), kept as a sorted tuple.
    """

    max_attempts: int = 3
    base_delay: float = 0.5
    max_delay: float = 8.0
    max_total_wait: float = 30.0
    max_retry_after: float = 60.0
    slow_first_token_ms: float = 2000.0
    concurrency: int = 8
    max_concurrency: int = 64
    seed: int = 0
    allow_after_injection: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        names = _tool_names(self.allow_after_injection)
        object.__setattr__(self, "allow_after_injection", names)
        if self.max_attempts < 1:
            raise ConfigError(f"Policy.max_attempts must be >= 1, got {self.max_attempts}")
        for name in ("base_delay", "max_delay", "max_total_wait", "max_retry_after"):
            if getattr(self, name) < 0:
                raise ConfigError(f"Policy.{name} must be >= 0, got {getattr(self, name)}")
        if not 1 <= self.concurrency <= self.max_concurrency:
            raise ConfigError("Policy.concurrency must be between 1 and max_concurrency")

    def backoff(self, failures: int, rng: random.Random) -> float:
        """The wait after the ``failures``-th failed attempt: exponential with equal jitter,
        so it is never zero and never above ``max_delay``."""
        cap = min(self.max_delay, self.base_delay * 2 ** (failures - 1))
        return rng.uniform(cap / 2, cap)


def _tool_names(given: Any) -> tuple[str, ...]:
    """``Policy.allow_after_injection`` as a sorted tuple of names, from any iterable of
    them (or one name).

    Raises:
        ConfigError: one of them is no name (a non-empty string).
    """
    try:
        names = (given,) if isinstance(given, str) else tuple(given)
    except TypeError:  # not iterable: refused below
        names = (given,)
    if not all(isinstance(name, str) and name for name in names):
        raise ConfigError(
            f"Policy.allow_after_injection must be tool names (non-empty strings), got {given!r}"
        )
    return tuple(sorted(set(names)))


@dataclass(frozen=True, slots=True, init=False)
class Outcome:
    """One op's result as the loop saw it.

    Attributes:
        op: the op.
        status: ``ok``, ``degraded`` (gave up on this op, the run goes on) or ``stopped``
            (the run ends here).
        value: what the op returned (the repaired value after a repair; ``None`` when
            degraded or stopped).
        reason: why it is not plainly ok: ``quota``, ``quota_non_retryable``, ``transient``,
            ``schema``, ``repaired``, ``slow_first_token``, ``wait_budget``.
        attempts: how many times the op's step ran (the repair call not included).
        retry_after: the Retry-After the op received, as the header says it (``"2"``).
        elapsed_ms: how long the last attempt took on the clock.
        concurrency: the concurrency limit after this op (AIMD).
    """

    op: Any
    status: Status
    value: Any = None
    reason: str | None = None
    attempts: int = 1
    retry_after: str | None = None
    elapsed_ms: float = 0.0
    concurrency: int | None = None

    def __new__(
        cls,
        op: Any,
        status: Status,
        value: Any = None,
        reason: str | None = None,
        attempts: int = 1,
        retry_after: str | None = None,
        elapsed_ms: float = 0.0,
        concurrency: int | None = None,
    ) -> Outcome:
        # The loop makes one per op. A frozen class sets each field through
        # object.__setattr__, a call each: its fields are set instead on an object of a
        # class with the same slots that lets them be set plainly, which then becomes an
        # Outcome (the layouts are the same), frozen from then on. A third of the cost.
        made = _Fields(op, status, value, reason, attempts, retry_after, elapsed_ms, concurrency)
        made.__class__ = cls  # type: ignore[assignment]
        return made  # type: ignore[return-value]

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), tuple(getattr(self, name) for name in self.__slots__))


class _Fields:
    """An ``Outcome``'s slots, settable: what ``Outcome.__new__`` fills in."""

    __slots__ = Outcome.__slots__

    def __init__(
        self,
        op: Any,
        status: Status,
        value: Any,
        reason: str | None,
        attempts: int,
        retry_after: str | None,
        elapsed_ms: float,
        concurrency: int | None,
    ) -> None:
        self.op = op
        self.status = status
        self.value = value
        self.reason = reason
        self.attempts = attempts
        self.retry_after = retry_after
        self.elapsed_ms = elapsed_ms
        self.concurrency = concurrency


def run_steps(
    step: Callable[[Any], Any],
    ops: Iterable[Any],
    policy: Policy,
    *,
    clock: Clock,
    repair: Callable[[Any, BadToolCall], Any] | None = None,
) -> list[Outcome]:
    """Run ``step(op)`` for each op, degrading as ``policy`` says; return the outcomes.

    Each op runs inside ``fd.step(op)``, so the deck labels its calls and the invariants can
    count them. The run stops at a quota stop and returns every outcome so far: completed
    work survives.

    Args:
        step: does one op through the deck and returns its value.
        ops: the ops, in order.
        policy: the degradation policy.
        clock: where waits happen and time is read.
        repair: ``repair(op, error)`` makes the one stricter repair call after a
            schema-invalid tool call; raising ``BadToolCall`` again means degraded.
    """
    run = _Runner(step, policy, clock, repair).run
    outcomes: list[Outcome] = []
    for op in ops:
        token = enter_step(op)  # ``with fd.step(op)``, without its object
        try:
            outcome = run(op)
        finally:
            leave_step(token)
        outcomes.append(outcome)
        if outcome.status == "stopped":
            break
    return outcomes


class _Runner:
    def __init__(
        self,
        step: Callable[[Any], Any],
        policy: Policy,
        clock: Clock,
        repair: Callable[[Any, BadToolCall], Any] | None,
    ) -> None:
        self.step = step
        self.policy = policy
        self.clock = clock
        self.repair = repair
        self._rng: random.Random | None = None
        self.waited = 0.0
        self.concurrency = policy.concurrency

    @property
    def rng(self) -> random.Random:
        """The jitter's generator, seeded when the first backoff needs it: most runs never
        back off, and seeding costs more than a step that replays."""
        if self._rng is None:
            self._rng = random.Random(self.policy.seed)
        return self._rng

    def wait(self, seconds: float) -> None:
        self.waited += seconds
        self.clock.sleep(seconds)

    def run(self, op: Any) -> Outcome:
        attempt: _Attempts | None = None  # made at the first failure: most ops have none
        count = 0
        while True:
            count += 1
            started = self.clock.now()
            try:
                value = self.step(op)
            except Exception as exc:
                # faultdeck's failures as they are; an SDK's or httpx's as the policy reads them.
                failure = classify_error(exc)
                if failure is None:
                    raise
                if attempt is None:
                    attempt = _Attempts()
                attempt.count = count
                outcome = self.failed(op, failure, attempt)
                # The failure's traceback holds this frame, and the frames it was called from:
                # kept here, it would make all of them garbage only the cyclic collector frees.
                del failure
                if outcome is None:
                    continue
                return outcome
            retry_after = attempt.retry_after if attempt is not None else None
            return self.finished(op, value, count, retry_after, started)

    def failed(self, op: Any, exc: Failure, attempt: _Attempts) -> Outcome | None:
        """The outcome of an attempt that failed, or ``None`` to try again (after a wait)."""
        policy = self.policy
        left = policy.max_total_wait - self.waited
        if isinstance(exc, QuotaExhausted):
            after = exc.retry_after
            attempt.retry_after = _header(after) if after is not None else None
            if exc.code in NON_RETRYABLE_QUOTA:
                return self.stop(op, "quota_non_retryable", attempt.count, attempt.retry_after)
            if (
                after is None
                or attempt.quota_retried
                or after > policy.max_retry_after
                or after > left
            ):
                return self.stop(op, "quota", attempt.count, attempt.retry_after)
            attempt.quota_retried = True
            self.wait(after)
            return None
        if isinstance(exc, TransientError):
            attempt.transient += 1
            if attempt.count >= policy.max_attempts or left <= 0:
                reason = "transient" if attempt.count >= policy.max_attempts else "wait_budget"
                return Outcome(op, "degraded", None, reason, attempt.count, attempt.retry_after)
            self.wait(min(policy.backoff(attempt.transient, self.rng), left))
            return None
        return self.repaired(op, exc, attempt.count, attempt.retry_after)

    def stop(self, op: Any, reason: str, attempts: int, retry_after: str | None) -> Outcome:
        return Outcome(op, "stopped", None, reason, attempts, retry_after, 0.0, self.concurrency)

    def repaired(
        self, op: Any, exc: BadToolCall, attempts: int, retry_after: str | None
    ) -> Outcome:
        if self.repair is None:
            return Outcome(op, "degraded", None, "schema", attempts, retry_after)
        try:
            value = self.repair(op, exc)
        except BoundaryError:
            return Outcome(op, "degraded", None, "schema", attempts, retry_after)
        return Outcome(op, "ok", value, "repaired", attempts, retry_after, 0.0, self.concurrency)

    def finished(
        self, op: Any, value: Any, attempts: int, retry_after: str | None, started: float
    ) -> Outcome:
        took = self.clock.now() - started
        elapsed_ms = round(took * 1000, 3) if took else 0.0
        reason = None
        if elapsed_ms > self.policy.slow_first_token_ms:
            # Multiplicative decrease; never retried: the answer did arrive.
            self.concurrency = max(1, self.concurrency // 2)
            reason = "slow_first_token"
        elif self.concurrency < self.policy.max_concurrency:
            self.concurrency += 1
        # Outcome(…) as Outcome.__new__ makes it, a frame less: once per op.
        made = _Fields(op, "ok", value, reason, attempts, retry_after, elapsed_ms, self.concurrency)
        made.__class__ = Outcome  # type: ignore[assignment]
        return made  # type: ignore[return-value]


@dataclass(slots=True)
class _Attempts:
    """One op's attempts so far: how many, the transient failures among them, the
    Retry-After received, whether the one retry after it was used."""

    count: int = 0
    transient: int = 0
    retry_after: str | None = None
    quota_retried: bool = False


def _header(seconds: float) -> str:
    """A Retry-After value as the header writes it: ``2``, ``1.5``."""
    return str(int(seconds)) if float(seconds).is_integer() else repr(float(seconds))
