"""Counts in words, for messages: ``1 call``, ``2 calls``, ``the 3rd time``."""

from __future__ import annotations


def plural(n: int, word: str, many: str | None = None) -> str:
    """``1 call``, ``2 calls``; ``many`` for a word whose plural is not ``word + s``."""
    return f"{n} {word if n == 1 else many or word + 's'}"


def ordinal(n: int) -> str:
    """``1st``, ``2nd``, ``3rd``, ``11th``, ``22nd``."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"
