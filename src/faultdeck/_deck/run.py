"""The router: one deck's run, from opening the cassette to the report, under one lock.

One call: normalize and redact its args → key → decide (the recorded answer, a live run,
or a miss) → (live: its intent written, it runs, its answer redacted and written) → log.
The ``Deck`` is the public face and its settings; the router holds the run's state and
takes each call through these steps. What it stores, matches and counts sits in its parts:
the ``ReplayIndex`` (per-key FIFO queues), the ``CassetteSession`` (the lock and the
working file) and the ``CallPlan`` of each call (its log record and its cassette line).

Replay looks a call up by the key of its args as they are first (a key is always made of
redacted args, so args that hold no secret have the same key either way); only when that
misses are the args redacted and keyed again. A replay of calls without secrets pays
nothing for redaction.
"""

from __future__ import annotations

import os
import threading
import uuid
import warnings
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import orjson

from .._base import config as _config
from .._base.clock import Clock, VirtualClock
from .._base.context import current_step
from .._base.errors import (
    ArgumentError,
    CallInDoubt,
    CassetteCorrupt,
    CassetteWarning,
    ConfigError,
    HarnessChanged,
    ProcessKilled,
    ReplayMiss,
    SideEffectBlocked,
)
from .._cassette.errorjson import error_from_json, error_to_json, unreached
from .._cassette.lines import RESTORE
from .._cassette.reader import Durability, Entry, Intent, Recording, http_answer_problem, load
from .._cassette.session import CassetteSession, make_header
from .._keys.canonical import KINDS, make_key
from .._keys.fields import ABSENT
from .._keys.normalize import IdMap, Normalizer, check_json
from .._keys.redact import Redactor
from ..faults._fault import CallInfo, Fault, FaultRun
from .call import CallPlan, Logged, as_record, number
from .index import ReplayIndex
from .miss import build_miss
from .report import CallRecord, Report, Source

T = TypeVar("T")

IN_DOUBT_CHOICES = ("raise", "rerun", "skip")
_REPLAYING = frozenset({"replay", "append", "resume"})
_KINDS = frozenset(KINDS)


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
        normalizer: normalizes (and redacts) args before keys are made, and outputs
            before writing.
        redactor: masks secrets before anything is keyed or written.
        allow_side_effects: side-effecting calls may run live.
        repeat_last: a call asked more often than recorded gets the last answer again.
        environ: the environment whose locale and hash seed go into a new header.
        root: the project root, whose git commit is recorded and compared.
        on_harness_change: ``warn`` or ``ignore`` on a cassette from another commit.
        replace: a fresh recording replaces the cassette on a clean close; ``False``
            leaves it in its partial file for the caller to move.

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
        replace: bool = True,
    ) -> None:
        self.path = path
        self._lock = threading.RLock()
        # Opening and closing the cassette.
        self._mode = mode
        self._effective = mode  # the mode decided on opening: `once` becomes another
        self.opened = False
        self._closed = False
        self._file = CassetteSession(path, durability=durability, replace=replace)
        self._recording: Recording | None = None
        self._environ = environ
        self._root = root
        self._on_harness_change = on_harness_change
        self._harness_changed: tuple[str, str] | None = None
        # What a resumed run found in flight, by key, and the last seq the old run began.
        self._in_flight: dict[str, deque[Intent]] = {}
        self._begun = 0
        self._faulted = False  # whether any recorded call carries a fault
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
                    self._open_for_writing(mode, exists)
                except BaseException:
                    self._file.release()
                    raise
            self.opened = True

    def _open_for_writing(self, mode: str, exists: bool) -> None:
        partial = self._file.partial
        if mode == "resume" and os.path.exists(partial):
            # The newest run recorded there and did not replace the cassette: go on with it.
            self._continue(load(partial))
        elif mode != "record" and exists:
            self._continue(load(self.path))
        else:
            header = make_header(
                match=self._match,
                root=self._root,
                environ=self._environ,
                volatile=self._normalizer.config.volatile,
            )
            self._file.start(header, beside=exists)

    def _continue(self, recording: Recording) -> None:
        self._use(recording)
        if self._effective == "resume":
            for intent in recording.in_flight():
                self._in_flight.setdefault(intent.key, deque()).append(intent)
            self._begun = recording.begun
        self._file.extend(recording)

    def _use(self, recording: Recording) -> None:
        self._recording = recording
        self.index.load(recording.entries)
        self._faulted = any(e.fault is not None for e in recording.entries)
        # stacklevel 6: past here, the opener, open and Deck.open, to Deck.open's caller.
        if recording.interrupted and self._effective != "resume":
            warnings.warn(
                f"{recording.path}: the recorded run was interrupted (no end line); "
                "replaying what it recorded, use mode='resume' to finish it",
                CassetteWarning,
                stacklevel=5 if self._effective == "replay" else 7,
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
                    stacklevel=5 if self._effective == "replay" else 7,
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

    # -- deciding a call -----------------------------------------------------------------

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
            ArgumentError: the kind or name is not one a cassette can hold.
            ConfigError: the deck is closed.
            CassetteWriteError: an earlier write failed; the deck no longer records.
            ReplayMiss: the cassette has no answer and the mode may not run the call.
        """
        if kind not in _KINDS:
            raise ArgumentError("kind", f"{kind!r} is not one of: {', '.join(KINDS)}")
        if type(name) is not str or not name:
            raise ArgumentError("name", f"{name!r} is not a non-empty string")
        if step is None:
            step = current_step()
        if type(step) is str:
            step = self._redactor.redact_text(step)
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
                name, norm, key = self._keyed(kind, name, args, schema, seq, mode in _REPLAYING)
                plan = CallPlan(seq, kind, name, key, norm, schema, step, meta, None, True, started)
            fault = None
            if self._fault_run is not None:
                fault = self._fault_run.pick(CallInfo(seq, kind, name, plan.key))
            if mode in ("record", "off"):
                plan.fault = fault
                return plan
            head = self.index.peek(key, seq) if self._faulted else None
            if head is not None and head.fault is not None:
                # Recorded under a fault: the answer already carries it, whatever the plan.
                plan.entry = self.index.take(key, seq)
                plan.fault = self._recorded_fault(head)
                plan.fault_applied = True
                plan.write = False
                return plan
            plan.fault = fault
            if fault is not None and fault.raises and fault.kind not in shaped:
                # The call never reaches the recording: a retry gets the recorded answer.
                plan.write = False
                return plan
            entry = self.index.take(key, seq)
            if entry is not None:
                plan.entry = entry
                plan.write = False
                return plan
            if mode == "append":
                return plan
            if mode == "resume":
                queue = self._in_flight.get(key)
                if queue:
                    # In flight when the old run stopped: it goes live, its intent taken over.
                    plan.resumes = queue.popleft()
                    plan.in_doubt = plan.resumes.side_effect
                    return plan
                if self.index.remaining == 0 or seq > self._begun:
                    return plan
            raise self._miss(plan)

    def _keyed(
        self, kind: str, name: str, args: Any, schema: str, seq: int, replaying: bool
    ) -> tuple[str, Any, str]:
        """The call's name, args and key as stored: redacted, so a secret keys as its mask."""
        normalizer, ids = self._normalizer, self._ids
        if replaying:
            # Args without a secret key the same unredacted; try that (cheap) first.
            ids.tentative()
            norm = normalizer.args(kind, name, args, ids, redact=False)
            key = make_key(kind, name, norm, schema)
            if self.index.has(key, seq) or key in self._in_flight:
                ids.commit()
                return name, norm, key
            ids.rollback()
        name = self._redactor.redact_text(name)
        norm = normalizer.args(kind, name, args, ids)
        return name, norm, make_key(kind, name, norm, schema)

    def _recorded_fault(self, entry: Entry) -> Fault:
        try:
            return Fault.from_json(entry.fault, where=f"seq {entry.seq}: fault")
        except ConfigError as exc:
            where = entry.line or None
            raise CassetteCorrupt(self.path, where, str(exc), RESTORE) from None

    def runner(
        self,
        plan: CallPlan,
        fn: Callable[[], T],
        side_effect: bool,
        dry_run: Callable[[], T] | None,
        *,
        on_in_doubt: str = "raise",
    ) -> Callable[[], T | None]:
        """What runs live: ``fn``, ``dry_run`` for a side effect that may not run, or nothing
        for an in-doubt call resolved by skipping it. Writes the call's intent.

        Raises:
            SideEffectBlocked: a side effect may not run and has no stand-in.
            CallInDoubt: the call was in flight at a kill, may have run, and nothing says
                whether to run it again.
        """
        if plan.in_doubt:
            if on_in_doubt == "skip":
                plan.skipped = True
                self.started(plan, side_effect=True)
                return lambda: None
            if on_in_doubt != "rerun":
                with self._lock:
                    self._log.append(plan.record("blocked"))
                raise self._in_doubt(plan)
        chosen: Callable[[], T | None] = fn
        if side_effect and self._effective != "off" and not self._allow_side_effects:
            if dry_run is None:
                with self._lock:
                    self._log.append(plan.record("blocked"))
                raise SideEffectBlocked(
                    f"seq {plan.seq}: {plan.kind} {plan.name} has side effects and mode is "
                    f"{self._mode!r}, so it would run for real; pass allow_side_effects=True "
                    "to let it, or give it a stand-in: @deck.tool(side_effect=True, "
                    "dry_run=stub)"
                )
            chosen = dry_run
        self.started(plan, side_effect=side_effect)
        return chosen

    def started(self, plan: CallPlan, *, side_effect: bool = False) -> None:
        """The call is about to run live: write its intent, so that after a kill ``resume``
        knows it was in flight; a side-effecting call gets its idempotency key."""
        if side_effect:
            old = plan.resumes.idempotency_key if plan.resumes is not None else None
            plan.idempotency_key = old or uuid.uuid4().hex
        if not plan.write or plan.kind == "env":
            return
        intent: dict[str, Any] = {"begin": plan.seq, "kind": plan.kind, "name": plan.name}
        intent["key"] = plan.key
        if side_effect:
            intent["side_effect"] = True
            intent["idempotency_key"] = plan.idempotency_key
        if plan.resumes is not None:
            intent["resumes"] = plan.resumes.seq
        with self._lock:
            if self._file.writing:
                self._file.intent(intent, sync=side_effect)
                plan.intent = True

    # -- finishing a call ----------------------------------------------------------------

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
        return copy_value(entry.value)

    def stored(self, plan: CallPlan, result: str, value: Any) -> Any:
        """``value`` as the cassette stores it: wall-clock values replaced by placeholders
        (outputs and streams), then redacted (streams on the text their deltas join into)."""
        redactor = self._redactor
        if result == "error":
            return redactor.redact(value)
        scrubbed = self._normalizer.scrub_output(value, plan.seq)
        if result == "stream":
            return redactor.redact_stream(scrubbed)
        return redactor.redact(scrubbed)

    def finish(
        self, plan: CallPlan, value: Any, started: float, *, stored_value: Any = ABSENT
    ) -> None:
        """Log a live call that returned ``value``, and record it when recording.

        Args:
            stored_value: what to write instead of ``value`` (already in stored form).
        """
        ms = round((self._clock.now() - started) * 1000, 3)
        if not plan.write:
            with self._lock:
                self._log.append(plan.record("live", ms=ms))
            return
        if stored_value is ABSENT:
            check_json(value, f"out of {plan.kind} {plan.name} at seq {plan.seq}")
            stored_value = self.stored(plan, "out", value)
            if plan.kind == "http":
                problem = http_answer_problem(stored_value, body=True)
                if problem is not None:
                    raise ArgumentError(
                        f"out of http {plan.name} at seq {plan.seq}",
                        f"{problem}; kind 'http' holds what fd.http.Transport records, "
                        "use kind 'tool' for other calls",
                    )
        with self._lock:
            # The caller holds this very object and may change it: learn its ids now (after
            # any earlier outputs still waiting, to keep their order).
            self._ids.drain(self._normalizer.output_ids)
            self._ids.learn(self._normalizer.output_ids(stored_value))
            self._log.append(plan.record("live", ms=ms))
            self._write(plan, "out", stored_value, ms)

    def finish_error(self, plan: CallPlan, exc: Exception, started: float) -> None:
        """Log a live call that raised ``exc``, and record the error when recording; an
        error that means the world was never reached (no connection) is not recorded."""
        ms = round((self._clock.now() - started) * 1000, 3)
        with self._lock:
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
            if not plan.write:
                return
            if unreached(exc):
                if plan.intent:
                    self._file.intent({"abort": plan.seq, "key": plan.key})
                return
            self._write(plan, "error", self.stored(plan, "error", error_to_json(exc)), ms)

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
            stored: what to write, in stored form (see ``stored``).
            source: ``live`` or ``fault`` (a provider-shaped answer stood in for the call).
            learn: an output (as stored) whose ids later calls may send again.
            error, retry_after, code: how the call failed, as a loop would see it.
            partial: it failed after part of its output had reached the caller.
        """
        with self._lock:
            if learn is not ABSENT:
                self._ids.defer(learn)
            self._log.append(
                plan.record(
                    source, ms=ms, error=error, retry_after=retry_after, code=code, partial=partial
                )
            )
            if plan.write:
                self._write(plan, result, stored, ms)

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

    def inject(self, plan: CallPlan) -> None:
        """Raise the plan's fault, if it raises, recording it as injected when recording."""
        fault = plan.fault
        if fault is None or not fault.raises:
            return
        exc = fault.error()
        with self._lock:
            self._log.append(
                plan.record(
                    "fault",
                    error=type(exc).__name__,
                    retry_after=number(getattr(exc, "retry_after", None)),
                    code=getattr(exc, "code", None),
                )
            )
            if plan.write and not isinstance(exc, ProcessKilled):
                self._write(plan, "error", error_to_json(exc), 0.0, fault=fault.to_json())
        raise exc

    def _write(
        self, plan: CallPlan, result: str, value: Any, ms: float, *, fault: Any = None
    ) -> None:
        if self._file.writing:
            entry = plan.to_entry(result, value, ms, self._redactor.redact, fault=fault)
            self._file.write(entry, in_doubt="skipped" if plan.skipped else None)

    def _miss(self, plan: CallPlan) -> ReplayMiss:
        self._log.append(plan.record("miss"))
        index = self.index
        return build_miss(
            cassette=self.path,
            seq=plan.seq,
            kind=plan.kind,
            name=plan.name,
            key=plan.key,
            args=plan.args,
            schema=plan.schema,
            agreed=index.served,
            recorded=index.recorded.get(plan.key, 0),
            asked=index.asked[plan.key],
            strict=self._match == "strict",
            entries=self._recording.entries if self._recording is not None else (),
            unused={id(e) for e in index.unused()},
        )

    def _in_doubt(self, plan: CallPlan) -> CallInDoubt:
        intent = plan.resumes
        line = intent.line if intent is not None else 0
        where = self._recording.path if self._recording is not None else self.path
        return CallInDoubt(
            f"resume at seq {plan.seq}: {plan.kind} {plan.name} (key {plan.key}) was in flight "
            f"when the run stopped (its intent is at {where}:{line}, no answer was written), "
            "so it may have run. It has side effects, so it is not run again unless told: "
            "declare @deck.tool(side_effect=True, on_in_doubt='rerun') or 'skip' (deck.call "
            "takes on_in_doubt= too), or give the tool an idempotency key "
            "(@deck.tool(idempotency_key='name')); or check the world and re-record",
            seq=plan.seq,
            kind=plan.kind,
            name=plan.name,
            key=plan.key,
            line=line,
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
                kept=self._file.kept,
            )


def copy_value(value: Any) -> Any:
    """A fresh copy of a recorded value: callers may mutate what they get, the queue's copy
    must stay as recorded."""
    if type(value) is dict or type(value) is list:
        return orjson.loads(orjson.dumps(value))
    return value
