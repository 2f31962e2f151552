"""Stand-ins for the live side of a boundary call."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")


def never() -> Any:
    """A live call that must not run: the recording (or the mode) should answer first."""
    raise AssertionError("a live call ran where the recording should answer")


def returns(value: T) -> Callable[[], T]:
    """A live call that returns ``value`` (a lambda with a default argument, typed)."""
    return lambda: value


def rules() -> str:
    """The fingerprint of the normalization rules a deck with this project's settings keys
    calls under: what the end line of a cassette it records names (``rules``), read from a
    recording of one plain call."""
    import faultdeck as fd  # the support module is imported before any test configures

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder, "rules.jsonl")
        with fd.Deck(path, mode="record") as deck:
            deck.call("tool", "t", {}, returns(1))
        return str(fd.load(path).rules)
