"""The router: one deck's run, from opening the cassette to the report, under one lock.

One call: normalize args → key → decide (answer from the cassette, run live, or miss) →
(live: run, redact, write one line) → log. The ``Deck`` is the public face and its
settings; the router holds the run's state and takes each call through these steps. What
it stores, matches and counts sits in its parts: the ``ReplayIndex`` (per-key FIFO
queues), the ``CassetteSession`` (the lock and the writer) and the ``CallPlan`` of each
call (its log record and its cassette line).
"""

from __future__ import annotations

import os
import threading
import warnings
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import orjson

from . import _config
from ._callplan import CallPlan, Logged, as_record, number
from ._canonical import make_key
from ._cassette import Durability, Entry, Recording, load
from ._clock import Clock, VirtualClock
from ._context import current_step
from ._errorcodec import error_from_json, error_to_json
from ._errors import (
    CassetteWarning,
    ConfigError,
    HarnessChanged,
    ProcessKilled,
    ReplayMiss,
    SideEffectBlocked,
)
from ._faults import CallInfo, FaultRun
from ._fields import ABSENT
from ._miss import build_miss
from ._normalize import IdMap, Normalizer, check_json
from ._redact import Redactor
from ._replayindex import ReplayIndex
from ._report import CallRecord, Report, Source
from ._session import CassetteSession, make_header

T = TypeVar("T")


class Router:
    """A deck's run: the cassette as the mode opens it, each call's steps, the log.

    Its state is read and changed under one lock (an ``RLock``), so a deck can be shared
    between threads; a call's steps are separate methods because the call itself (``fn``)
    runs outside the lock.

    Args:
        path: the cassette file.
        mode: the deck's mode, as configured (``once`` is decided on opening).
        match: ``keyed`` or ``strict``.
        durability: ``flush`` or ``fsync`` each written line.
        clock: where durations are read.
        fault_run: this run's fault counters, if faults are injected.
        normalizer: normalizes args before keys are made, and outputs before writing.
        redactor: masks secrets before anything is written.
        allow_side_effects: side-effecting calls may run live.
        repeat_last: a call asked more often than recorded gets the last answer again.
        environ: the environment whose locale and hash seed go into a new header.
        root: the project root, whose git commit is recorded and compared.
        on_harness_change: ``warn`` or ``ignore`` on a cassette from another commit.

    Attributes:
        path: the cassette file.
        opened: whether ``open`` has run.
        index: the replay index, with its counts.
    """

    def __init__(
        self,
        *,
        path: str,
        mode: str,
        match: str,
        durability: Durability,
        clock: Clock,
        fault_run: FaultRun | None,
        normalizer: Normalizer,
        redactor: Redactor,
        allow_side_effects: bool,
        repeat_last: bool,
        environ: Mapping[str, str],
        root: str,
        on_harness_change: str,
    ) -> None:
        self.path = path
        self._lock = threading.RLock()
        # Opening and closing the cassette.
        self._mode = mode
        self._effective = mode  # the mode decided on opening: `once` becomes another
        self.opened = False
        self._closed = False
        self._file = CassetteSession(path, durability=durability)
        self._recording: Recording | None = None
        self._environ = environ
        self._root = root
        self._on_harness_change = on_harness_change
        self._harness_changed: tuple[str, str] | None = None
        # Each call's steps.
        self._match = match
        self.index = ReplayIndex(strict=match == "strict", repeat_last=repeat_last)
        self._clock = clock
        self._fault_run = fault_run
        self._normalizer = normalizer
        self._redactor = redactor
        self._allow_side_effects = allow_side_effects
        self._seq = 0
        self._ids = IdMap()
        self._log: list[Logged] = []

    # -- opening and closing -------------------------------------------------------------

    def open(self) -> None:
        """Load and lock the cassette as the mode needs; see ``Deck.open``."""
        with self._lock:
            if self.opened:
                return
            mode = self._mode
            exists = os.path.exists(self.path)
            if mode == "once":
                mode = "replay" if exists else "record"
            self._effective = mode
            if mode == "replay":
                self._use(load(self.path))
            elif mode in ("record", "append", "resume"):
                self._file.lock()
                try:
                    self._open_for_writing(fresh=mode == "record" or not exists)
                except BaseException:
                    self._file.release()
                    raise
            self.opened = True

    def _open_for_writing(self, *, fresh: bool) -> None:
        if fresh:
            self._file.start(
                make_header(
                    match=self._match,
                    root=self._root,
                    environ=self._environ,
                    volatile=self._normalizer.config.volatile,
                )
            )
            return
        recording = load(self.path)
        self._use(recording)
        self._file.extend(recording)

    def _use(self, recording: Recording) -> None:
        self._recording = recording
        self.index.load(recording.entries)
        # stacklevel 5: past here, open and Deck.open, to whoever called Deck.open's caller.
        if recording.interrupted and self._effective != "resume":
            warnings.warn(
                f"{self.path}: the recorded run was interrupted (no end line); "
                "replaying what it recorded, use mode='resume' to finish it",
                CassetteWarning,
                stacklevel=5,
            )
        recorded_sha = recording.header.harness.get("git_sha")
        current_sha = _config.harness(self._root).get("git_sha")
        if recorded_sha and current_sha and recorded_sha != current_sha:
            self._harness_changed = (str(recorded_sha), str(current_sha))
            if self._on_harness_change == "warn":
                warnings.warn(
                    f"{self.path} was recorded at commit {recorded_sha}, replaying at "
                    f"{current_sha}; misses may come from code changes since",
                    HarnessChanged,
                    stacklevel=5,
                )

    def close(self, status: str) -> None:
        """Write the end line (when writing) and release the cassette; once."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._file.close(status)

    def abandon(self) -> None:
        """Release the cassette without an end line; once."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._file.abandon()

    # -- the steps of a call -----------------------------------------------------------------

    def begin(
        self,
        kind: str,
        name: str,
        args: Any,
        schema: str,
        step: Any,
        meta: Any,
        *,
        shaped: frozenset[str] = frozenset(),
    ) -> CallPlan:
        """Number the call, key it and decide: the recorded answer, a live run, or a miss.

        Raises:
            ConfigError: the deck is closed.
            ReplayMiss: the cassette has no answer and the mode may not run the call.
        """
        if step is None:
            step = current_step()
        with self._lock:
            if self._closed:
                raise ConfigError(f"deck for {self.path} is closed; open a new Deck")
            self._seq += 1
            seq = self._seq
            mode = self._effective
            started = self._clock.now()
            if mode == "off":
                plan = CallPlan(seq, kind, name, "", args, schema, step, meta, None, False, started)
            else:
                norm = self._normalizer.args(kind, name, args, self._ids)
                key = make_key(kind, name, norm, schema)
                plan = CallPlan(seq, kind, name, key, norm, schema, step, meta, None, True, started)
            if self._fault_run is not None:
                plan.fault = self._fault_run.pick(CallInfo(seq, kind, name, plan.key))
                fault = plan.fault
                if fault is not None and fault.raises and fault.kind not in shaped:
                    # The call never reaches the recording: a retry gets the recorded answer.
                    plan.write = mode == "record"
                    return plan
            if mode in ("record", "off"):
                plan.write = mode == "record"
                return plan
            entry = self.index.take(key, seq)
            if entry is not None:
                plan.entry = entry
                plan.write = False
                return plan
            if mode == "append" or (mode == "resume" and self.index.remaining == 0):
                return plan
            raise self._miss(plan)

    def serve(self, plan: CallPlan, entry: Entry) -> Any:
        """Answer the call with ``entry``: a fresh copy of its value, or its error raised."""
        with self._lock:
            self.index.serve(entry)
            if entry.result == "error":
                error = entry.value
                self._log.append(
                    plan.record(
                        "replay",
                        entry.seq,
                        entry.ms,
                        error.get("type"),
                        retry_after=number(error.get("retry_after")),
                        code=error.get("code") if isinstance(error.get("code"), str) else None,
                    )
                )
            else:
                self._log.append(plan.record("replay", entry.seq, entry.ms))
                if entry.result == "out":
                    self._ids.defer(entry.value)
        if entry.result == "error":
            raise error_from_json(entry.value)
        value = entry.value
        if type(value) is dict or type(value) is list:
            # Callers may mutate what they get; the queue's copy must stay as recorded.
            return orjson.loads(orjson.dumps(value))
        return value

    def runner(
        self,
        plan: CallPlan,
        fn: Callable[[], T],
        side_effect: bool,
        dry_run: Callable[[], T] | None,
    ) -> Callable[[], T]:
        """What runs live: ``fn``, or ``dry_run`` for a side effect that may not run.

        Raises:
            SideEffectBlocked: a side effect may not run and has no stand-in.
        """
        if not side_effect or self._effective == "off" or self._allow_side_effects:
            return fn
        if dry_run is not None:
            return dry_run
        with self._lock:
            self._log.append(plan.record("blocked"))
        raise SideEffectBlocked(
            f"seq {plan.seq}: {plan.kind} {plan.name} has side effects and mode is "
            f"{self._mode!r}, so it would run for real; pass allow_side_effects=True to let it, "
            "or give it a stand-in: @deck.tool(side_effect=True, dry_run=stub)"
        )

    def finish(
        self, plan: CallPlan, value: Any, started: float, *, stored_value: Any = ABSENT
    ) -> None:
        """Log a live call that returned ``value``, and record it when recording.

        Args:
            stored_value: what to write instead of ``value`` (already checked and scrubbed).
        """
        ms = round((self._clock.now() - started) * 1000, 3)
        if not plan.write:
            with self._lock:
                self._log.append(plan.record("live", ms=ms))
            return
        if stored_value is ABSENT:
            check_json(value, f"out of {plan.kind} {plan.name} at seq {plan.seq}")
            stored_value = self._normalizer.scrub_output(value, plan.seq)
        with self._lock:
            # The caller holds this very object and may change it: learn its ids now (after
            # any earlier outputs still waiting, to keep their order).
            self._ids.drain(self._normalizer.output_ids)
            self._ids.learn(self._normalizer.output_ids(value))
            self._write(plan, "out", stored_value, ms)
            self._log.append(plan.record("live", ms=ms))

    def finish_error(self, plan: CallPlan, exc: Exception, started: float) -> None:
        """Log a live call that raised ``exc``, and record the error when recording."""
        ms = round((self._clock.now() - started) * 1000, 3)
        with self._lock:
            if plan.write:
                self._write(plan, "error", error_to_json(exc), ms)
            self._log.append(
                plan.record(
                    "live",
                    ms=ms,
                    error=type(exc).__name__,
                    retry_after=number(getattr(exc, "retry_after", None)),
                    code=getattr(exc, "code", None)
                    if isinstance(getattr(exc, "code", None), str)
                    else None,
                )
            )

    def complete(
        self,
        plan: CallPlan,
        result: str,
        stored: Any,
        *,
        ms: float,
        source: Source = "live",
        learn: Any = ABSENT,
        error: str | None = None,
        retry_after: float | None = None,
        code: str | None = None,
        partial: bool = False,
    ) -> None:
        """Log a call whose answer a boundary adapter (the HTTP transport) assembled itself,
        and record it when recording.

        Args:
            result: ``out``, ``error`` or ``stream``.
            stored: what to write (already JSON, scrubbed by ``scrub``).
            source: ``live`` or ``fault`` (a provider-shaped answer stood in for the call).
            learn: an output whose ids later calls may send again.
            error, retry_after, code: how the call failed, as a loop would see it.
            partial: it failed after part of its output had reached the caller.
        """
        with self._lock:
            if learn is not ABSENT:
                self._ids.defer(learn)
            if plan.write:
                self._write(plan, result, stored, ms)
            self._log.append(
                plan.record(
                    source, ms=ms, error=error, retry_after=retry_after, code=code, partial=partial
                )
            )

    def answered(
        self,
        plan: CallPlan,
        entry: Entry,
        *,
        learn: Any = ABSENT,
        error: str | None = None,
        retry_after: float | None = None,
        code: str | None = None,
        partial: bool = False,
    ) -> None:
        """Log a call that a boundary adapter answered from ``entry`` (see ``complete``)."""
        with self._lock:
            self.index.serve(entry)
            if learn is not ABSENT:
                self._ids.defer(learn)
            self._log.append(
                plan.record(
                    "replay",
                    entry.seq,
                    entry.ms,
                    error,
                    retry_after=retry_after,
                    code=code,
                    partial=partial,
                )
            )

    def scrub(self, plan: CallPlan, value: Any) -> Any:
        """``value`` as it is stored: wall-clock values replaced by placeholders."""
        return self._normalizer.scrub_output(value, plan.seq)

    def inject(self, plan: CallPlan) -> None:
        """Raise the plan's fault, if it raises, recording it as injected when recording."""
        fault = plan.fault
        if fault is None or not fault.raises:
            return
        exc = fault.error()
        with self._lock:
            if plan.write and not isinstance(exc, ProcessKilled):
                self._write(plan, "error", error_to_json(exc), 0.0, fault=fault.to_json())
            self._log.append(
                plan.record(
                    "fault",
                    error=type(exc).__name__,
                    retry_after=number(getattr(exc, "retry_after", None)),
                    code=getattr(exc, "code", None),
                )
            )
        raise exc

    def _write(
        self, plan: CallPlan, result: str, value: Any, ms: float, *, fault: Any = None
    ) -> None:
        if self._file.writing:
            self._file.write(plan.to_entry(result, value, ms, self._redactor.redact, fault=fault))

    def _miss(self, plan: CallPlan) -> ReplayMiss:
        self._log.append(plan.record("miss"))
        index = self.index
        return build_miss(
            cassette=self.path,
            seq=plan.seq,
            kind=plan.kind,
            name=plan.name,
            key=plan.key,
            args=self._redactor.redact(plan.args),
            agreed=index.served,
            recorded=index.recorded.get(plan.key, 0),
            asked=index.asked[plan.key],
            strict=self._match == "strict",
            entries=self._recording.entries if self._recording is not None else (),
            unused={id(e) for e in index.unused()},
        )

    # -- the report ------------------------------------------------------------------------

    def calls(self) -> tuple[CallRecord, ...]:
        """Every call so far, in the order they started."""
        with self._lock:
            return tuple(sorted(map(as_record, self._log), key=lambda c: c.seq))

    def report(self) -> Report:
        """What happened so far; see ``Deck.report``."""
        with self._lock:
            calls = tuple(sorted(map(as_record, self._log), key=lambda c: c.seq))
            index = self.index
            recording = self._recording
            clock = self._clock
            return Report(
                cassette=self.path,
                mode=self._effective,
                entries=len(recording.entries) if recording else 0,
                used=index.served,
                live=sum(1 for c in calls if c.source == "live"),
                unused=index.unused_refs(),
                repeats=index.repeats(calls),
                misses=tuple(c for c in calls if c.source == "miss"),
                order_changes=index.order_changes,
                faults=sum(1 for c in calls if c.fault is not None),
                waited=clock.waited,
                sleeps=clock.sleeps if isinstance(clock, VirtualClock) else (),
                harness_changed=self._harness_changed,
                interrupted=bool(recording and recording.interrupted),
                calls=calls,
            )
