"""The deck: every boundary call goes through it to be recorded, replayed or refused.

``Deck`` is the public face: its settings, its cassette's opening and closing, its calls,
its report. Every call goes through ``begin``, once: ``call``, ``acall``, ``env`` and
``tool`` are its thin users, as are the HTTP transports and the MCP session. ``begin``
returns the ``Call`` (``call.py``) that the caller finishes. The run's state lives in the
``Run`` the deck owns (``run.py``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar, cast

from .._base import config as _config
from .._base.clock import Clock, SystemClock
from .._base.config import (
    Durability,
    Latency,
    Match,
    Mode,
    OnHarnessChange,
    OnInDoubt,
    Repeats,
    Settings,
    check_choice,
)
from .._base.context import idempotency
from .._base.errors import ConfigError
from .._cassette.format import Recording
from .._keys.canonical import SCHEMA_DEFAULT
from .._keys.normalize import NormalizeConfig
from .._keys.redact import Redactor
from ..faults import Fault, FaultPlan
from .altering import altered
from .call import Call
from .environ import deck_from_env, env
from .fork import check_fork
from .report import CallRecord, Report
from .resuming import abegin
from .rules import deck_normalizer
from .run import Run
from .tools import acall, tool
from .waits import waits

T = TypeVar("T")


class Deck:
    """Routes boundary calls: records them, replays them, and reports what happened.

    Args:
        cassette: the cassette file (in mode ``fork``, the new cassette).
        mode: ``replay`` (default), ``record``, ``once``, ``append``, ``resume``, ``off``
            or ``fork`` (replay ``parent``'s calls up to seq ``at``, then record live).
        match: ``keyed`` (default; tolerates reordering) or ``strict`` (seq must agree too).
        clock: where durations are read and waits happen; ``SystemClock()`` by default.
        faults: a ``FaultPlan``, a list of faults, or a plan file (JSON or TOML), injected in
            every mode: on top of the recording, or in front of the live call (recorded).
        latency: ``"recorded"`` to let each replayed call take its recorded time on the clock.
        allow_side_effects: let side-effecting tools run while recording.
        durability: ``flush`` (default) or ``fsync`` each line before the call returns.
        normalize: normalization rules; by default from the project's settings.
        redactor: what masks secrets before keying and writing; by default with the
            project's extra patterns.
        public_env: environment variables whose values may be stored in clear.
        environ: the environment ``env()`` reads; ``os.environ`` by default.
        settings: the project's ``[tool.faultdeck]`` settings; read from the current
            folder's project by default.
        on_harness_change: ``warn`` (default) or ``ignore`` when replaying a cassette
            recorded at another git commit.
        repeats: what a call asked more often than it was recorded gets: ``miss`` (default;
            a retry storm shows as a ``ReplayMiss``), ``last`` (the last recorded answer
            again, as a rehearsal wants when a fault makes the loop retry a step) or
            ``cycle`` (its recorded answers again from the first, in order: a key recorded
            3 times answers 1, 2, 3, 1, 2, 3…, as a server wants that replays a program run
            after run).
        replace: a fresh recording over an existing cassette is written beside it and
            replaces it when the run closes cleanly; ``False`` leaves it finished beside
            it, for a caller that decides later (``faultdeck record``, by exit status).
        parent: in mode ``fork``, the cassette whose first calls replay; it is only read.
        at: in mode ``fork``, the seq to fork after: calls 1 to ``at`` replay from
            ``parent`` (a miss is a ``ReplayMiss``), later ones run live and are recorded.
            The new cassette starts with ``parent``'s calls up to ``at``, so it replays on
            its own, and its header names ``parent`` (path, ``at``, sha256 of its bytes).
            ``None``: the calls replay until the first one ``parent`` has no answer for,
            which runs live with all after it (``at`` is the seq before it); the new
            cassette is written only if the run gets there.
        model: in mode ``fork``, the model the HTTP requests after ``at`` are sent to in
            place of the one they ask for; the header names it (``retarget.py``).
        branch: in mode ``fork``, what a rehearsal's branch adds to the header's
            ``parent``: its cell, fault plan and the seq where it left the recorded path.

    Attributes:
        path, mode, match, durability, clock, latency, redactor: as configured.
        faults: the fault plan (a ``FaultPlan``), if any.
        public_env, environ: the variables ``env()`` may store in clear, and where it reads.
    """

    def __init__(  # noqa: PLR0913 - the public constructor: options by keyword, as httpx.Client
        self,
        cassette: str | os.PathLike[str],
        *,
        mode: Mode | None = None,
        match: Match | None = None,
        clock: Clock | None = None,
        faults: FaultPlan | Iterable[Fault] | str | os.PathLike[str] | None = None,
        latency: Latency | None = None,
        allow_side_effects: bool = False,
        durability: Durability | None = None,
        normalize: NormalizeConfig | None = None,
        redactor: Redactor | None = None,
        public_env: tuple[str, ...] = (),
        environ: Mapping[str, str] | None = None,
        settings: Settings | None = None,
        on_harness_change: OnHarnessChange = "warn",
        repeats: Repeats = "miss",
        replace: bool = True,
        parent: str | os.PathLike[str] | None = None,
        at: int | None = None,
        model: str | None = None,
        branch: Mapping[str, Any] | None = None,
    ) -> None:
        self._settings = settings or _config.load_settings()
        self.path = os.fspath(cassette)
        self.mode: Mode = check_choice(
            "mode", mode or self._settings.mode or "replay", (*_config.MODES, "fork")
        )
        fork = check_fork(self.path, self.mode, parent, at, model, branch)
        self.match: Match = check_choice("match", match or self._settings.match, _config.MATCHES)
        self.durability: Durability = check_choice(
            "durability", durability or self._settings.durability, _config.DURABILITIES
        )
        if latency not in (None, "recorded"):
            raise ConfigError(f"latency {latency!r} is not one of: None, 'recorded'")
        check_choice("on_harness_change", on_harness_change, _config.ON_HARNESS_CHANGE)
        check_choice("repeats", repeats, _config.REPEATS)
        self.clock: Clock = clock or SystemClock()
        self.latency = latency
        self.redactor, normalizer = deck_normalizer(self._settings, redactor, normalize)
        self.public_env = frozenset(public_env) | frozenset(self._settings.public_env)
        self.environ: Mapping[str, str] = os.environ if environ is None else environ
        if faults is not None and not isinstance(faults, FaultPlan):
            is_file = isinstance(faults, (str, os.PathLike))
            faults = FaultPlan.load(faults) if is_file else FaultPlan(faults)  # type: ignore[arg-type]
        self.faults: FaultPlan | None = faults
        self._run = Run(
            path=self.path,
            mode=self.mode,
            match=self.match,
            durability=self.durability,
            clock=self.clock,
            fault_run=faults.start() if faults else None,
            normalizer=normalizer,
            redactor=self.redactor,
            allow_side_effects=allow_side_effects,
            repeats=repeats,
            environ=self.environ,
            root=self._settings.root,
            on_harness_change=on_harness_change,
            replace=replace,
            fork=fork,
        )
        self._run.remote.update(self._settings.tools)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **kwargs: Any) -> Deck:
        """A deck configured by ``FAULTDECK_*`` variables, opened, and closed at exit.

        Reads ``FAULTDECK_CASSETTE`` (required), ``FAULTDECK_MODE``, ``FAULTDECK_FAULTS``,
        ``FAULTDECK_CLOCK``, ``FAULTDECK_REPORT`` and the variables the commands set
        (``deck_from_env`` says what each does). Other keyword arguments go to ``Deck``.

        Raises:
            ConfigError: ``FAULTDECK_CASSETTE`` is not set, or a value is not valid.
        """
        return deck_from_env(cls, os.environ if environ is None else environ, kwargs)

    @property
    def active_mode(self) -> Mode:
        """The mode the deck runs in: ``mode``, with ``once`` decided (``replay`` when the
        cassette exists, else ``record``). Reading it opens the deck."""
        self.open()
        return cast(Mode, self._run.mode)  # one of MODES, checked on construction

    @property
    def recording(self) -> Recording | None:
        """The cassette as the deck read it on opening (``replay``, ``append``, ``resume``);
        ``None`` for a fresh recording and in mode ``off``. Reading it opens the deck."""
        self.open()
        return self._run.cassette.recording

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

    async def __aenter__(self) -> Deck:
        return self.__enter__()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: object, tb: object
    ) -> None:
        self.__exit__(exc_type, exc, tb)

    def open(self) -> None:
        """Load and lock the cassette as the mode needs. Called by ``with`` or the first call.

        Raises:
            CassetteNotFound: replaying a cassette that does not exist.
            CassetteLocked: another writer holds the cassette.
            CassetteCorrupt, CassetteVersionError: the cassette cannot be read.
        """
        self._run.open()

    def rewind(self) -> None:
        """Start the replay over, as for the program's next run: every call's recorded
        answers are served again from the first, and the seqs, the report, the id renaming
        and the fault plan's counters start afresh. Opens the deck.

        Raises:
            ConfigError: the deck does not replay (its active mode is not ``replay``).
        """
        if self.active_mode != "replay":
            raise ConfigError(
                f"cannot rewind {self.path}: it is open in mode {self.active_mode}; "
                "only a deck that replays starts over"
            )
        self._run.rewind(self.faults.start() if self.faults else None)

    def close(self, status: str = "ok") -> None:
        """Write the end line (when writing) and release the cassette."""
        self._run.close(status)

    def abandon(self) -> None:
        """Release the cassette without an end line, as a killed process would leave it."""
        self._run.abandon()

    @property
    def calls(self) -> tuple[CallRecord, ...]:
        """Every call so far, in the order they started."""
        return self._run.calls()

    @property
    def remote_tools(self) -> frozenset[str]:
        """The tools said to reach a service (``remote=True``, ``mark_remote``)."""
        return frozenset(self._run.remote)

    def mark_remote(self, name: str) -> None:
        """Say that the tool ``name`` reaches a service (an API, an MCP server): a rehearsal
        lands network faults (quota, 5xx, timeout, reset) on it; a tool is local until then."""
        self._run.remote.add(name)

    def report(self) -> Report:
        """What happened so far: used, unused, repeats, misses, order changes."""
        return self._run.report()

    def begin(
        self,
        kind: str,
        name: str,
        args: Any,
        *,
        schema_version: str = SCHEMA_DEFAULT,
        step: Any = None,
        meta: Any = None,
        shaped: frozenset[str] = frozenset(),
        retarget: bool = False,
    ) -> Call:
        """Decide one boundary call and hand it back to be finished: the one way in. With
        ``call.recorded``, finish it with ``call.replay()``; else it runs live
        (``call.runner(fn)``, then ``call.result(value)``; ``with deck.begin(...) as call:``
        records an exception with ``call.fail``). ``call.fault`` is the fault to apply.

        Args:
            kind: ``model``, ``tool``, ``env`` or ``http``.
            name: the call's name.
            args: the call's arguments, as JSON values; they decide the key.
            schema_version: the tool's schema version; part of the key.
            step: the loop's step label, stored with the call.
            meta: free-form data stored with the call, never part of the key.
            shaped: fault kinds the caller shapes into the answer itself (the HTTP boundary
                breaks a tool call inside a 200); other raising faults get no answer.
            retarget: the caller sends the call to ``call.model`` when set (a fork's ``model``).

        Raises:
            ReplayMiss: the cassette has no answer for this call and the mode may not run it.
            ArgumentError: args hold a value that is not JSON, or the kind is not one of
                the four.
        """
        return self._run.begin(kind, name, args, schema_version, step, meta, shaped, retarget)

    abegin = abegin  # ``await deck.abegin(...)`` (``resuming.py``)

    def call(  # noqa: PLR0913 - the public call: options by keyword, as httpx's request()
        self,
        kind: str,
        name: str,
        args: Any,
        fn: Callable[[], T],
        *,
        schema_version: str = SCHEMA_DEFAULT,
        side_effect: bool = False,
        remote: bool = False,
        dry_run: Callable[[], T] | None = None,
        on_in_doubt: OnInDoubt = "raise",
        step: Any = None,
        meta: Any = None,
    ) -> T:
        """Make one boundary call through the deck.

        Args:
            kind: ``model``, ``tool``, ``env`` or ``http``.
            name: the call's name.
            args: the call's arguments, as JSON values; they decide the key.
            fn: runs the call for real; never called in replay.
            schema_version: the tool's schema version; part of the key.
            side_effect: the call changes the world (sends, writes, pays).
            remote: the tool reaches a service over the network (``mark_remote``): a
                rehearsal may land a quota, a 5xx, a timeout or a reset on it.
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
            check_choice("on_in_doubt", on_in_doubt, _config.ON_IN_DOUBT)
        if remote:
            self._run.remote.add(name)
        call = self.begin(kind, name, args, schema_version=schema_version, step=step, meta=meta)
        call.side_effect = side_effect
        if call.fault is not None or self.latency is not None:
            for seconds in waits(call, self.latency):
                self.clock.advance(seconds)
        # A result fault (tool_result, injection) changes the answer; stale needs the last.
        changes = call.fault is not None or self._run.ledger.answers is not None
        if call.recorded is not None:
            answer: T = call.replay()
            return altered(call, answer) if changes else answer
        with call:  # an exception out of the block is recorded with call.fail
            live = call.runner(
                fn, side_effect=side_effect, dry_run=dry_run, on_in_doubt=on_in_doubt
            )
            with idempotency(call.idempotency_key):
                value = live()
            if changes:  # recorded as the loop gets it, the fault on its line
                value = altered(call, value)
            call.result(value)
        return cast(T, value)

    acall = acall  # ``call``'s async twin (``tools.py``)
    env = env  # ``deck.env(name)`` (``environ.py``)
    tool = tool  # ``@deck.tool`` (``tools.py``)
