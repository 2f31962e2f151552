"""Counts in words, as every message writes them."""

from __future__ import annotations

import pytest

from faultdeck._base.words import ordinal, plural


@pytest.mark.parametrize(
    ("n", "text"), [(0, "0 calls"), (1, "1 call"), (2, "2 calls"), (21, "21 calls")]
)
def test_plural(n: int, text: str) -> None:
    assert plural(n, "call") == text


def test_plural_with_its_own_form() -> None:
    assert plural(1, "entry", "entries") == "1 entry"
    assert plural(3, "entry", "entries") == "3 entries"


@pytest.mark.parametrize(
    ("n", "text"),
    [
        (1, "1st"),
        (2, "2nd"),
        (3, "3rd"),
        (4, "4th"),
        (11, "11th"),
        (12, "12th"),
        (13, "13th"),
        (21, "21st"),
        (22, "22nd"),
        (101, "101st"),
        (111, "111th"),
    ],
)
def test_ordinal(n: int, text: str) -> None:
    assert ordinal(n) == text
