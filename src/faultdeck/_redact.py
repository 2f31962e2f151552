"""Masking of credential-shaped strings and removal of credential fields in JSON-like values.

Three rules, applied to every value before a cassette line is written:

- a dict key in ``CREDENTIAL_FIELDS`` (any case) is dropped with its value;
- every substring of a string value that one of ``PATTERNS`` (or a user pattern) matches is
  replaced by its mask, ``«redacted:sha256:<8 hex>»``, the first 8 hex digits of the SHA-256 of
  the secret's UTF-8 bytes: equal secrets get equal masks, so a replayed run still shows that
  two calls used the same key, without storing it;
- a string under a secret-like field name (``password``, ``client_secret``, ``apiKey``, …) is
  masked whole when it looks random (at least 12 characters and 3 bits of entropy per
  character), so ``{"token": "abc"}`` or ``{"max_tokens": "1024"}`` stay readable.

Masks never match a pattern, so redacting twice changes nothing.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import islice

from ._normalize import CREDENTIAL_FIELDS

MASK_PREFIX = "«redacted:sha256:"
"""How every mask starts; 8 lower-case hex digits and ``»`` follow."""
_MASK_SUFFIX = "»"

SECRET_FIELD_WORDS: frozenset[str] = frozenset(
    {
        "password",
        "passwd",
        "passphrase",
        "secret",
        "secrets",
        "token",
        "credential",
        "credentials",
        "auth",
        "authorization",
        "apikey",
        "accesskey",
        "privatekey",
        "clientsecret",
    }
)
"""Words that make a field name secret-like (see ``Redactor``); compared without separators."""

CREDENTIAL_FIELD_FINDING = "credential_field"
"""``Finding.pattern`` for a dropped credential field."""
SECRET_FIELD_FINDING = "secret_field"
"""``Finding.pattern`` for a value masked whole under a secret-like field name."""

# A string shorter than this cannot hold a built-in secret (the shortest is a Slack token,
# "xoxb-" and 10 more), so the regex is skipped for the many short strings of a call.
_MIN_SECRET_LEN = 15
_MIN_ENTROPY_LEN = 12
_MIN_ENTROPY_BITS = 3.0
# Key classification is cached, but keys can be data (ids as keys), so the cache is bounded.
_KEY_CACHE_MAX = 4096
_MAX_ROUNDS = 16

_MASK_RE = re.compile(r"«redacted:sha256:[0-9a-f]{8}»")
# Masks and other faultdeck placeholders («id:3», «ts») are ours, not the caller's entropy.
_TOKEN_RE = re.compile(r"«[^«»]{0,64}»")
_KEY_WORD_RE = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_IDENTIFIER_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")

_PLAIN = 0
_DROP = 1
_SECRET = 2


@dataclass(frozen=True, slots=True)
class Pattern:
    """A named credential shape.

    ``name`` is what ``scan`` and ``Redactor.findings`` report, never the secret itself. When
    ``regex`` has a group named ``secret``, only that group is masked and the rest of the match
    (a ``Bearer`` prefix, an ``aws_secret_access_key=`` label) is kept.
    """

    name: str
    regex: re.Pattern[str]


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


def _after_prefix(prefix: str) -> str:
    # Placed after the prefix rather than before it so every branch of the combined regex
    # starts with a literal, which lets the regex engine skip to candidate characters instead
    # of trying each branch at every position (~30x faster on plain text). The second
    # lookbehind accepts a JSON escape (\n, \t, ...) right before the prefix, so scan_text
    # still sees a key at the start of a line inside a JSON string.
    return f"(?:(?<![A-Za-z0-9]{prefix})|(?<=\\\\[nrtbf]{prefix}))"


# (name, possible first characters, rest of the regex). Each first character becomes its own
# literal-led branch of the combined regex; order matters where two shapes share a start
# (anthropic's "sk-ant-" must win over openai's "sk-").
_BUILTIN_ROWS: tuple[tuple[str, str, str], ...] = (
    ("anthropic_key", "s", "k-ant-" + _after_prefix("sk-ant-") + r"[A-Za-z0-9_-]{20,}"),
    ("openai_key", "s", "k-" + _after_prefix("sk-") + r"[A-Za-z0-9_-]{20,}"),
    (
        "aws_access_key_id",
        "A",
        "[KS]IA" + _after_prefix("A[KS]IA") + r"[0-9A-Z]{16}(?![0-9A-Za-z])",
    ),
    (
        "aws_secret_access_key",
        "Ss",
        r"(?i:ecret[_.-]?access[_.-]?key)[\s\"'\\]{0,8}[:=][\s\"'\\]{0,8}"
        r"(?P<secret>[A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])",
    ),
    ("github_token", "g", "h[pousr]_" + _after_prefix("gh[pousr]_") + r"[A-Za-z0-9]{36,}"),
    ("github_token", "g", "ithub_pat_" + _after_prefix("github_pat_") + r"[A-Za-z0-9_]{22,}"),
    ("slack_token", "x", "ox[abposr]-" + _after_prefix("xox[abposr]-") + r"[0-9A-Za-z-]{10,}"),
    ("slack_token", "x", "app-" + _after_prefix("xapp-") + r"[0-9A-Za-z-]{10,}"),
    (
        "slack_webhook",
        "h",
        r"ttps?://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/+-]{20,}",
    ),
    (
        "google_api_key",
        "A",
        "Iza" + _after_prefix("AIza") + r"[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])",
    ),
    (
        "jwt",
        "e",
        "yJ" + _after_prefix("eyJ") + r"[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*",
    ),
    (
        "pem_private_key",
        "-",
        # Without an END line (a truncated output) the base64 body is still taken.
        r"----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
        r"(?:[\s\S]*?-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|[A-Za-z0-9+/=\s\\]*)",
    ),
    (
        "bearer",
        "Bb",
        r"(?i:earer"
        r"(?:(?<![A-Za-z0-9]bearer)|(?<=\\[nrtbf]bearer)))"
        r"[ \t]+(?P<secret>[A-Za-z0-9._~+/=-]{16,})",
    ),
)


def _first_class(chars: str) -> str:
    return re.escape(chars) if len(chars) == 1 else "[" + re.escape(chars) + "]"


def _builtin_patterns() -> tuple[Pattern, ...]:
    sources: dict[str, list[str]] = {}
    for name, first, rest in _BUILTIN_ROWS:
        sources.setdefault(name, []).append(_first_class(first) + rest)
    return tuple(
        Pattern(name, re.compile(srcs[0] if len(srcs) == 1 else "|".join(f"(?:{s})" for s in srcs)))
        for name, srcs in sources.items()
    )


# A value labelled as a secret in free text: `client_secret=…`, `"password": "…"`,
# `api_key: …`, as error messages and quoted bodies carry them. The label must end the word
# before the separator, so `max_tokens: 4096` is a count, and the value must look random
# (checked in code), so `token: none` stays readable.
_ASSIGNMENT = re.compile(
    r"(?i)(?<![A-Za-z0-9])[A-Za-z0-9_.-]*?"
    r"(?:password|passwd|passphrase|secret|token|api[_-]?key|private[_-]?key|access[_-]?key"
    r"|credential)s?"
    r"[\\\"'\s]{0,4}[:=][\\\"'\s]{0,4}"
    r"(?P<secret>[A-Za-z0-9_./+=~!@#$%^&*-]{12,})"
)
_ASSIGNMENT_HINTS = ("pass", "secret", "token", "key", "credential")

PATTERNS: tuple[Pattern, ...] = (*_builtin_patterns(), Pattern("secret_assignment", _ASSIGNMENT))
"""The built-in credential shapes, in matching priority order."""


def _combined() -> tuple[re.Pattern[str], list[tuple[str, int]]]:
    # One alternation searched once per string. Each branch is `<literal>(?P<_fdN>...)`; the
    # outer named group closes last, so `lastindex` identifies the branch even when it holds
    # a `secret` group.
    branches: list[str] = []
    owners: list[tuple[str, str | None]] = []
    for name, firsts, rest in _BUILTIN_ROWS:
        for first in firsts:
            n = len(branches)
            has_secret = "(?P<secret>" in rest
            body = rest.replace("(?P<secret>", f"(?P<_fd{n}s>")
            branches.append(f"{re.escape(first)}(?P<_fd{n}>{body})")
            owners.append((name, f"_fd{n}s" if has_secret else None))
    regex = re.compile("|".join(branches))
    # Indexed by group number; only the branch groups' slots are ever read. The int is the
    # group to mask, 0 meaning the whole match.
    by_index: list[tuple[str, int]] = [("", 0)] * (regex.groups + 1)
    for n, (name, secret) in enumerate(owners):
        by_index[regex.groupindex[f"_fd{n}"]] = (
            name,
            regex.groupindex[secret] if secret is not None else 0,
        )
    return regex, by_index


_COMBINED, _BRANCH_BY_INDEX = _combined()


def _mask(secret: str) -> str:
    # surrogatepass: strings decoded from JSON may hold lone surrogates; hashing must not fail.
    digest = hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()
    return MASK_PREFIX + digest[:8] + _MASK_SUFFIX


def _apply_masks(text: str, spans: list[tuple[str, int, int]]) -> str:
    pieces: list[str] = []
    pos = 0
    for _, start, end in spans:
        pieces.append(text[pos:start])
        pieces.append(_mask(text[start:end]))
        pos = end
    pieces.append(text[pos:])
    return "".join(pieces)


def _entropy(text: str) -> float:
    n = len(text)
    total = 0.0
    for ch in set(text):
        c = text.count(ch)
        total += c * math.log2(c)
    return math.log2(n) - total / n


def _looks_random(text: str) -> bool:
    if "«" in text:
        text = _TOKEN_RE.sub("", text)
    return len(text) >= _MIN_ENTROPY_LEN and _entropy(text) >= _MIN_ENTROPY_BITS


def _assignment_spans(text: str, spans: list[tuple[str, int, int]]) -> list[tuple[str, int, int]]:
    found = [
        ("secret_assignment", *m.span("secret"))
        for m in _ASSIGNMENT.finditer(text)
        if _looks_random(m.group("secret"))
        and not any(s < m.end("secret") and m.start("secret") < e for _, s, e in spans)
    ]
    if not found:
        return spans
    return sorted(spans + found, key=lambda span: span[1])


def _key_path(path: str, key: object) -> str:
    k = key if isinstance(key, str) else str(key)
    if _IDENTIFIER_RE.fullmatch(k):
        return f"{path}.{k}" if path else k
    quoted = k.replace("\\", "\\\\").replace('"', '\\"')
    return f'{path}["{quoted}"]'


def _normalize_word(word: str) -> str:
    return "".join(_KEY_WORD_RE.findall(word)).lower()


class Redactor:
    """Masks credential-shaped strings and drops credential fields in JSON-like values.

    ``extra_patterns`` are ``(name, regex)`` pairs from the project's configuration; a regex
    with a group named ``secret`` masks only that group. ``secret_field_names`` are the words
    that make a field name secret-like: the name is split on ``_ - .`` and camelCase, and it
    is secret-like when one part, or several adjacent parts run together, equal a word
    (``api_key`` and ``apiKey`` give ``apikey``; ``max_tokens`` gives nothing).
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
        self._secret_words = frozenset(_normalize_word(w) for w in secret_field_names) - {""}
        self._key_kinds: dict[str, int] = {}

    def mask(self, secret: str) -> str:
        """Return the mask that replaces ``secret`` in redacted values."""
        return _mask(secret)

    def redact(self, value: object) -> object:
        """Return ``value`` with credential fields dropped and secrets masked.

        ``value`` is JSON-like (dict, list, str, int, float, bool, None; tuples are treated
        like lists). Dict keys are kept as they are; only values are rewritten. Anything that
        needs no change is returned as the same object, containers included, and any other
        object is returned unchanged. Redacting a redacted value changes nothing.
        """
        return self._walk(value, False)

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
        return list(dict.fromkeys(self._mask_text(text)[1]))

    # -- internals ----------------------------------------------------------------------

    def _key_kind(self, key: str) -> int:
        kinds = self._key_kinds
        kind = kinds.get(key)
        if kind is None:
            if len(kinds) >= _KEY_CACHE_MAX:
                kinds.clear()
            kind = self._classify_key(key)
            kinds[key] = kind
        return kind

    def _classify_key(self, key: str) -> int:
        if key.lower() in CREDENTIAL_FIELDS:
            return _DROP
        parts = [p.lower() for p in _KEY_WORD_RE.findall(key)]
        words = self._secret_words
        for i in range(len(parts)):
            run = ""
            for part in parts[i:]:
                run += part
                if run in words:
                    return _SECRET
        return _PLAIN

    def _spans(self, text: str) -> list[tuple[str, int, int]]:
        spans: list[tuple[str, int, int]] = []
        if len(text) >= _MIN_SECRET_LEN:
            search = _COMBINED.search
            by_index = _BRANCH_BY_INDEX
            m = search(text)
            while m is not None:
                name, group = by_index[m.lastindex or 0]
                start, end = m.span(group)
                spans.append((name, start, end))
                m = search(text, m.end())
            lowered = text.lower()
            if any(hint in lowered for hint in _ASSIGNMENT_HINTS):
                spans = _assignment_spans(text, spans)
        if self._extras:
            spans = self._extra_spans(text, spans)
        return spans

    def _extra_spans(
        self, text: str, spans: list[tuple[str, int, int]]
    ) -> list[tuple[str, int, int]]:
        masks = [m.span() for m in _MASK_RE.finditer(text)] if "«" in text else []
        found: list[tuple[str, int, int]] = []
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
        merged: list[tuple[str, int, int]] = []
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
            text = _apply_masks(text, spans)
            spans = self._spans(text)
            if not spans:
                break
        return text, names

    def _redact_str(self, text: str, secret_field: bool) -> str:
        result = self._mask_text(text)[0]
        # Judged after pattern masking: what is left is what would be stored in clear.
        if secret_field and _looks_random(result):
            return _mask(text)
        return result

    def _walk(self, value: object, secret_field: bool) -> object:
        if isinstance(value, str):
            # Too short for any built-in shape, and for the secret-field rule when it applies.
            if (
                len(value) < _MIN_SECRET_LEN
                and not self._extras
                and (not secret_field or len(value) < _MIN_ENTROPY_LEN)
            ):
                return value
            return self._redact_str(value, secret_field)
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
        key_kind = self._key_kind
        for i, (k, v) in enumerate(value.items()):
            kind = key_kind(k) if isinstance(k, str) else _PLAIN
            if kind == _DROP:
                if out is None:
                    out = dict(islice(value.items(), i))
                continue
            new = walk(v, kind == _SECRET)
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
            result, names = self._mask_text(value)
            out.extend(Finding(name, path) for name in dict.fromkeys(names))
            if secret_field and _looks_random(result):
                out.append(Finding(SECRET_FIELD_FINDING, path))
        elif isinstance(value, dict):
            for k, v in value.items():
                kind = self._key_kind(k) if isinstance(k, str) else _PLAIN
                sub = _key_path(path, k)
                if kind == _DROP:
                    out.append(Finding(CREDENTIAL_FIELD_FINDING, sub))
                else:
                    self._find(v, sub, kind == _SECRET, out)
        elif isinstance(value, (list, tuple)):
            for i, v in enumerate(value):
                self._find(v, f"{path}[{i}]", secret_field, out)
