"""Redaction: credential fields dropped and credential-shaped strings masked in JSON values.

Four rules, applied to every value before anything is keyed or written:

- a dict key in ``CREDENTIAL_FIELDS`` (any case) is dropped with its value;
- every substring that a shape of ``_secrets.SHAPES`` (or a project pattern) matches is
  replaced by its mask, ``«redacted:sha256:<8 hex>»``;
- a string under a secret-like field name (``password``, ``client_secret``, ``apiKey``, …)
  is masked whole when it looks random (at least 12 characters and 3 bits of entropy per
  character), so ``{"token": "abc"}`` stays readable; a fixed list of names that only look
  secret-like (``next_page_token``, ``cursor``, ``max_tokens``, ``total_tokens``, …) is
  never treated as secret;
- a mask written as JSON escapes (``\\u00abredacted:sha256:…\\u00bb``) is read back as the
  mask it is: it is redacted already.

Streams carry their text in pieces (one delta per event): ``redact_stream`` joins the pieces
of each stream of text, masks the joined text, and rewrites the pieces to agree with it, so
that a secret split across events is masked too. Masks never match a shape, so redacting
twice changes nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Any

from .assignments import ASSIGNMENT_HINTS, assignment_spans, looks_random
from .names import (
    CREDENTIAL_FIELDS,
    DROP,
    NOT_SECRET_FIELDS,
    PLAIN,
    SECRET,
    SECRET_FIELD_WORDS,
)
from .secrets import (
    MASK_PREFIX,
    MASK_RE,
    MIN_SECRET_LEN,
    Span,
    apply_masks,
    builtin_spans,
    mask,
    patterns,
    unescape_masks,
)
from .streams import mask_split_text

__all__ = [
    "CREDENTIAL_FIELDS",
    "CREDENTIAL_FIELD_FINDING",
    "DROP",
    "Finding",
    "MASK_PREFIX",
    "NOT_SECRET_FIELDS",
    "patterns",
    "PLAIN",
    "Redactor",
    "SECRET",
    "SECRET_FIELD_FINDING",
    "SECRET_FIELD_WORDS",
]

CREDENTIAL_FIELD_FINDING = "credential_field"
"""``Finding.pattern`` for a dropped credential field."""
SECRET_FIELD_FINDING = "secret_field"
"""``Finding.pattern`` for a value masked whole under a secret-like field name."""

# Key classification is cached, but keys can be data (ids as keys), so the cache is bounded.
_KEY_CACHE_MAX = 4096
_MAX_ROUNDS = 16
_MIN_ENTROPY_LEN = 12
_KEY_WORD_RE = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_IDENTIFIER_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


@dataclass(frozen=True, slots=True)
class Finding:
    """One thing ``Redactor.redact`` would mask or drop.

    ``pattern`` is a ``Pattern`` name, ``"credential_field"`` for a dropped field or
    ``"secret_field"`` for a whole value masked under a secret-like name. ``path`` locates the
    value: ``.key`` per dict level (``["key"]`` when the key is not identifier-like), ``[i]``
    per list index, ``""`` for the root.
    """

    pattern: str
    path: str


def _key_path(path: str, key: object) -> str:
    k = key if isinstance(key, str) else str(key)
    if _IDENTIFIER_RE.fullmatch(k):
        return f"{path}.{k}" if path else k
    quoted = k.replace("\\", "\\\\").replace('"', '\\"')
    return f'{path}["{quoted}"]'


def _words(name: str) -> list[str]:
    return [part.lower() for part in _KEY_WORD_RE.findall(name)]


class Redactor:
    """Masks credential-shaped strings and drops credential fields in JSON-like values.

    ``extra_patterns`` are ``(name, regex)`` pairs from the project's configuration; a regex
    with a group named ``secret`` masks only that group. ``secret_field_names`` are the words
    that make a field name secret-like: the name is split on ``_ - .`` and camelCase, and it
    is secret-like when one part, or several adjacent parts run together, equal a word
    (``api_key`` and ``apiKey`` give ``apikey``; ``max_tokens`` gives nothing), unless the
    whole name is one of ``NOT_SECRET_FIELDS``.
    """

    __slots__ = ("_extras", "_key_kinds", "_secret_words")

    def __init__(
        self,
        *,
        extra_patterns: Sequence[tuple[str, str]] = (),
        secret_field_names: Iterable[str] = SECRET_FIELD_WORDS,
    ) -> None:
        """Compile ``extra_patterns``; raise ``ValueError`` naming any pattern that is invalid."""
        extras: list[tuple[str, re.Pattern[str], int]] = []
        for name, source in extra_patterns:
            if not isinstance(name, str) or not name:
                raise ValueError(f"redaction pattern name must be a non-empty string: {name!r}")
            if name in (CREDENTIAL_FIELD_FINDING, SECRET_FIELD_FINDING):
                raise ValueError(f"redaction pattern name {name!r} is reserved")
            if not isinstance(source, str):
                raise ValueError(f"redaction pattern {name!r}: regex must be a string")
            try:
                regex = re.compile(source)
            except re.error as exc:
                raise ValueError(f"redaction pattern {name!r}: invalid regex: {exc}") from None
            if regex.match("") is not None:
                # It would "mask" the empty string between every two characters.
                raise ValueError(f"redaction pattern {name!r} matches the empty string")
            extras.append((name, regex, regex.groupindex.get("secret", 0)))
        self._extras = tuple(extras)
        self._secret_words = frozenset("".join(_words(w)) for w in secret_field_names) - {""}
        self._key_kinds: dict[str, int] = {}

    @property
    def has_extras(self) -> bool:
        """Whether project patterns are set (they may match strings of any length)."""
        return bool(self._extras)

    def mask(self, secret: str) -> str:
        """Return the mask that replaces ``secret`` in redacted values."""
        return mask(secret)

    def redact(self, value: object) -> object:
        """Return ``value`` with credential fields dropped and secrets masked.

        ``value`` is JSON-like (dict, list, str, int, float, bool, None; tuples are treated
        like lists). Dict keys are kept as they are; only values are rewritten. Anything that
        needs no change is returned as the same object, containers included, and any other
        object is returned unchanged. Redacting a redacted value changes nothing.
        """
        return self._walk(value, False)

    def redact_under(self, value: object, secret_field: bool) -> object:
        """``value`` as ``redact`` leaves it where it sits under a secret-like field name
        (``secret_field``) or not; for walks that do their own traversal."""
        return self._walk(value, secret_field)

    def redact_text(self, text: str) -> str:
        """``text`` with every credential-shaped substring masked (no field-name rule)."""
        if len(text) < MIN_SECRET_LEN and not self._extras:
            return text
        return self._mask_text(unescape_masks(text))[0]

    def redact_leaf(self, text: str, secret_field: bool) -> str:
        """One string as ``redact`` leaves it, ``secret_field`` saying whether it sits under a
        secret-like field name; for walks that do their own traversal (normalization)."""
        if (
            len(text) < MIN_SECRET_LEN
            and not self._extras
            and (not secret_field or len(text) < _MIN_ENTROPY_LEN)
        ):
            return text
        return self._redact_str(text, secret_field)

    def field_kind(self, key: str) -> int:
        """What a field name means: ``PLAIN``, ``DROP`` (a credential) or ``SECRET``."""
        kinds = self._key_kinds
        kind = kinds.get(key)
        if kind is None:
            if len(kinds) >= _KEY_CACHE_MAX:
                kinds.clear()
            kind = self._classify_key(key)
            kinds[key] = kind
        return kind

    def is_plain_label(self, label: str) -> bool:
        """Whether a label in free text (``next_page_token`` in ``next_page_token=…``) names
        something that is not a secret."""
        return "".join(_words(label)) in NOT_SECRET_FIELDS

    def redact_pairs(self, pairs: Sequence[Sequence[str]]) -> list[list[str]]:
        """``(name, value)`` pairs (a URL's query) redacted by name as a dict's fields are:
        a credential's value is masked whole, a secret-like name's random value too."""
        out: list[list[str]] = []
        for name, value in pairs:
            kind = self.field_kind(name)
            if kind == DROP and value:
                out.append([name, mask(value)])
            else:
                out.append([name, self.redact_leaf(value, kind == SECRET)])
        return out

    def redact_stream(self, stream: Any) -> Any:
        """A stored stream (``{"events": [...], …}``) redacted: the text each stream of
        deltas carries is masked as a whole, its pieces rewritten to agree, then each
        event is redacted as any value is."""
        if type(stream) is dict and type(stream.get("events")) is list:
            stream = mask_split_text(stream, self._spans)
        return self.redact(stream)

    def findings(self, value: object, *, path: str = "") -> list[Finding]:
        """Return what ``redact`` would mask or drop in ``value``, each with its path.

        A string holding several matches of one pattern is reported once for that pattern.
        """
        out: list[Finding] = []
        self._find(value, path, False, out)
        return out

    def scan_text(self, text: str) -> list[str]:
        """Return the names of the patterns found in raw ``text``, each once, in the order found.

        Meant for auditing a cassette line by line, where a secret could sit anywhere
        (including inside JSON string escapes). Masks never match. As in ``redact``, matches
        do not overlap: ``Bearer sk-…`` is reported as ``bearer`` only.
        """
        return list(dict.fromkeys(self._mask_text(unescape_masks(text))[1]))

    # -- internals ----------------------------------------------------------------------

    def _classify_key(self, key: str) -> int:
        if key.lower() in CREDENTIAL_FIELDS:
            return DROP
        parts = _words(key)
        if "".join(parts) in NOT_SECRET_FIELDS:
            return PLAIN
        words = self._secret_words
        for i in range(len(parts)):
            run = ""
            for part in parts[i:]:
                run += part
                if run in words:
                    return SECRET
        return PLAIN

    def _spans(self, text: str) -> list[Span]:
        spans: list[Span] = []
        if len(text) >= MIN_SECRET_LEN:
            spans = builtin_spans(text)
            lowered = text.lower()
            if any(hint in lowered for hint in ASSIGNMENT_HINTS):
                spans = assignment_spans(text, spans, self.is_plain_label)
        if self._extras:
            spans = self._extra_spans(text, spans)
        return spans

    def _extra_spans(self, text: str, spans: list[Span]) -> list[Span]:
        masks = [m.span() for m in MASK_RE.finditer(text)] if "«" in text else []
        found: list[Span] = []
        for name, regex, group in self._extras:
            for m in regex.finditer(text):
                start, end = m.span(group)
                if start < 0 or start == end:
                    # The secret group did not take part; the whole match is the secret.
                    start, end = m.span()
                if start == end:
                    continue
                # A user regex may well match inside one of our masks; re-masking it would
                # break idempotence.
                if any(ms < end and start < me for ms, me in masks):
                    continue
                found.append((name, start, end))
        if not found:
            return spans
        merged: list[Span] = []
        for name, start, end in sorted(spans + found, key=lambda s: (s[1], -s[2])):
            if merged and start < merged[-1][2]:
                # Overlapping matches are masked as one, so no part of either survives.
                prev_name, prev_start, prev_end = merged[-1]
                merged[-1] = (prev_name, prev_start, max(prev_end, end))
            else:
                merged.append((name, start, end))
        return merged

    def _mask_text(self, text: str) -> tuple[str, list[str]]:
        """Return ``text`` with every match masked, and the names of the patterns that matched.

        Repeats until nothing matches: a mask can change what a neighbour's boundary check
        sees (``AKIA…`` glued to a webhook URL only qualifies once the URL is a mask), and
        redacting twice must change nothing. Each round leaves fewer unmasked characters (user
        patterns never match inside a mask), so this ends; the cap is insurance that a
        recorder never hangs. Only strings that held a secret get a second round.
        """
        spans = self._spans(text)
        if not spans:
            return text, []
        names: list[str] = []
        for _ in range(_MAX_ROUNDS):
            names.extend(name for name, _, _ in spans)
            text = apply_masks(text, spans)
            spans = self._spans(text)
            if not spans:
                break
        return text, names

    def _redact_str(self, text: str, secret_field: bool) -> str:
        result = self._mask_text(unescape_masks(text))[0]
        # Judged after pattern masking: what is left is what would be stored in clear.
        if secret_field and looks_random(result):
            return mask(text)
        return result

    def _walk(self, value: object, secret_field: bool) -> object:
        if isinstance(value, str):
            return self.redact_leaf(value, secret_field)
        if secret_field and type(value) is int and secret_number(value):
            return mask(str(value))
        if isinstance(value, dict):
            return self._walk_dict(value)
        if isinstance(value, list):
            new = self._walk_items(value, secret_field)
            return value if new is None else new
        if isinstance(value, tuple):
            new = self._walk_items(value, secret_field)
            return value if new is None else tuple(new)
        return value

    def _walk_dict(self, value: dict[object, object]) -> object:
        out: dict[object, object] | None = None
        walk = self._walk
        field_kind = self.field_kind
        for i, (k, v) in enumerate(value.items()):
            kind = field_kind(k) if isinstance(k, str) else PLAIN
            if kind == DROP:
                if out is None:
                    out = dict(islice(value.items(), i))
                continue
            new = walk(v, kind == SECRET)
            if out is not None:
                out[k] = new
            elif new is not v:
                out = dict(islice(value.items(), i))
                out[k] = new
        return value if out is None else out

    def _walk_items(
        self, value: list[object] | tuple[object, ...], secret_field: bool
    ) -> list[object] | None:
        # Items of a list under a secret-like name ({"secrets": [...]}) count as under it.
        out: list[object] | None = None
        walk = self._walk
        for i, v in enumerate(value):
            new = walk(v, secret_field)
            if out is not None:
                out.append(new)
            elif new is not v:
                out = list(value[:i])
                out.append(new)
        return out

    def _find(self, value: object, path: str, secret_field: bool, out: list[Finding]) -> None:
        if isinstance(value, str):
            result, names = self._mask_text(unescape_masks(value))
            out.extend(Finding(name, path) for name in dict.fromkeys(names))
            if secret_field and looks_random(result):
                out.append(Finding(SECRET_FIELD_FINDING, path))
        elif secret_field and type(value) is int and secret_number(value):
            out.append(Finding(SECRET_FIELD_FINDING, path))
        elif isinstance(value, dict):
            for k, v in value.items():
                kind = self.field_kind(k) if isinstance(k, str) else PLAIN
                sub = _key_path(path, k)
                if kind == DROP:
                    out.append(Finding(CREDENTIAL_FIELD_FINDING, sub))
                else:
                    self._find(v, sub, kind == SECRET, out)
        elif isinstance(value, (list, tuple)):
            for i, v in enumerate(value):
                self._find(v, f"{path}[{i}]", secret_field, out)


def secret_number(value: int) -> bool:
    """Whether an integer under a secret-like field name (``{"pin": 928374650192837465}``)
    is long and random enough to be a secret, judged on its digits as a string would be."""
    return looks_random(str(value))
