"""The deck: every boundary call goes through it to be recorded, replayed or refused.

One call: normalize args → key → decide (answer from the cassette, run live, or miss) →
(live: run, redact, write one line) → log. Replay keeps one FIFO queue per key (per key and
seq when matching is strict), so a lookup costs the same however long the cassette is.
"""

from __future__ import annotations

import atexit
import hashlib
import os
import sys
import threading
import warnings
from collections import Counter, deque
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any, TypeVar, cast

import orjson

from . import _config
from ._canonical import SCHEMA_DEFAULT, make_key
from ._cassette import Durability, Entry, Header, Recording, Writer, load
from ._clock import Clock, SystemClock, VirtualClock
from ._config import MATCHES, MODES, Settings, check_choice
from ._context import current_step
from ._errorcodec import error_from_json, error_to_json
from ._errors import (
    CassetteLocked,
    CassetteWarning,
    ConfigError,
    HarnessChanged,
    ProcessKilled,
    ReplayMiss,
    SideEffectBlocked,
)
from ._faults import CallInfo, Fault, FaultPlan
from ._fields import ABSENT
from ._lockfile import Held, LockFile
from ._miss import build_miss
from ._normalize import IdMap, NormalizeConfig, Normalizer, check_json
from ._redact import Redactor
from ._report import CallRecord, CallRef, Repeat, Report, Source
from ._tools import wrap_tool

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])

_SECRETISH = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH")


@dataclass(slots=True)
class _Plan:
    """What the deck decided for one call."""

    seq: int
    kind: str
    name: str
    key: str
    args: Any
    schema: str
    step: Any
    meta: Any
    entry: Entry | None  # answer from the cassette
    write: bool  # run live and record
    started: float = 0.0
    fault: Fault | None = None


class Deck:
    """Routes boundary calls: records them, replays them, and reports what happened.

    Args:
        cassette: the cassette file.
        mode: ``replay`` (default), ``record``, ``once``, ``append``, ``resume`` or ``off``.
        match: ``keyed`` (default; tolerates reordering) or ``strict`` (seq must agree too).
        clock: where durations are read and waits happen; ``SystemClock()`` by default.
        faults: a ``FaultPlan`` (or a list of faults) injected in every mode: on replay on
            top of the recording, on record in front of the live call (recorded as injected).
        latency: ``"recorded"`` to sleep each replayed call's recorded duration on the clock.
        allow_side_effects: let side-effecting tools run while recording.
        durability: ``flush`` (default) or ``fsync`` each line before the call returns.
        normalize: normalization rules; by default from the project's settings.
        redactor: what masks secrets before writing; by default with the project's extra
            patterns.
        public_env: environment variables whose values may be stored in clear.
        environ: the environment ``env()`` reads; ``os.environ`` by default.
        settings: the project's ``[tool.faultdeck]`` settings; read from the current
            folder's project by default.
        on_harness_change: ``warn`` (default) or ``ignore`` when replaying a cassette
            recorded at another git commit.
        repeats: what a call asked more often than it was recorded gets: ``miss`` (default;
            a retry storm shows as a ``ReplayMiss``) or ``last`` (the last recorded answer
            again, as a rehearsal wants when a fault makes the loop retry a step).
    """

    def __init__(
        self,
        cassette: str | os.PathLike[str],
        *,
        mode: str | None = None,
        match: str | None = None,
        clock: Clock | None = None,
        faults: FaultPlan | Iterable[Fault] | None = None,
        latency: str | None = None,
        allow_side_effects: bool = False,
        durability: Durability | None = None,
        normalize: NormalizeConfig | None = None,
        redactor: Redactor | None = None,
        public_env: tuple[str, ...] = (),
        environ: Mapping[str, str] | None = None,
        settings: Settings | None = None,
        on_harness_change: str = "warn",
        repeats: str = "miss",
    ) -> None:
        self._settings = settings or _config.load_settings()
        self.path = os.fspath(cassette)
        self.mode = check_choice("mode", mode or self._settings.mode or "replay", MODES)
        self.match = check_choice("match", match or self._settings.match, MATCHES)
        self.durability: Durability = cast(
            Durability,
            check_choice(
                "durability", durability or self._settings.durability, _config.DURABILITIES
            ),
        )
        if latency not in (None, "recorded"):
            raise ConfigError(f"latency {latency!r} is not one of: None, 'recorded'")
        check_choice("on_harness_change", on_harness_change, ("warn", "ignore"))
        check_choice("repeats", repeats, ("miss", "last"))
        self._repeat_last = repeats == "last"
        self._last: dict[str, Entry] = {}
        self.clock: Clock = clock or SystemClock()
        self._latency = latency
        self._allow_side_effects = allow_side_effects
        self._normalizer = Normalizer(normalize or self._default_normalize())
        self._redactor = redactor or Redactor(extra_patterns=self._settings.redact_patterns)
        self._public_env = frozenset(public_env) | frozenset(self._settings.public_env)
        self._environ: Mapping[str, str] = os.environ if environ is None else environ
        self._on_harness_change = on_harness_change
        if faults is not None and not isinstance(faults, FaultPlan):
            faults = FaultPlan(faults)
        self.faults: FaultPlan | None = faults
        self._fault_run = faults.start() if faults else None

        self._lock = threading.RLock()
        self._opened = False
        self._closed = False
        self._effective = self.mode
        self._recording: Recording | None = None
        self._queues: dict[Any, deque[Entry]] = {}
        self._remaining = 0
        self._writer: Writer | None = None
        self._file_lock: LockFile | None = None
        self._file_calls = 0
        self._seq = 0
        self._ids = IdMap()
        self._log: list[CallRecord] = []
        self._asked: Counter[str] = Counter()
        self._recorded_counts: Counter[str] = Counter()
        self._served = 0
        self._last_served_seq = 0
        self._order_changes = 0
        self._harness_changed: tuple[str, str] | None = None

    def _default_normalize(self) -> NormalizeConfig:
        settings = self._settings
        base = NormalizeConfig()
        return replace(
            base,
            strip_fields=base.strip_fields | frozenset(settings.strip_headers),
            volatile=frozenset(settings.volatile),
            root=settings.root,
            rules=settings.rules(),
        )

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **kwargs: Any) -> Deck:
        """A deck configured by ``FAULTDECK_*`` variables, opened, and closed at exit.

        Reads ``FAULTDECK_CASSETTE`` (required), ``FAULTDECK_MODE``, ``FAULTDECK_FAULTS`` (a
        fault plan file), ``FAULTDECK_CLOCK`` (``virtual`` for a clock that never waits) and
        ``FAULTDECK_REPORT`` (where to write the JSON report when the process exits). Other
        keyword arguments go to ``Deck``.

        Raises:
            ConfigError: ``FAULTDECK_CASSETTE`` is not set, or a value is not valid.
        """
        env = os.environ if environ is None else environ
        cassette = env.get("FAULTDECK_CASSETTE")
        if not cassette:
            raise ConfigError(
                "FAULTDECK_CASSETTE is not set; set it to the cassette path "
                "(faultdeck record/replay set it for the program they run)"
            )
        plan_path = env.get("FAULTDECK_FAULTS")
        if plan_path and "faults" not in kwargs:
            kwargs["faults"] = FaultPlan.load(plan_path)
        clock_name = env.get("FAULTDECK_CLOCK", "system")
        check_choice("FAULTDECK_CLOCK", clock_name, ("system", "virtual"))
        if clock_name == "virtual" and "clock" not in kwargs:
            kwargs["clock"] = VirtualClock()
        deck = cls(cassette, mode=env.get("FAULTDECK_MODE") or None, environ=env, **kwargs)
        report_path = env.get("FAULTDECK_REPORT")
        deck.open()

        def finish() -> None:
            # An unhandled exception reached the top: the run ended, but not well.
            deck.close("error" if getattr(sys, "last_value", None) is not None else "ok")
            if report_path:
                with open(report_path, "wb") as fh:
                    fh.write(orjson.dumps(deck.report().to_dict(), option=orjson.OPT_INDENT_2))

        atexit.register(finish)
        return deck

    # -- opening and closing -------------------------------------------------------------

    def __enter__(self) -> Deck:
        self.open()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: object, tb: object) -> None:
        if exc_type is None:
            self.close("ok")
        elif issubclass(exc_type, Exception):
            self.close("error")
        else:
            # A simulated kill or an interrupt: leave the cassette without its end line,
            # exactly as a dead process would, so that `resume` can continue it.
            self.abandon()

    def open(self) -> None:
        """Load and lock the cassette as the mode needs. Called by ``with`` or the first call.

        Raises:
            CassetteNotFound: replaying a cassette that does not exist.
            CassetteLocked: another writer holds the cassette.
            CassetteCorrupt, CassetteVersionError: the cassette cannot be read.
        """
        with self._lock:
            if self._opened:
                return
            mode = self.mode
            exists = os.path.exists(self.path)
            if mode == "once":
                mode = "replay" if exists else "record"
            self._effective = mode
            if mode == "replay":
                self._use(load(self.path))
            elif mode == "record":
                self._lock_file()
                try:
                    self._writer = Writer(
                        self.path, header=self._header(), durability=self.durability
                    )
                except BaseException:
                    self._release()
                    raise
            elif mode in ("append", "resume"):
                self._lock_file()
                try:
                    self._open_for_append(exists)
                except BaseException:
                    self._release()
                    raise
            self._opened = True

    def _open_for_append(self, exists: bool) -> None:
        if not exists:
            self._writer = Writer(self.path, header=self._header(), durability=self.durability)
            return
        recording = load(self.path)
        self._use(recording)
        self._file_calls = len(recording.entries)
        keep = recording.valid_bytes if recording.truncated_line else None
        self._writer = Writer(self.path, header=None, keep_bytes=keep, durability=self.durability)

    def _lock_file(self) -> None:
        lock = LockFile(self.path + ".lock")
        try:
            lock.acquire()
        except Held:
            raise CassetteLocked(
                self.path,
                None,
                f"another process is writing it (lock {self.path}.lock is held)",
                "wait for that run to finish; the lock goes away when its process ends",
            ) from None
        self._file_lock = lock

    def _header(self) -> Header:
        env = {
            name: _hash_value(self._environ[name])
            for name in ("LANG", "TZ", "PYTHONHASHSEED")
            if name in self._environ
        }
        return Header(
            match=self.match,
            harness=_config.harness(self._settings.root),
            env=env,
            volatile=tuple(sorted(self._normalizer.config.volatile)),
        )

    def _use(self, recording: Recording) -> None:
        self._recording = recording
        strict = self.match == "strict"
        queues: dict[Any, deque[Entry]] = {}
        for entry in recording.entries:
            qkey: Any = (entry.key, entry.seq) if strict else entry.key
            queue = queues.get(qkey)
            if queue is None:
                queues[qkey] = deque((entry,))
            else:
                queue.append(entry)
        self._queues = queues
        self._remaining = len(recording.entries)
        self._recorded_counts = Counter(e.key for e in recording.entries)
        if recording.interrupted and self._effective != "resume":
            warnings.warn(
                f"{self.path}: the recorded run was interrupted (no end line); "
                "replaying what it recorded, use mode='resume' to finish it",
                CassetteWarning,
                stacklevel=4,
            )
        recorded_sha = recording.header.harness.get("git_sha")
        current_sha = _config.harness(self._settings.root).get("git_sha")
        if recorded_sha and current_sha and recorded_sha != current_sha:
            self._harness_changed = (str(recorded_sha), str(current_sha))
            if self._on_harness_change == "warn":
                warnings.warn(
                    f"{self.path} was recorded at commit {recorded_sha}, replaying at "
                    f"{current_sha}; misses may come from code changes since",
                    HarnessChanged,
                    stacklevel=4,
                )

    def close(self, status: str = "ok") -> None:
        """Write the end line (when writing) and release the cassette."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self._writer is not None:
                self._writer.write({"end": {"calls": self._file_calls, "status": status}})
                self._writer.close()
            self._release()

    def abandon(self) -> None:
        """Release the cassette without an end line, as a killed process would leave it."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self._writer is not None:
                self._writer.close()
            self._release()

    def _release(self) -> None:
        if self._file_lock is not None:
            self._file_lock.release()
            self._file_lock = None

    # -- calls -----------------------------------------------------------------------------

    def call(
        self,
        kind: str,
        name: str,
        args: Any,
        fn: Callable[[], T],
        *,
        schema: str = SCHEMA_DEFAULT,
        side_effect: bool = False,
        dry_run: Callable[[], T] | None = None,
        step: Any = None,
        meta: Any = None,
    ) -> T:
        """Make one boundary call through the deck.

        Args:
            kind: ``model``, ``tool``, ``env`` or ``http``.
            name: the call's name.
            args: the call's arguments, as JSON values; they decide the key.
            fn: runs the call for real; never called in replay.
            schema: the tool's schema version; part of the key.
            side_effect: the call changes the world (sends, writes, pays).
            dry_run: runs instead of ``fn`` for a side-effecting call while recording.
            step: the loop's step label, stored with the call.
            meta: free-form data stored with the call, never part of the key.

        Returns:
            The live result, or the recorded one (a fresh copy) when replaying.

        Raises:
            ReplayMiss: the cassette has no answer for this call and the mode may not run it.
            SideEffectBlocked: a side-effecting call may not run in this mode.
            ArgumentError: args (or a live result) hold a value that is not JSON.
        """
        plan = self._begin(kind, name, args, schema, step, meta)
        if plan.fault is not None:
            self._inject(plan)
            self.clock.advance(plan.fault.delay_ms / 1000)
        if plan.entry is not None:
            if self._latency == "recorded":
                self.clock.advance(plan.entry.ms / 1000)
            return cast(T, self._serve(plan, plan.entry))
        runner = self._runner(plan, fn, side_effect, dry_run)
        started = plan.started  # an injected delay is part of the call's duration
        try:
            value = runner()
        except Exception as exc:
            self._finish_error(plan, exc, started)
            raise
        self._finish(plan, value, started)
        return value

    async def acall(
        self,
        kind: str,
        name: str,
        args: Any,
        fn: Callable[[], Awaitable[T]],
        *,
        schema: str = SCHEMA_DEFAULT,
        side_effect: bool = False,
        dry_run: Callable[[], Awaitable[T]] | None = None,
        step: Any = None,
        meta: Any = None,
    ) -> T:
        """``call`` for coroutines: ``fn`` (and ``dry_run``) return awaitables."""
        plan = self._begin(kind, name, args, schema, step, meta)
        if plan.fault is not None:
            self._inject(plan)
            await self.clock.aadvance(plan.fault.delay_ms / 1000)
        if plan.entry is not None:
            if self._latency == "recorded":
                await self.clock.aadvance(plan.entry.ms / 1000)
            return cast(T, self._serve(plan, plan.entry))
        runner = self._runner(plan, fn, side_effect, dry_run)
        started = plan.started  # an injected delay is part of the call's duration
        try:
            value = await runner()
        except Exception as exc:
            self._finish_error(plan, exc, started)
            raise
        self._finish(plan, value, started)
        return value

    def env(
        self, name: str, default: str | None = None, *, public: bool | None = None
    ) -> str | None:
        """Read an environment variable as a boundary call of kind ``env``.

        The value is stored as a hash unless the variable is public (``public=True``, or
        listed in ``public_env``); names that look like credentials are never public. On
        replay a public value comes from the cassette; a hashed one is read from the
        environment and must hash the same as it did when recorded.

        Raises:
            ReplayMiss: the variable's value differs from the recording.
        """
        is_public = name in self._public_env if public is None else public
        if is_public and any(part in name.upper() for part in _SECRETISH):
            is_public = False
        live = self._environ.get(name)
        stored: str | None = live if is_public or live is None else _hash_value(live)
        plan = self._begin("env", name, {}, SCHEMA_DEFAULT, None, None)
        self._inject(plan)
        if plan.entry is None:
            self._finish(plan, stored, self.clock.now(), stored_value=stored)
            return default if live is None else live
        recorded = self._serve(plan, plan.entry)
        if is_public:
            return default if recorded is None else cast(str, recorded)
        if recorded != stored:
            raise ReplayMiss(
                f"replay miss at seq {plan.seq}: env {name} differs from the recording in "
                f"{self.path} (recorded {recorded or 'unset'}, now {stored or 'unset'}); "
                "set it as it was, or re-record",
                seq=plan.seq,
                kind="env",
                name=name,
                key=plan.key,
                agreed=self._served - 1,
                nearest=None,
                diff=(("value", recorded, stored),),
            )
        return default if live is None else live

    def tool(
        self,
        fn: F | None = None,
        *,
        name: str | None = None,
        schema_version: str = SCHEMA_DEFAULT,
        side_effect: bool = False,
        dry_run: Callable[..., Any] | None = None,
    ) -> Any:
        """Decorate a function (sync or async) so each call is a ``tool`` boundary call.

        The call's args are the function's bound arguments, defaults applied.

        Args:
            name: the tool's name; the function's name by default.
            schema_version: part of the key: changing a tool's shape fails loudly.
            side_effect: the tool changes the world; it never runs in replay.
            dry_run: a stand-in with the same signature that runs instead while recording.
        """

        def wrap(func: F) -> F:
            return wrap_tool(
                self,
                func,
                name=name or func.__name__,
                schema_version=schema_version,
                side_effect=side_effect,
                dry_run=dry_run,
            )

        return wrap(fn) if fn is not None else wrap

    # -- the steps of a call -----------------------------------------------------------------

    def _begin(self, kind: str, name: str, args: Any, schema: str, step: Any, meta: Any) -> _Plan:
        if not self._opened:
            self.open()
        if step is None:
            step = current_step()
        with self._lock:
            if self._closed:
                raise ConfigError(f"deck for {self.path} is closed; open a new Deck")
            self._seq += 1
            seq = self._seq
            mode = self._effective
            started = self.clock.now()
            if mode == "off":
                plan = _Plan(seq, kind, name, "", args, schema, step, meta, None, False, started)
            else:
                norm = self._normalizer.args(kind, name, args, self._ids)
                key = make_key(kind, name, norm, schema)
                plan = _Plan(seq, kind, name, key, norm, schema, step, meta, None, True, started)
            if self._fault_run is not None:
                plan.fault = self._fault_run.pick(CallInfo(seq, kind, name, plan.key))
                if plan.fault is not None and plan.fault.raises:
                    # The call never reaches the recording: a retry gets the recorded answer.
                    plan.write = mode == "record"
                    return plan
            if mode in ("record", "off"):
                plan.write = mode == "record"
                return plan
            self._asked[key] += 1
            queue = self._queues.get((key, seq) if self.match == "strict" else key)
            if queue:
                entry = queue.popleft()
                self._remaining -= 1
                plan.entry = entry
                plan.write = False
                if self._repeat_last:
                    self._last[key] = entry
                return plan
            if self._repeat_last and key in self._last:
                # Asked more often than recorded (a retry after an injected fault): the same
                # request gets the same answer again; report().repeats still counts it.
                plan.entry = self._last[key]
                plan.write = False
                return plan
            if mode == "append" or (mode == "resume" and self._remaining == 0):
                return plan
            raise self._miss(plan)

    def _serve(self, plan: _Plan, entry: Entry) -> Any:
        with self._lock:
            self._served += 1
            if entry.seq < self._last_served_seq:
                self._order_changes += 1
            self._last_served_seq = entry.seq
            if entry.result == "error":
                error = entry.value
                self._note(
                    plan,
                    "replay",
                    entry.seq,
                    entry.ms,
                    error.get("type"),
                    retry_after=_number(error.get("retry_after")),
                    code=error.get("code") if isinstance(error.get("code"), str) else None,
                )
            else:
                self._note(plan, "replay", entry.seq, entry.ms)
                if entry.result == "out":
                    self._ids.learn(self._normalizer.output_ids(entry.value))
        if entry.result == "error":
            raise error_from_json(entry.value)
        value = entry.value
        if type(value) is dict or type(value) is list:
            # Callers may mutate what they get; the queue's copy must stay as recorded.
            return orjson.loads(orjson.dumps(value))
        return value

    def _runner(
        self, plan: _Plan, fn: Callable[[], T], side_effect: bool, dry_run: Callable[[], T] | None
    ) -> Callable[[], T]:
        if not side_effect or self._effective == "off" or self._allow_side_effects:
            return fn
        if dry_run is not None:
            return dry_run
        with self._lock:
            self._note(plan, "blocked")
        raise SideEffectBlocked(
            f"seq {plan.seq}: {plan.kind} {plan.name} has side effects and mode is "
            f"{self.mode!r}, so it would run for real; pass allow_side_effects=True to let it, "
            "or give it a stand-in: @deck.tool(side_effect=True, dry_run=stub)"
        )

    def _finish(
        self, plan: _Plan, value: Any, started: float, *, stored_value: Any = ABSENT
    ) -> None:
        ms = round((self.clock.now() - started) * 1000, 3)
        if not plan.write:
            with self._lock:
                self._note(plan, "live", ms=ms)
            return
        if stored_value is ABSENT:
            check_json(value, f"out of {plan.kind} {plan.name} at seq {plan.seq}")
            stored_value = self._normalizer.scrub_output(value, plan.seq)
        with self._lock:
            self._ids.learn(self._normalizer.output_ids(value))
            self._write(plan, "out", stored_value, ms)
            self._note(plan, "live", ms=ms)

    def _finish_error(self, plan: _Plan, exc: Exception, started: float) -> None:
        ms = round((self.clock.now() - started) * 1000, 3)
        with self._lock:
            if plan.write:
                self._write(plan, "error", error_to_json(exc), ms)
            self._note(
                plan,
                "live",
                ms=ms,
                error=type(exc).__name__,
                retry_after=_number(getattr(exc, "retry_after", None)),
                code=getattr(exc, "code", None)
                if isinstance(getattr(exc, "code", None), str)
                else None,
            )

    def _inject(self, plan: _Plan) -> None:
        """Raise the plan's fault, if it raises, recording it as injected when recording."""
        fault = plan.fault
        if fault is None or not fault.raises:
            return
        exc = fault.error()
        with self._lock:
            if plan.write and not isinstance(exc, ProcessKilled):
                self._write(plan, "error", error_to_json(exc), 0.0, fault=fault.to_json())
            self._note(
                plan,
                "fault",
                error=type(exc).__name__,
                retry_after=_number(getattr(exc, "retry_after", None)),
                code=getattr(exc, "code", None),
            )
        raise exc

    def _note(
        self,
        plan: _Plan,
        source: Source,
        recorded_seq: int | None = None,
        ms: float = 0.0,
        error: str | None = None,
        *,
        retry_after: float | None = None,
        code: str | None = None,
    ) -> None:
        """Log one call; the caller holds the lock."""
        fault = plan.fault.kind if plan.fault is not None else None
        self._log.append(
            CallRecord(
                plan.seq,
                plan.kind,
                plan.name,
                plan.key,
                source,
                recorded_seq,
                ms,
                error,
                fault,
                plan.step,
                plan.started,
                retry_after,
                code,
            )
        )

    def _write(self, plan: _Plan, result: str, value: Any, ms: float, *, fault: Any = None) -> None:
        if self._writer is None:
            return
        redact = self._redactor.redact
        if fault is None and plan.fault is not None:
            fault = plan.fault.to_json()
        step = plan.step if isinstance(plan.step, (str, int, float)) else None
        entry = Entry(
            plan.seq,
            plan.kind,
            plan.name,
            plan.key,
            redact(plan.args),
            result,  # type: ignore[arg-type]
            redact(value),
            ms,
            step,
            plan.schema,
            redact(plan.meta) if plan.meta is not None else None,
            fault,
        )
        self._writer.write(entry.to_json())
        self._file_calls += 1

    # -- misses ----------------------------------------------------------------------------

    def _miss(self, plan: _Plan) -> ReplayMiss:
        self._note(plan, "miss")
        return build_miss(
            cassette=self.path,
            seq=plan.seq,
            kind=plan.kind,
            name=plan.name,
            key=plan.key,
            args=self._redactor.redact(plan.args),
            agreed=self._served,
            recorded=self._recorded_counts.get(plan.key, 0),
            asked=self._asked[plan.key],
            strict=self.match == "strict",
            entries=self._recording.entries if self._recording is not None else (),
            unused={id(e) for queue in self._queues.values() for e in queue},
        )

    # -- the report ------------------------------------------------------------------------

    @property
    def calls(self) -> tuple[CallRecord, ...]:
        """Every call so far, in the order they started."""
        with self._lock:
            return tuple(sorted(self._log, key=lambda c: c.seq))

    def report(self) -> Report:
        """What happened so far: used, unused, repeats, misses, order changes."""
        with self._lock:
            calls = tuple(sorted(self._log, key=lambda c: c.seq))
            unused = tuple(
                sorted(
                    (
                        CallRef(e.seq, e.kind, e.name, e.key, e.line)
                        for q in self._queues.values()
                        for e in q
                    ),
                    key=lambda r: r.line,
                )
            )
            names = {c.key: (c.kind, c.name) for c in calls}
            repeats = tuple(
                Repeat(key, *names[key], self._recorded_counts[key], asked)
                for key, asked in self._asked.items()
                if 0 < self._recorded_counts[key] < asked
            )
            recording = self._recording
            return Report(
                cassette=self.path,
                mode=self._effective,
                entries=len(recording.entries) if recording else 0,
                used=self._served,
                live=sum(1 for c in calls if c.source == "live"),
                unused=unused,
                repeats=repeats,
                misses=tuple(c for c in calls if c.source == "miss"),
                order_changes=self._order_changes,
                faults=sum(1 for c in calls if c.fault is not None),
                waited=self.clock.waited,
                sleeps=self.clock.sleeps if isinstance(self.clock, VirtualClock) else (),
                harness_changed=self._harness_changed,
                interrupted=bool(recording and recording.interrupted),
                calls=calls,
            )


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _hash_value(value: str) -> str:
    return "sha256:" + hashlib.sha256(value.encode()).hexdigest()[:16]
