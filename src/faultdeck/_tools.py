"""``@deck.tool``: a function whose every call is a ``tool`` boundary call."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar, cast

if TYPE_CHECKING:
    from ._deck import Deck

F = TypeVar("F", bound=Callable[..., Any])


def wrap_tool(
    deck: Deck,
    func: F,
    *,
    name: str,
    schema_version: str,
    side_effect: bool,
    dry_run: Callable[..., Any] | None,
) -> F:
    """Wrap a sync or async function so each call goes through ``deck``.

    The call's args are the function's bound arguments with defaults applied, so
    ``f(1)`` and ``f(a=1)`` have one key.
    """
    signature = inspect.signature(func)

    def bind(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        return dict(bound.arguments)

    def stub(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Callable[[], Any] | None:
        if dry_run is None:
            return None
        return lambda: dry_run(*args, **kwargs)

    if inspect.iscoroutinefunction(func):

        @functools.wraps(func)
        async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
            return await deck.acall(
                "tool",
                name,
                bind(args, kwargs),
                lambda: func(*args, **kwargs),
                schema=schema_version,
                side_effect=side_effect,
                dry_run=stub(args, kwargs),
            )

        return cast(F, async_wrapper)

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return deck.call(
            "tool",
            name,
            bind(args, kwargs),
            lambda: func(*args, **kwargs),
            schema=schema_version,
            side_effect=side_effect,
            dry_run=stub(args, kwargs),
        )

    return cast(F, wrapper)
