"""The calls a program makes through its deck: the seam ``begin``, and its thin users.

``begin`` decides a call and returns the ``Call`` that finishes it; ``call``, ``acall``,
``env`` and ``tool`` each apply the call's fault, answer from the recording or run live,
and record how the call ended through that ``Call``, as the HTTP transport does.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, ParamSpec, TypeVar, cast, overload

from .._base import terms
from .._base.clock import Clock
from .._base.config import ON_IN_DOUBT, Latency, OnInDoubt, check_choice
from .._base.context import idempotency
from .._base.errors import ReplayMiss
from .._cassette.format import Entry
from .._cassette.session import hash_value
from .._keys.canonical import SCHEMA_DEFAULT
from .._keys.fields import ABSENT
from .._keys.redact import Redactor
from .call import Call
from .run import Run
from .tools import wrap_tool

T = TypeVar("T")
P = ParamSpec("P")
R = TypeVar("R")

_UNSHAPED: frozenset[str] = frozenset()

_SECRETISH = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH")


class Calls:
    """The ``Deck`` methods that make calls; see ``Deck``."""

    __slots__ = ()
    path: str
    clock: Clock
    redactor: Redactor
    _latency: Latency | None
    _public_env: frozenset[str]
    _environ: Mapping[str, str]
    _run: Run

    # -- the seam ----------------------------------------------------------------------------

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
    ) -> Call:
        """Decide one boundary call and hand it back to be finished; the one way in.

        ``call.recorded`` is the recorded answer (finish with ``call.replay()``), else the
        call runs live (``call.runner(fn)``, then ``call.result(value)`` or
        ``call.fail(exc)``); ``call.fault`` is the fault to apply. ``with deck.begin(...)
        as call:`` records an exception out of the block with ``call.fail``.

        Args:
            kind: ``model``, ``tool``, ``env`` or ``http``.
            name: the call's name.
            args: the call's arguments, as JSON values; they decide the key.
            schema_version: the tool's schema version; part of the key.
            step: the loop's step label, stored with the call.
            meta: free-form data stored with the call, never part of the key.
            shaped: fault kinds the caller shapes into the answer itself (the HTTP boundary
                breaks a tool call inside a 200); other raising faults get no answer.

        Raises:
            ReplayMiss: the cassette has no answer for this call and the mode may not run it.
            ArgumentError: args hold a value that is not JSON, or the kind is not one of
                the four.
        """
        return self._run.begin(kind, name, args, schema_version, step, meta, shaped)

    async def abegin(
        self,
        kind: str,
        name: str,
        args: Any,
        *,
        schema_version: str = SCHEMA_DEFAULT,
        step: Any = None,
        meta: Any = None,
        shaped: frozenset[str] = frozenset(),
    ) -> Call:
        """``begin`` for a caller on an event loop (``acall``, the async HTTP transport,
        the MCP session); the same arguments, the same ``Call``.

        It differs only when resuming: a call that another task's reorder put ahead of
        the recorded calls before it waits for them (``TURN_WAIT`` at most) without
        blocking the loop, where ``begin`` would raise ``ReplayMiss`` at once rather than
        stall the tasks it waits for.
        """
        call = self._run.begin(kind, name, args, schema_version, step, meta, shaped, True)
        if call.behind:  # resumed ahead of the recording: wait for the calls before it
            await self._run.catch_up(call)
        return call

    def take_recorded(
        self,
        kind: str,
        name: str,
        args: Any,
        accept: Callable[[Entry], bool],
        *,
        learn: Callable[[Any], Any] | None = None,
        parsed: bool = False,
        parse: Callable[[], Any] | None = None,
    ) -> Entry | None:
        """``begin`` and ``call.answered()`` in one step, for a plain replay (no fault
        recorded, none of the plan's faults can land on the call) whose recorded call
        ``accept`` says its caller answers as recorded; the call is logged as replayed.
        ``None``, with nothing done, whenever ``begin`` must decide the call instead (a
        miss, a key that needs redaction, an answer the caller would judge). ``learn``: the
        part of the recorded value whose ids later calls may send back (see ``answered``'s
        ``learn``), the whole by default. ``parsed``: the caller vouches that ``args`` hold
        only what ``orjson.loads`` makes, and strings: each value of its own JSON type (no
        subclass, no tuple, no NaN), which spares a walk over them (``_keys.asis``).
        ``parse``: ``args`` hold bytes as they were sent, each as an ``orjson.Fragment`` of
        JSON (an HTTP request's body), which only the as-stored route reads (bytes equal to
        the stored args' are those args); ``parse()`` gives the args as JSON values, and is
        called only when the call is keyed."""
        taken = self._run.take_clean(
            kind, name, args, SCHEMA_DEFAULT, None, accept, learn, parsed, parse
        )
        return None if taken is None else taken[0]

    def call(  # noqa: PLR0913 - the public call: options by keyword, as httpx's request()
        self,
        kind: str,
        name: str,
        args: Any,
        fn: Callable[[], T],
        *,
        schema_version: str = SCHEMA_DEFAULT,
        side_effect: bool = False,
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
            check_choice("on_in_doubt", on_in_doubt, ON_IN_DOUBT)
        run = self._run
        if run.clean and self._latency != "recorded":  # a plain replay: the short route (clean.py)
            found = run.replay_clean(kind, name, args, schema_version, step)
            if found is not ABSENT:
                return found  # type: ignore[no-any-return]  # the recorded T (cast() is a call)
        if run.records_plain and not side_effect and meta is None:  # a plain live call (live.py)
            value = run.record_clean(kind, name, args, schema_version, step, fn)
            if value is not ABSENT:
                return value  # type: ignore[no-any-return]  # fn's T
        # begin() without its keyword arguments: the replay path is hot.
        call = self._run.begin(kind, name, args, schema_version, step, meta, _UNSHAPED)
        # inject() and replay() record how the call ended themselves; only a live run needs
        # the Call's block to record an exception (kept off the replay path: it is hot).
        if call.fault is not None:
            call.inject()
            self.clock.advance(call.delay)
        if call.recorded is not None:
            if self._latency == "recorded":
                self.clock.advance(_recorded_time(call))
            answer: T = call.replay()
            return answer
        try:  # what ``with call:`` does, a frame less on the recording's hot path
            live = call.runner(
                fn, side_effect=side_effect, dry_run=dry_run, on_in_doubt=on_in_doubt
            )
            with idempotency(call.idempotency_key):
                value = live()
            call.result(value)
        except Exception as exc:
            if not call.finished:
                call.fail(exc)
            raise
        return cast(T, value)

    async def acall(  # noqa: PLR0913 - call's async twin, the same options
        self,
        kind: str,
        name: str,
        args: Any,
        fn: Callable[[], Awaitable[T]],
        *,
        schema_version: str = SCHEMA_DEFAULT,
        side_effect: bool = False,
        dry_run: Callable[[], Awaitable[T]] | None = None,
        on_in_doubt: OnInDoubt = "raise",
        step: Any = None,
        meta: Any = None,
    ) -> T:
        """``call`` for coroutines: ``fn`` (and ``dry_run``) return awaitables."""
        if on_in_doubt != "raise":
            check_choice("on_in_doubt", on_in_doubt, ON_IN_DOUBT)
        run = self._run
        if run.clean and self._latency != "recorded":  # a plain replay: the short route (clean.py)
            found = run.replay_clean(kind, name, args, schema_version, step)
            if found is not ABSENT:
                return found  # type: ignore[no-any-return]  # the recorded T (cast() is a call)
        call = await self.abegin(
            kind, name, args, schema_version=schema_version, step=step, meta=meta
        )
        if call.fault is not None:
            call.inject()
            await self.clock.aadvance(call.delay)
        if call.recorded is not None:
            if self._latency == "recorded":
                await self.clock.aadvance(_recorded_time(call))
            answer: T = call.replay()
            return answer
        try:  # as in call
            live = call.runner(
                fn, side_effect=side_effect, dry_run=dry_run, on_in_doubt=on_in_doubt
            )
            with idempotency(call.idempotency_key):
                awaitable = live()
                value = None if awaitable is None else await awaitable
            call.result(value)
        except Exception as exc:
            if not call.finished:
                call.fail(exc)
            raise
        return cast(T, value)

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
        with self.begin("env", name, {}) as call:
            call.inject()
            if call.recorded is None:
                call.result(stored, stored=stored)
                return default if live is None else live
            recorded = call.replay()
        if is_public:
            return default if recorded is None else cast(str, recorded)
        if recorded != stored:
            raise ReplayMiss(
                f"replay miss at seq {call.seq}: env {name} differs from the recording in "
                f"{self.path} (recorded {recorded or 'unset'}, now {stored or 'unset'}); "
                f"set it as it was, or re-record with {terms.current().about(self.path).record}",
                seq=call.seq,
                kind="env",
                name=name,
                key=call.key,
                agreed=self._run.index.served - 1,
                nearest=None,
                diff=(("value", recorded, stored),),
            )
        return default if live is None else live

    @overload
    def tool(self, fn: Callable[P, R], /) -> Callable[P, R]: ...

    @overload
    def tool(
        self,
        fn: None = None,
        /,
        *,
        name: str | None = None,
        schema_version: str = SCHEMA_DEFAULT,
        side_effect: bool = False,
        dry_run: Callable[..., Any] | None = None,
        on_in_doubt: OnInDoubt = "raise",
        idempotency_key: str | None = None,
    ) -> Callable[[Callable[P, R]], Callable[P, R]]: ...

    def tool(
        self,
        fn: Callable[P, R] | None = None,
        /,
        *,
        name: str | None = None,
        schema_version: str = SCHEMA_DEFAULT,
        side_effect: bool = False,
        dry_run: Callable[..., Any] | None = None,
        on_in_doubt: OnInDoubt = "raise",
        idempotency_key: str | None = None,
    ) -> Callable[P, R] | Callable[[Callable[P, R]], Callable[P, R]]:
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
        check_choice("on_in_doubt", on_in_doubt, ON_IN_DOUBT)

        def wrap(func: Callable[P, R]) -> Callable[P, R]:
            return wrap_tool(
                self,
                func,
                name=name or str(getattr(func, "__name__", "tool")),
                schema_version=schema_version,
                side_effect=side_effect,
                dry_run=dry_run,
                on_in_doubt=on_in_doubt,
                idempotency_key=idempotency_key,
            )

        return wrap(fn) if fn is not None else wrap


def _recorded_time(call: Call) -> float:
    # A delay the recording was made under is in its ms already; it was just applied.
    delay = call.delay if call.fault_applied else 0.0
    ms = call.recorded.ms if call.recorded is not None else 0.0
    return max(0.0, ms / 1000 - delay)
