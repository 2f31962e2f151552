"""Secrets known by their label, not their shape: a random value labelled as a secret in
free text (``client_secret=…``, ``"password": "…"``, ``api_key: …``), as error messages and
quoted bodies carry them. The credential table (``secrets``) finds shapes; this rule finds
what only its label gives away, leaving counts (``max_tokens: 4096``), placeholders and code
(``token = session.headers.get(…)``) as they are.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

Span = tuple[str, int, int]
"""A secret found in a text: the shape's name, its start and its end."""

# A value labelled as a secret in free text: `client_secret=…`, `"password": "…"`,
# `api_key: …`, as error messages and quoted bodies carry them. The label must end the word
# before the separator, so `max_tokens: 4096` is a count, and the value must look random
# (checked in code, with the label's exceptions and code expressions left alone).
ASSIGNMENT = re.compile(
    r"(?i)(?<![A-Za-z0-9])(?P<label>[A-Za-z0-9_.-]*?"
    r"(?:password|passwd|passphrase|secret|token|api[_-]?key|private[_-]?key|access[_-]?key"
    r"|credential)s?)"
    r"[\\\"'\s]{0,8}[:=][\\\"'\s]{0,8}"
    r"(?P<secret>[A-Za-z0-9_./+=~!@#$%^&*-]{12,})"
)
ASSIGNMENT_HINTS = ("pass", "secret", "token", "key", "credential")
# A value that reads as code, not as a secret: `session.headers.get(`, `settings.API_KEY`.
_CODE_PATH = re.compile(r"[A-Za-z_][A-Za-z_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+")

_MIN_ENTROPY_LEN = 12
_MIN_ENTROPY_BITS = 3.0
# Masks and other faultdeck placeholders («id:3», «ts») are ours, not the caller's entropy.
_TOKEN_RE = re.compile(r"«[^«»]{0,64}»")


def entropy(text: str) -> float:
    """Shannon entropy of ``text``, in bits per character."""
    n = len(text)
    total = 0.0
    for ch in set(text):
        c = text.count(ch)
        total += c * math.log2(c)
    return math.log2(n) - total / n


def looks_random(text: str) -> bool:
    """Whether ``text`` (faultdeck's own placeholders aside) is long and random enough to be a
    secret: at least 12 characters and 3 bits of entropy per character."""
    if "«" in text:
        text = _TOKEN_RE.sub("", text)
    return len(text) >= _MIN_ENTROPY_LEN and entropy(text) >= _MIN_ENTROPY_BITS


def assignment_spans(
    text: str, spans: list[Span], is_plain_label: Callable[[str], bool]
) -> list[Span]:
    """``spans`` with the random values labelled as secrets in ``text`` added, sorted.

    Args:
        text: the text.
        spans: what the shapes found already; an assignment inside one is not added again.
        is_plain_label: a callable that says whether a label (``next_page_token``) names
            something that is not a secret.
    """
    found: list[Span] = []
    for m in ASSIGNMENT.finditer(text):
        value = m.group("secret")
        start, end = m.span("secret")
        if any(s < end and start < e for _, s, e in spans):
            continue
        if is_plain_label(m.group("label")):
            continue
        if text[end : end + 1] in ("(", "[") or _CODE_PATH.fullmatch(value):
            continue  # `token = session.headers.get(…)`: code, not a value
        if looks_random(value):
            found.append(("secret_assignment", start, end))
    if not found:
        return spans
    return sorted(spans + found, key=lambda span: span[1])
