"""The deck: every boundary call goes through it to be recorded, replayed or refused.

``Deck`` is the public face: its settings, its cassette's opening and closing, its report.
Its calls come from ``Calls`` (``calls.py``): ``begin``, the one seam every call goes
through, and its thin users ``call``, ``acall``, ``env`` and ``tool``; the HTTP transport
uses ``begin`` too. ``begin`` returns the ``Call`` (``call.py``) that the caller finishes.
The run's state lives in ``Run`` (``run.py``), below it.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any, NamedTuple, ParamSpec, TypeVar, cast

from .._base import config as _config
from .._base.clock import Clock, SystemClock
from .._base.config import (
    DURABILITIES,
    MATCHES,
    MODES,
    ON_HARNESS_CHANGE,
    REPEATS,
    Durability,
    Latency,
    Match,
    Mode,
    OnHarnessChange,
    Repeats,
    Settings,
    check_choice,
)
from .._base.errors import ConfigError
from .._cassette.format import Recording
from .._keys.normalize import NormalizeConfig, Normalizer
from .._keys.redact import Redactor
from ..faults import Fault, FaultPlan
from .calls import Calls
from .environ import deck_from_env
from .fork import check_fork, fork_from_env
from .report import CallRecord, Report
from .run import Run

T = TypeVar("T")
P = ParamSpec("P")
R = TypeVar("R")


class Deck(Calls):
    """Routes boundary calls: records them, replays them, and reports what happened.

    Args:
        cassette: the cassette file (in mode ``fork``, the new cassette).
        mode: ``replay`` (default), ``record``, ``once``, ``append``, ``resume``, ``off``
            or ``fork`` (replay ``parent``'s calls up to seq ``at``, then record live).
        match: ``keyed`` (default; tolerates reordering) or ``strict`` (seq must agree too).
        clock: where durations are read and waits happen; ``SystemClock()`` by default.
        faults: a ``FaultPlan``, a list of faults, or a plan file (JSON or TOML), injected in
            every mode: on replay on top of the recording, on record in front of the live call
            (recorded as injected).
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
            a retry storm shows as a ``ReplayMiss``) or ``last`` (the last recorded answer
            again, as a rehearsal wants when a fault makes the loop retry a step).
        replace: a fresh recording over an existing cassette is written beside it and
            replaces it when the run closes cleanly; ``False`` leaves it finished beside
            it, for a caller that decides later (``faultdeck record``, by exit status).
        parent: in mode ``fork``, the cassette whose first calls replay; it is only read.
        at: in mode ``fork``, the seq to fork after: calls 1 to ``at`` replay from
            ``parent`` (a miss is a ``ReplayMiss``), later ones run live and are recorded.
            The new cassette starts with ``parent``'s calls up to ``at``, so it replays on
            its own, and its header names ``parent`` (path, ``at``, sha256 of its bytes).

    Attributes:
        path: the cassette file.
        mode, match, durability: as configured.
        clock: the deck's clock.
        faults: the fault plan, if any.
        redactor: what masks secrets.
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
    ) -> None:
        self._settings = settings or _config.load_settings()
        self.path = os.fspath(cassette)
        self.mode: Mode = check_choice(
            "mode", mode or self._settings.mode or "replay", (*MODES, "fork")
        )
        fork = check_fork(self.path, self.mode, parent, at)
        self.match: Match = check_choice("match", match or self._settings.match, MATCHES)
        self.durability: Durability = check_choice(
            "durability", durability or self._settings.durability, DURABILITIES
        )
        if latency not in (None, "recorded"):
            raise ConfigError(f"latency {latency!r} is not one of: None, 'recorded'")
        check_choice("on_harness_change", on_harness_change, ON_HARNESS_CHANGE)
        check_choice("repeats", repeats, REPEATS)
        self.clock: Clock = clock or SystemClock()
        self._latency = latency
        if redactor is None and normalize is None:
            self.redactor, normalizer = _project_normalizer(self._settings)
        else:
            self.redactor = redactor or Redactor(extra_patterns=self._settings.redact_patterns)
            normalizer = Normalizer(normalize or _default_normalize(self._settings), self.redactor)
        self._public_env = frozenset(public_env) | frozenset(self._settings.public_env)
        self._environ: Mapping[str, str] = os.environ if environ is None else environ
        if isinstance(faults, (str, os.PathLike)):
            faults = FaultPlan.load(faults)
        elif faults is not None and not isinstance(faults, FaultPlan):
            faults = FaultPlan(faults)
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
            repeat_last=repeats == "last",
            environ=self._environ,
            root=self._settings.root,
            on_harness_change=on_harness_change,
            replace=replace,
            fork=fork,
        )

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **kwargs: Any) -> Deck:
        """A deck configured by ``FAULTDECK_*`` variables, opened, and closed at exit.

        Reads ``FAULTDECK_CASSETTE`` (required), ``FAULTDECK_MODE``, ``FAULTDECK_FAULTS`` (a
        fault plan file), ``FAULTDECK_CLOCK`` (``virtual`` for a clock that never waits),
        ``FAULTDECK_REPORT`` (where to write the JSON report when the process exits) and
        ``FAULTDECK_DEFER_REPLACE`` (``1``: a fresh recording stays beside the cassette when
        the run ends, for ``faultdeck record`` to move once the program exits 0), and for
        ``FAULTDECK_MODE=fork`` ``FAULTDECK_FORK_PARENT`` and ``FAULTDECK_FORK_AT`` (the
        ``parent`` and ``at`` that ``faultdeck fork`` sets), and ``FAULTDECK_ALLOW_SIDE_EFFECTS``
        (``0``: side effects run their stand-ins whatever the program passes, as
        ``faultdeck drift`` asks; ``1``: they may run). Other keyword arguments go to
        ``Deck``.

        Raises:
            ConfigError: ``FAULTDECK_CASSETTE`` is not set, or a value is not valid.
        """
        env = os.environ if environ is None else environ
        fork_from_env(env, kwargs)
        return deck_from_env(cls, env, kwargs)

    @property
    def latency(self) -> Latency | None:
        """``recorded`` when replayed calls take their recorded time on the clock."""
        return self._latency

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
        return self._run.recording

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

    def close(self, status: str = "ok") -> None:
        """Write the end line (when writing) and release the cassette."""
        self._run.close(status)

    def abandon(self) -> None:
        """Release the cassette without an end line, as a killed process would leave it."""
        self._run.abandon()

    # -- the report ------------------------------------------------------------------------

    @property
    def calls(self) -> tuple[CallRecord, ...]:
        """Every call so far, in the order they started."""
        return self._run.calls()

    def report(self) -> Report:
        """What happened so far: used, unused, repeats, misses, order changes."""
        return self._run.report()


def _default_normalize(settings: Settings) -> NormalizeConfig:
    """The normalization rules of the project's settings."""
    base = NormalizeConfig()
    return replace(
        base,
        strip_fields=base.strip_fields | frozenset(settings.strip_headers),
        volatile=frozenset(settings.volatile),
        root=settings.root,
        rules=settings.rules(),
    )


class _Shared(NamedTuple):
    settings: Settings
    redactor: Redactor
    normalizer: Normalizer


_shared: list[_Shared] = []  # the most recent first; a few at most
_shared_lock = threading.Lock()


def _project_normalizer(settings: Settings) -> tuple[Redactor, Normalizer]:
    """The normalizer (and its redactor) of a deck that takes the project's settings as
    they are, shared by every such deck while the settings stay the same object (they are
    read again when pyproject.toml changes).

    Building them compiles the patterns and imports the rules; a rehearsal builds a deck per
    cell. Both are pure but for caches of what each field name means, which stay right
    for the same settings and are warm for the next deck.
    """
    with _shared_lock:
        for shared in _shared:
            if shared.settings is settings:
                return shared.redactor, shared.normalizer
    redactor = Redactor(extra_patterns=settings.redact_patterns)
    normalizer = Normalizer(_default_normalize(settings), redactor)
    with _shared_lock:
        _shared.insert(0, _Shared(settings, redactor, normalizer))
        del _shared[_SHARED_MAX:]
    return redactor, normalizer


_SHARED_MAX = 4
