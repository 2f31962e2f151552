"""The settings: what ``[tool.faultdeck]`` holds, and the values a deck's options take.

A ``Deck`` reads the settings of the project it runs in; ``load_settings(folder)`` reads
another project's, for ``Deck(settings=…)``. Each option's type is the ``Literal`` of the
values it may take, for annotations::

    from faultdeck.config import Mode

    def replayed(path: str, mode: Mode = "replay") -> fd.Deck: ...
"""

from ._base.config import (
    Durability,
    Latency,
    Match,
    Mode,
    OnHarnessChange,
    OnInDoubt,
    Repeats,
    Settings,
    load_settings,
)

__all__ = [
    "Durability",
    "Latency",
    "Match",
    "Mode",
    "OnHarnessChange",
    "OnInDoubt",
    "Repeats",
    "Settings",
    "load_settings",
]
