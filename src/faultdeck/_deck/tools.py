"""``@deck.tool``: a function whose every call is a ``tool`` boundary call; and
``deck.acall``, ``Deck.call``'s async twin, which async tools call through."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable
from typing import Any, ParamSpec, Protocol, TypeVar, cast, overload

from .._base import config as _config
from .._base.config import ON_IN_DOUBT, OnInDoubt, check_choice
from .._base.context import current_idempotency_key, idempotency
from .._base.errors import ConfigError
from .._keys.canonical import SCHEMA_DEFAULT
from .altering import altered
from .waits import waits

P = ParamSpec("P")
R = TypeVar("R")
T = TypeVar("T")


class _Deck(Protocol):
    """The two ways a tool's call goes through its deck (``Deck.call`` and ``acall``)."""

    def call(
        self,
        kind: str,
        name: str,
        args: Any,
        fn: Callable[[], Any],
        *,
        schema_version: str = ...,
        side_effect: bool = ...,
        dry_run: Callable[[], Any] | None = ...,
        on_in_doubt: OnInDoubt = ...,
    ) -> Any: ...

    async def acall(
        self,
        kind: str,
        name: str,
        args: Any,
        fn: Callable[[], Awaitable[Any]],
        *,
        schema_version: str = ...,
        side_effect: bool = ...,
        dry_run: Callable[[], Awaitable[Any]] | None = ...,
        on_in_doubt: OnInDoubt = ...,
    ) -> Any: ...


@overload
def tool(self: Any, fn: Callable[P, R], /) -> Callable[P, R]: ...


@overload
def tool(
    self: Any,
    fn: None = None,
    /,
    *,
    name: str | None = None,
    schema_version: str = SCHEMA_DEFAULT,
    side_effect: bool = False,
    dry_run: Callable[..., Any] | None = None,
    on_in_doubt: OnInDoubt = "raise",
    idempotency_key: str | None = None,
    remote: bool = False,
) -> Callable[[Callable[P, R]], Callable[P, R]]: ...


def tool(  # noqa: PLR0913 - the decorator's options, by keyword, as Deck.call takes them
    self: Any,
    fn: Callable[P, R] | None = None,
    /,
    *,
    name: str | None = None,
    schema_version: str = SCHEMA_DEFAULT,
    side_effect: bool = False,
    dry_run: Callable[..., Any] | None = None,
    on_in_doubt: OnInDoubt = "raise",
    idempotency_key: str | None = None,
    remote: bool = False,
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
        remote: the tool reaches a service over the network (an API, a database): a
            rehearsal lands network faults on it (quota, 5xx, timeout, reset); a local
            tool gets tool faults only (``Deck.mark_remote``).
    """
    check_choice("on_in_doubt", on_in_doubt, ON_IN_DOUBT)

    def wrap(func: Callable[P, R]) -> Callable[P, R]:
        tool_name = name or str(getattr(func, "__name__", "tool"))
        if remote:
            self.mark_remote(tool_name)
        return wrap_tool(
            self,
            func,
            name=tool_name,
            schema_version=schema_version,
            side_effect=side_effect,
            dry_run=dry_run,
            on_in_doubt=on_in_doubt,
            idempotency_key=idempotency_key,
        )

    return wrap(fn) if fn is not None else wrap


def wrap_tool(  # noqa: C901 - a sync and an async wrapper, one per kind of function
    deck: _Deck,
    func: Callable[P, R],
    *,
    name: str,
    schema_version: str,
    side_effect: bool,
    dry_run: Callable[..., Any] | None,
    on_in_doubt: OnInDoubt = "raise",
    idempotency_key: str | None = None,
) -> Callable[P, R]:
    """Wrap a sync or async function so each call goes through ``deck``.

    The call's args are the function's bound arguments with defaults applied, so
    ``f(1)`` and ``f(a=1)`` have one key; the idempotency key parameter is left out.

    Raises:
        ConfigError: ``idempotency_key`` names no keyword parameter of the function.
    """
    signature = inspect.signature(func)
    if idempotency_key is not None:
        param = signature.parameters.get(idempotency_key)
        if param is None or param.kind not in (param.KEYWORD_ONLY, param.POSITIONAL_OR_KEYWORD):
            raise ConfigError(
                f"@deck.tool(idempotency_key={idempotency_key!r}): {func.__name__} has no "
                f"keyword parameter {idempotency_key!r} to receive it"
            )
        # With a key that stays the same, running the call again is safe.
        on_in_doubt = "rerun"

    def bind(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        if idempotency_key is not None:
            kwargs = {**kwargs, idempotency_key: None}  # given by the deck, never by callers
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        arguments = dict(bound.arguments)
        if idempotency_key is not None:
            del arguments[idempotency_key]
        return arguments

    def keyed(kwargs: dict[str, Any]) -> dict[str, Any]:
        if idempotency_key is None:
            return kwargs
        return {**kwargs, idempotency_key: current_idempotency_key()}

    def stub(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Callable[[], Any] | None:
        if dry_run is None:
            return None
        return lambda: dry_run(*args, **keyed(kwargs))

    if inspect.iscoroutinefunction(func):

        @functools.wraps(func)
        async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
            return await deck.acall(
                "tool",
                name,
                bind(args, kwargs),
                lambda: func(*args, **keyed(kwargs)),
                schema_version=schema_version,
                side_effect=side_effect,
                dry_run=stub(args, kwargs),
                on_in_doubt=on_in_doubt,
            )

        return cast(Callable[P, R], async_wrapper)

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return deck.call(
            "tool",
            name,
            bind(args, kwargs),
            lambda: func(*args, **keyed(kwargs)),
            schema_version=schema_version,
            side_effect=side_effect,
            dry_run=stub(args, kwargs),
            on_in_doubt=on_in_doubt,
        )

    return cast(Callable[P, R], wrapper)


async def acall(  # noqa: PLR0913 - call's async twin, the same options
    self: Any,
    kind: str,
    name: str,
    args: Any,
    fn: Callable[[], Awaitable[T]],
    *,
    schema_version: str = SCHEMA_DEFAULT,
    side_effect: bool = False,
    remote: bool = False,
    dry_run: Callable[[], Awaitable[T]] | None = None,
    on_in_doubt: OnInDoubt = "raise",
    step: Any = None,
    meta: Any = None,
) -> T:
    """``Deck.call`` for coroutines: ``fn`` (and ``dry_run``) return awaitables."""
    if on_in_doubt != "raise":
        check_choice("on_in_doubt", on_in_doubt, _config.ON_IN_DOUBT)
    if remote:
        self._run.remote.add(name)
    call = await self.abegin(kind, name, args, schema_version=schema_version, step=step, meta=meta)
    call.side_effect = side_effect
    if call.fault is not None or self.latency is not None:
        for seconds in waits(call, self.latency):
            await self.clock.aadvance(seconds)
    changes = call.fault is not None or self._run.ledger.answers is not None  # as in call
    if call.recorded is not None:
        answer: T = call.replay()
        return altered(call, answer) if changes else answer
    with call:  # as in call
        live = call.runner(fn, side_effect=side_effect, dry_run=dry_run, on_in_doubt=on_in_doubt)
        with idempotency(call.idempotency_key):
            awaitable = live()
            value = None if awaitable is None else await awaitable
        if changes:
            value = altered(call, value)
        call.result(value)
    return cast(T, value)
