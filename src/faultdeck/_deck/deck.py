"""The deck: every boundary call goes through it to be recorded, replayed or refused.

One call: normalize args → key → decide (answer from the cassette, run live, or miss) →
(live: run, redact, write one line) → log. Replay keeps one FIFO queue per key (per key and
seq when matching is strict), so a lookup costs the same however long the cassette is.

``Deck`` is the public face: its settings and the calls a program makes. The run's state
and the steps of each call live in ``_router``, below it.
"""

from __future__ import annotations

import atexit
import os
import sys
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import replace
from typing import Any, TypeVar, cast

import orjson

from .._base import config as _config
from .._base.clock import Clock, SystemClock, VirtualClock
from .._base.config import MATCHES, MODES, Settings, check_choice
from .._base.context import idempotency
from .._base.errors import ConfigError, ReplayMiss
from .._cassette.reader import Durability
from .._cassette.session import hash_value
from .._keys.canonical import SCHEMA_DEFAULT
from .._keys.normalize import NormalizeConfig, Normalizer
from .._keys.redact import Redactor
from ..faults._fault import Fault, FaultPlan
from .call import CallPlan
from .report import CallRecord, Report
from .run import IN_DOUBT_CHOICES, Router
from .tools import wrap_tool

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])

_SECRETISH = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH")


class Deck:
    """Routes boundary calls: records them, replays them, and reports what happened.

    Args:
        cassette: the cassette file.
        mode: ``replay`` (default), ``record``, ``once``, ``append``, ``resume`` or ``off``.
        match: ``keyed`` (default; tolerates reordering) or ``strict`` (seq must agree too).
        clock: where durations are read and waits happen; ``SystemClock()`` by default.
        faults: a ``FaultPlan``, a list of faults, or a plan file (JSON or TOML), injected in
            every mode: on replay on top of the recording, on record in front of the live call
            (recorded as injected).
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
        replace: a fresh recording over an existing cassette is written beside it and
            replaces it when the run closes cleanly; ``False`` leaves it finished beside
            it, for a caller that decides later (``faultdeck record``, by exit status).
    """

    def __init__(
        self,
        cassette: str | os.PathLike[str],
        *,
        mode: str | None = None,
        match: str | None = None,
        clock: Clock | None = None,
        faults: FaultPlan | Iterable[Fault] | str | os.PathLike[str] | None = None,
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
        replace: bool = True,
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
        self.clock: Clock = clock or SystemClock()
        self._latency = latency
        redactor = redactor or Redactor(extra_patterns=self._settings.redact_patterns)
        self.redactor = redactor
        normalizer = Normalizer(normalize or self._default_normalize(), redactor)
        self._public_env = frozenset(public_env) | frozenset(self._settings.public_env)
        self._environ: Mapping[str, str] = os.environ if environ is None else environ
        if isinstance(faults, (str, os.PathLike)):
            faults = FaultPlan.load(faults)
        elif faults is not None and not isinstance(faults, FaultPlan):
            faults = FaultPlan(faults)
        self.faults: FaultPlan | None = faults
        # The run's state, and its one lock, live in the router.
        self._router = Router(
            path=self.path,
            mode=self.mode,
            match=self.match,
            durability=self.durability,
            clock=self.clock,
            fault_run=faults.start() if faults else None,
            normalizer=normalizer,
            redactor=redactor,
            allow_side_effects=allow_side_effects,
            repeat_last=repeats == "last",
            environ=self._environ,
            root=self._settings.root,
            on_harness_change=on_harness_change,
            replace=replace,
        )

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
        ``FAULTDECK_REPORT`` (where to write the JSON report when the process exits) and
        ``FAULTDECK_DEFER_REPLACE`` (``1``: a fresh recording stays beside the cassette when
        the run ends, for ``faultdeck record`` to move once the program exits 0). Other
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
        if env.get("FAULTDECK_DEFER_REPLACE") == "1":
            kwargs.setdefault("replace", False)
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
        self._router.open()

    def close(self, status: str = "ok") -> None:
        """Write the end line (when writing) and release the cassette."""
        self._router.close(status)

    def abandon(self) -> None:
        """Release the cassette without an end line, as a killed process would leave it."""
        self._router.abandon()

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
        on_in_doubt: str = "raise",
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
            on_in_doubt: what ``resume`` does with a side-effecting call that was in flight
                when the run was killed (it may have run): ``raise`` (default;
                ``CallInDoubt``), ``rerun`` (run it again) or ``skip`` (return ``None``).
            step: the loop's step label, stored with the call.
            meta: free-form data stored with the call, never part of the key.

        Returns:
            The live result, or the recorded one (a fresh copy) when replaying.

        Raises:
            ReplayMiss: the cassette has no answer for this call and the mode may not run it.
            SideEffectBlocked: a side-effecting call may not run in this mode.
            CallInDoubt: resuming, a side effect in flight at the kill may have run.
            ArgumentError: args (or a live result) hold a value that is not JSON, or the
                kind is not one of the four.
            CassetteWriteError: the disk refused the cassette's line.
        """
        if on_in_doubt != "raise":
            check_choice("on_in_doubt", on_in_doubt, IN_DOUBT_CHOICES)
        plan = self._begin(kind, name, args, schema, step, meta)
        router = self._router
        fault = plan.fault
        if fault is not None:
            if plan.entry is None:
                router.inject(plan)
            self.clock.advance(fault.delay_ms / 1000)
        if plan.entry is not None:
            if self._latency == "recorded":
                self.clock.advance(self._recorded_ms(plan))
            return cast(T, router.serve(plan, plan.entry))
        runner = router.runner(plan, fn, side_effect, dry_run, on_in_doubt=on_in_doubt)
        started = plan.started  # an injected delay is part of the call's duration
        try:
            with idempotency(plan.idempotency_key):
                value = runner()
        except Exception as exc:
            router.finish_error(plan, exc, started)
            raise
        router.finish(plan, value, started)
        return cast(T, value)

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
        on_in_doubt: str = "raise",
        step: Any = None,
        meta: Any = None,
    ) -> T:
        """``call`` for coroutines: ``fn`` (and ``dry_run``) return awaitables."""
        if on_in_doubt != "raise":
            check_choice("on_in_doubt", on_in_doubt, IN_DOUBT_CHOICES)
        plan = self._begin(kind, name, args, schema, step, meta)
        router = self._router
        fault = plan.fault
        if fault is not None:
            if plan.entry is None:
                router.inject(plan)
            await self.clock.aadvance(fault.delay_ms / 1000)
        if plan.entry is not None:
            if self._latency == "recorded":
                await self.clock.aadvance(self._recorded_ms(plan))
            return cast(T, router.serve(plan, plan.entry))
        runner = router.runner(plan, fn, side_effect, dry_run, on_in_doubt=on_in_doubt)
        started = plan.started  # an injected delay is part of the call's duration
        try:
            with idempotency(plan.idempotency_key):
                awaitable = runner()
                value = None if awaitable is None else await awaitable
        except Exception as exc:
            router.finish_error(plan, exc, started)
            raise
        router.finish(plan, value, started)
        return cast(T, value)

    @staticmethod
    def _recorded_ms(plan: CallPlan) -> float:
        # A delay the recording was made under is in its ms already; it was just applied.
        delay = plan.fault.delay_ms if plan.fault is not None and plan.fault_applied else 0.0
        ms = plan.entry.ms if plan.entry is not None else 0.0
        return max(0.0, ms - delay) / 1000

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
        stored: str | None = None
        if live is not None:
            stored = self.redactor.redact_text(live) if is_public else hash_value(live)
        plan = self._begin("env", name, {}, SCHEMA_DEFAULT, None, None)
        router = self._router
        if plan.entry is None:
            router.inject(plan)
        if plan.entry is None:
            router.finish(plan, stored, self.clock.now(), stored_value=stored)
            return default if live is None else live
        recorded = router.serve(plan, plan.entry)
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
                agreed=router.index.served - 1,
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
        on_in_doubt: str = "raise",
        idempotency_key: str | None = None,
    ) -> Any:
        """Decorate a function (sync or async) so each call is a ``tool`` boundary call.

        The call's args are the function's bound arguments, defaults applied.

        Args:
            name: the tool's name; the function's name by default.
            schema_version: part of the key: changing a tool's shape fails loudly.
            side_effect: the tool changes the world; it never runs in replay.
            dry_run: a stand-in with the same signature that runs instead while recording.
            on_in_doubt: what ``resume`` does when this tool was in flight at a kill and may
                have run: ``raise`` (default), ``rerun`` or ``skip``; see ``Deck.call``.
            idempotency_key: the name of a keyword parameter through which the tool
                receives a key that stays the same when ``resume`` runs it again; pass it to
                the service (an ``Idempotency-Key`` header), and a call in doubt runs again
                safely. It is not part of the call's args.
        """
        check_choice("on_in_doubt", on_in_doubt, IN_DOUBT_CHOICES)

        def wrap(func: F) -> F:
            return wrap_tool(
                self,
                func,
                name=name or func.__name__,
                schema_version=schema_version,
                side_effect=side_effect,
                dry_run=dry_run,
                on_in_doubt=on_in_doubt,
                idempotency_key=idempotency_key,
            )

        return wrap(fn) if fn is not None else wrap

    def _begin(
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
        if not self._router.opened:
            # Opened through Deck.open, as by `with`, so that a warning on opening is
            # attributed (stacklevel) to the same frame on either path.
            self.open()
        return self._router.begin(kind, name, args, schema, step, meta, shaped=shaped)

    # -- the report ------------------------------------------------------------------------

    @property
    def calls(self) -> tuple[CallRecord, ...]:
        """Every call so far, in the order they started."""
        return self._router.calls()

    def report(self) -> Report:
        """What happened so far: used, unused, repeats, misses, order changes."""
        return self._router.report()
