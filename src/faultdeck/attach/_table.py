"""The client libraries faultdeck routes without code changes: one adapter each, in one table.

An adapter names the module it patches, the versions it knows and the function that routes
it (``"module:function"``, imported only when the library is): the function is given the
library's module and returns the undo that puts every original back. A library that is not
installed is skipped; one whose version is outside the range is skipped and said so in one
line.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

Undo = Callable[[], None]
"""Puts back what an adapter patched."""

_NUMBER = re.compile(r"\d+")


@dataclass(frozen=True, slots=True)
class Adapter:
    """How one client library is routed through a deck.

    Attributes:
        library: its distribution's name on PyPI (its version is read from there), or
            ``None`` for the standard library.
        module: the module that is patched; routed as soon as it is imported.
        lowest: the first version known, as numbers (``(0, 27)``).
        below: the first version not known (``(1,)``).
        route: ``"module:function"``: the function that routes ``module`` and returns the
            undo.
    """

    library: str | None
    module: str
    lowest: tuple[int, ...] = ()
    below: tuple[int, ...] = ()
    route: str = ""

    @property
    def name(self) -> str:
        """What messages call it: the library, or the module of the standard library."""
        return self.library or self.module

    def unknown_version(self) -> str | None:
        """Why the installed version is not routed, or ``None`` when it is known."""
        if self.library is None:
            return None
        # The library's own __version__ when it has one: reading its distribution's metadata
        # costs a program's start-up tens of milliseconds.
        version = getattr(sys.modules.get(self.library), "__version__", None)
        if not isinstance(version, str):
            from importlib import metadata

            try:
                version = metadata.version(self.library)
            except metadata.PackageNotFoundError:
                return None  # a module of that name not installed as a distribution: try it
        numbers = tuple(int(n) for n in _NUMBER.findall(version)[:3])
        if self.lowest <= numbers < self.below:
            return None
        known = f">={_dotted(self.lowest)},<{_dotted(self.below)}"
        return (
            f"faultdeck: {self.library} {version} is not a version faultdeck routes ({known}); "
            f"its requests are not recorded: install {self.library}{known}, or give its "
            "client fd.http.Transport yourself"
        )

    def routing(self, module: ModuleType) -> Undo:
        """Route ``module``; the undo."""
        where, _, attr = self.route.partition(":")
        __import__(where)
        route: Callable[[ModuleType], Undo] = getattr(sys.modules[where], attr)
        return route(module)


def replace(owner: type, name: str, replacement: Any) -> Undo:
    """Put ``replacement`` in ``owner``'s ``name``; the undo puts back exactly what was there
    (the owner's own attribute, or none, so that an inherited one shows through again)."""
    had = vars(owner).get(name, _MISSING)
    setattr(owner, name, replacement)

    def undo() -> None:
        if had is _MISSING:
            delattr(owner, name)
        else:
            setattr(owner, name, had)

    return undo


_MISSING = object()


def _dotted(numbers: tuple[int, ...]) -> str:
    return ".".join(str(n) for n in numbers)


ADAPTERS: tuple[Adapter, ...] = (
    Adapter("httpx", "httpx", (0, 27), (1,), "faultdeck.attach._httpx:route"),
    Adapter("httpx2", "httpx2", (2, 16), (3,), "faultdeck.attach._httpx:route"),
    Adapter("requests", "requests.adapters", (2, 25), (3,), "faultdeck.attach._requests:route"),
    Adapter("urllib3", "urllib3", (1, 26), (3,), "faultdeck.attach._urllib3:route"),
    Adapter(None, "urllib.request", route="faultdeck.attach._urllib:route"),
    Adapter("aiohttp", "aiohttp", (3, 12, 2), (4,), "faultdeck.attach._aiohttp:route"),
    Adapter("botocore", "botocore.client", (1, 31), (2,), "faultdeck.attach._botocore:route"),
)
"""Every library routed, in the order they are patched."""
