"""The public door: ``faultdeck.__all__`` is sorted, complete and documented."""

from __future__ import annotations

import faultdeck as fd


def test_all_is_sorted_and_every_name_exists() -> None:
    assert fd.__all__ == sorted(fd.__all__)
    for name in fd.__all__:
        assert hasattr(fd, name), name


def test_public_names_are_documented_and_come_from_private_modules() -> None:
    for name in fd.__all__:
        value = getattr(fd, name)
        if name.startswith("__"):
            continue
        assert getattr(value, "__doc__", None), f"{name} has no docstring"
        module = getattr(value, "__module__", "faultdeck._")
        assert module.startswith("faultdeck."), name
