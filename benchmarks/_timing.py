"""Interleaved timing: the contenders of one comparison take turns in one process.

    warm-up: each contender runs once, untimed (a slow peer may skip it)
    repetition r: A, B, C … each prepared (untimed), run (timed, gc off), torn down (untimed);
        primed: each timed run right after an untimed run of its own (one without a warm-up
        has none)
    the objects alive when it starts are frozen (gc.freeze) until it ends
    result: each contender's samples; comparisons use their medians, and can be made run
        for run too (``paired``)

Taking turns spreads drift (frequency scaling, a neighbour's load, a warming cache) over
every contender alike instead of loading it onto whichever ran last. Pairing the runs of
one round cancels it: on a shared machine whose speed moves by half within a minute, two
runs tens of milliseconds apart ran at about the same speed, while the medians of two sides
each take in the whole drift.
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass

Body = Callable[[], object]
"""The timed section: one run of the loop being measured."""


@dataclass(frozen=True, slots=True)
class Contender:
    """One side of a comparison.

    Args:
        name: how the results name it.
        prepare: a context manager whose value is the timed body; entering it (opening a
            cassette, starting a client) and leaving it (closing them) are not timed.
        reps: at most this many repetitions, for a peer too slow to run as often as the
            others, spread evenly over the rounds; ``None`` runs every repetition.
        warmup: run it once, untimed, before the repetitions.
        per_run: how many operations one of its runs does, when not the comparison's.
    """

    name: str
    prepare: Callable[[], AbstractContextManager[Body]]
    reps: int | None = None
    warmup: bool = True
    per_run: int | None = None


@dataclass(frozen=True, slots=True)
class Timing:
    """A contender's timed runs.

    Attributes:
        name: the contender.
        samples_ns: each repetition's duration, in nanoseconds, in the order they ran.
        per_run: how many operations (calls, replays) one run does.
    """

    name: str
    samples_ns: tuple[int, ...]
    per_run: int

    @property
    def median_ns(self) -> float:
        """The median duration of one run."""
        return float(statistics.median(self.samples_ns))

    @property
    def per_op_us(self) -> float:
        """The median run's duration per operation, in microseconds."""
        return self.median_ns / self.per_run / 1000

    @property
    def per_second(self) -> float:
        """Operations per second at the median run's duration."""
        return self.per_run / (self.median_ns / 1e9)

    @property
    def reps(self) -> int:
        """How many timed runs there were."""
        return len(self.samples_ns)


def paired(ours: Timing, theirs: Timing) -> float:
    """``ours`` per operation over ``theirs``: the median of the ratios of the runs each
    round made (the k-th run of each), when both ran in the same rounds of one
    ``interleave``; otherwise (a different number of runs) the ratio of their medians.

    Two sides of one ``interleave`` with as many runs ran in the same rounds: every round,
    or the same rounds spread by the same count.
    """
    a, b = ours.samples_ns, theirs.samples_ns
    scale = theirs.per_run / ours.per_run
    if len(a) != len(b) or not a:
        return ours.median_ns / theirs.median_ns * scale
    return float(statistics.median(x / y for x, y in zip(a, b, strict=True))) * scale


def interleave(
    contenders: Sequence[Contender], *, reps: int, per_run: int, primed: bool = False
) -> dict[str, Timing]:
    """Time each contender ``reps`` times, taking turns: A, B, A, B …; medians reported.

    Args:
        contenders: the sides of the comparison, in the order each repetition runs them.
        reps: repetitions per contender (a contender's own ``reps`` may lower it: its runs
            are then spread evenly over the rounds).
        per_run: how many operations one run does, for per-operation figures (a
            contender's own ``per_run`` overrides it).
        primed: each timed run of a contender that has a warm-up comes right after an
            untimed run of its own, so that none is timed cold from what ran before it. A
            side that patches a class while it runs (a peer patching ``httpx.Client.send``)
            makes Python drop what it had specialized for that class's code, and the side
            that runs next pays to learn it again.
    """
    # What is alive now (cassettes loaded, peers' state) stays alive: frozen, the collection
    # before each timed run looks only at what came since, instead of walking it all again
    # (a tenth of a second per run). The timed sections run with the collector off anyway.
    gc.collect()
    gc.freeze()
    try:
        for contender in contenders:
            if contender.warmup:
                _run(contender)
        samples: dict[str, list[int]] = {c.name: [] for c in contenders}
        rounds = {c.name: _rounds(c.reps, reps) for c in contenders}
        for rep in range(reps):
            for contender in contenders:
                if rep in rounds[contender.name]:
                    if primed and contender.warmup:
                        with contender.prepare() as body:
                            body()
                    samples[contender.name].append(_run(contender))
    finally:
        gc.unfreeze()
    return {
        c.name: Timing(c.name, tuple(samples[c.name]), c.per_run or per_run) for c in contenders
    }


def _rounds(own: int | None, reps: int) -> range | set[int]:
    """The rounds a contender runs in: all of them, or its own number spread evenly over
    them (so that the others' runs surround its runs in time, not follow them)."""
    if own is None or own >= reps:
        return range(reps)
    return {i * reps // own for i in range(own)}


def _run(contender: Contender) -> int:
    with contender.prepare() as body:
        gc.collect()
        gc.disable()
        try:
            started = time.perf_counter_ns()
            body()
            elapsed = time.perf_counter_ns() - started
        finally:
            gc.enable()
    return elapsed
