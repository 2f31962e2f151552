"""Rules applied to a call's args before hashing, and to its outputs before storing.

On args, in one walk and in this order: transport-only fields stripped; credential-shaped
strings masked (when a ``Redactor`` is given and the walk redacts, so that a secret enters
the key as its mask); volatile ids renamed (``«id:N»`` in order of first appearance in the
run); timestamps and declared volatile fields replaced by placeholders of the same type;
absolute paths under the project root made relative; then the user's rule for that call, if
any. Numbers, booleans and every other string are left as they are: semantic arguments
(filters, limits, queries) are never touched.

On outputs: ids are learned (so an id returned at step 3 and sent again at step 4 gets the
same placeholder in both runs), and the values of volatile fields, and nothing else, are
stored as same-type placeholders that depend only on the call's ``seq`` (the provider
metadata that holds an answer's wall-clock time, ``outputs.PROVIDER_TIMES``, and the
declared ``volatile``), so re-recordings diff cleanly and SDK parsers still accept the
replayed bodies. What an output holds besides is content, stored as it came.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from .._base.errors import ArgumentError
from .ids import (
    _GENERATED,
    _PROVIDER_HEADS,
    _PROVIDER_ID,
    _PROVIDER_PREFIXES,
    _UUID,
    IdMap,
    collect_ids,
    could_be_id,
    is_id_field,
)
from .names import CREDENTIAL_FIELDS, DROP, SECRET
from .outputs import (
    _TIME_NAMES,
    _TIME_SUFFIXES,
    EPOCH_MS,
    EPOCH_S,
    INT_LIMIT,
    PROVIDER_TIMES,
    is_epoch,
    is_time_field,
    locate,
    scrub,
)
from .redact import Redactor, secret_number

Rule = Callable[[Any], Any]

# Transport-only fields: they say how a call travelled, not what it asked.
TRANSPORT_FIELDS = CREDENTIAL_FIELDS | frozenset(
    {"idempotency-key", "idempotency_key", "x-request-id", "request-id", "request_id"}
)

_DATETIME = re.compile(
    r"(\d{4}-\d{2}-\d{2})([T ])(\d{2}:\d{2}(?::\d{2})?)(\.\d+)?(Z|[+-]\d{2}:?\d{2})?"
)
# A field name's meaning to normalization, as bits; cached per name.
_STRIP, _VOLATILE, _TIME, _ID_FIELD, _SECRET = 1, 2, 4, 8, 16
_INT_RULES = _VOLATILE | _TIME | _SECRET
_NAMES_CACHED = 4096
# Shorter strings cannot hold a secret of any built-in shape nor pass the secret-field rule.
_REDACT_MIN = 12
# Part of ``Normalizer.fingerprint``: raise it when the walk changes what it makes of a value
# in a way the patterns and names it hashes do not show.
RULES_VERSION = 1


class _NotJSON(Exception):
    """The walk met a value JSON cannot hold; ``_locate`` then names it."""


@dataclass(frozen=True, slots=True)
class NormalizeConfig:
    """Which normalization rules run. Each is on by default and can be switched off.

    Args:
        strip_fields: field names (compared lower-case) removed from args anywhere.
        ids: rename volatile ids to ``«id:N»``.
        timestamps: replace date-times in args with ``«ts»`` and epoch numbers under
            time-named fields with 0.
        volatile: extra field names whose values are volatile: replaced by same-type
            placeholders in args and outputs, at any depth, and ignored by diffs.
        root: the project root; absolute paths below it are made relative. ``None`` to keep.
        output_times: store the provider metadata that holds an answer's wall-clock time
            (``created``, ``created_at``, …: ``outputs.PROVIDER_TIMES``) as seq-based
            placeholders. A date-time anywhere else in an output is content, never replaced.
        rules: per-call user rules, keyed by ``name`` or ``kind:name``, each taking the
            normalized args and returning the args to hash and store.
    """

    strip_fields: frozenset[str] = TRANSPORT_FIELDS
    ids: bool = True
    timestamps: bool = True
    volatile: frozenset[str] = frozenset()
    root: str | None = None
    output_times: bool = True
    rules: Mapping[str, Rule] = field(default_factory=dict)


class Normalizer:
    """Applies a ``NormalizeConfig`` to args and outputs.

    Args:
        config: the rules; every rule on by default.
        redactor: masks credential-shaped strings in args as they are normalized (so the
            key is made from what is stored); ``None`` to normalize only.

    Attributes:
        output_volatile: the field names whose values outputs store as placeholders, at any
            depth: ``outputs.PROVIDER_TIMES`` (unless ``output_times`` is off) and the
            declared ``volatile``. A cassette's header lists them.
        root_json: the project root's path prefix (with its separator) as JSON writes it
            inside a string, escapes and all; ``None`` without a root.
    """

    __slots__ = (
        "_config",
        "_fingerprint",
        "_names",
        "_plain",
        "_redacting",
        "_redactor",
        "output_volatile",
        "root_json",
    )

    def __init__(
        self, config: NormalizeConfig | None = None, redactor: Redactor | None = None
    ) -> None:
        self._config = config = config or NormalizeConfig()
        self._redactor = redactor
        self._names: dict[str, int] = {}
        # One walk, made twice: with redaction and without (replay tries that first).
        self._plain = self._make_walk(None)
        self._redacting = self._make_walk(redactor) if redactor is not None else self._plain
        self._fingerprint = _fingerprint(config)
        times = PROVIDER_TIMES if config.output_times else frozenset()
        self.output_volatile: frozenset[str] = times | frozenset(config.volatile)
        prefix = (config.root.rstrip(os.sep) + os.sep) if config.root else None
        self.root_json = orjson.dumps(prefix)[1:-1] if prefix is not None else None

    @property
    def config(self) -> NormalizeConfig:
        """The rules in force."""
        return self._config

    @property
    def fingerprint(self) -> str:
        """The rules a key depends on, but for the project root and the run's ids, as 16
        hex: the fields stripped and volatile, whether ids and date-times are renamed, the
        names of the project's rules, and the shapes and names the walk looks for. A
        cassette's end line names the fingerprint its calls were keyed under (``rules``)."""
        return self._fingerprint

    def has_rule(self, kind: str, name: str) -> bool:
        """Whether a project rule applies to the call ``kind`` ``name``."""
        rules = self._config.rules
        return bool(rules) and (f"{kind}:{name}" in rules or name in rules)

    def may_move(self, args: Any) -> bool:
        """Whether normalizing ``args`` may make a path under the project root relative:
        the root's prefix stands somewhere in them (a field name too, or a string that only
        contains it: a superset, cheap to check)."""
        root = self.root_json
        if root is None:
            return False
        try:
            # (as ``asis.args_form`` looks: ``in`` tries an integer first, find parses its
            # arguments, both at a cost)
            return bool(orjson.dumps(args).partition(root)[1])
        except TypeError:  # what JSON cannot hold (a field normalization strips): assume so
            return True

    def args(self, kind: str, name: str, args: Any, ids: IdMap, *, redact: bool = True) -> Any:
        """Return the normalized copy of a call's args, renaming ids through ``ids``.

        Args:
            kind, name: the call, for its user rule.
            args: the args.
            ids: the run's id renaming.
            redact: mask credential-shaped strings too (when there is a redactor).

        Raises:
            ArgumentError: a value in args is not JSON; the error names the field.
        """
        try:
            out = (self._redacting if redact else self._plain)(args, 0, ids)
        except _NotJSON:
            strip = self._config.strip_fields
            path, detail = locate(args, "args", lambda k: k.lower() in strip)
            raise ArgumentError(path, detail) from None
        rules = self._config.rules
        if rules:
            rule = rules.get(f"{kind}:{name}") or rules.get(name)
            if rule is not None:
                out = rule(out)
                if redact and self._redactor is not None:
                    out = self._redactor.redact(out)  # what a rule adds is keyed as stored too
        return out

    def _flags(self, name: str) -> int:
        """What a field name means to normalization, computed once per name."""
        flags = self._names.get(name)
        if flags is None:
            config = self._config
            kind = self._redactor.field_kind(name) if self._redactor is not None else 0
            flags = (
                (_STRIP if name.lower() in config.strip_fields or kind == DROP else 0)
                | (_VOLATILE if name in config.volatile else 0)
                | (_TIME if config.timestamps and is_time_field(name) else 0)
                | (_ID_FIELD if is_id_field(name) else 0)
                | (_SECRET if kind == SECRET else 0)
            )
            if len(self._names) < _NAMES_CACHED:
                self._names[name] = flags
        return flags

    def _make_walk(self, redactor: Redactor | None) -> Callable[[Any, int, IdMap], Any]:  # noqa: C901 - the walk is the hot path; its steps stay inlined (measured)
        """The one walk of ``args``, as a closure over the rules (the hot path of every
        call). It carries each field's flags down, and no paths: only an error needs a path
        (``_locate``)."""
        config = self._config
        cached, flags_of = self._names, self._flags
        use_ids, timestamps = config.ids, config.timestamps
        root = config.root
        prefix = (root.rstrip(os.sep) + os.sep) if root else None
        cut = len(prefix) if prefix else 0
        redact_min = 0 if redactor is not None and redactor.has_extras else _REDACT_MIN
        redact = redactor.redact_leaf if redactor is not None else None
        mask = redactor.mask if redactor is not None else None
        # Shorter strings meet no rule but the root's prefix: no id, date-time or secret.
        short = 8 if redact is None else min(8, redact_min)
        output_ids = self.output_ids
        heads = _PROVIDER_HEADS
        uuid, provider, generated, datetime = (
            _UUID.fullmatch,
            _PROVIDER_ID.fullmatch,
            _GENERATED.fullmatch,
            _DATETIME.fullmatch,
        )

        def walk(value: Any, flags: int, ids: IdMap) -> Any:  # noqa: C901 - the hot path; its steps stay inlined (measured)
            cls = type(value)
            if cls is str:
                if flags & _VOLATILE:
                    return "«volatile»"
                n = len(value)
                if redact is not None and n >= redact_min:
                    value = redact(value, bool(flags & _SECRET))
                    n = len(value)
                # Ids are 8+ characters without spaces (see looks_like_id): prose skips this.
                if use_ids and n >= 8 and " " not in value:
                    if ids.pending and could_be_id(value):
                        ids.drain(output_ids)
                    known = ids.get(value)
                    if known is not None:
                        return known
                    if (
                        (n == 36 and uuid(value))
                        or (
                            value[:2] in heads
                            and value.startswith(_PROVIDER_PREFIXES)
                            and provider(value)
                        )
                        or (flags & _ID_FIELD and generated(value))
                    ):
                        return ids.name(value)
                if (
                    timestamps
                    and n >= 16
                    and value[4] == "-"
                    and value[10] in "T "
                    and datetime(value)
                ):
                    return "«ts»"
                if prefix is not None and value.startswith(prefix):
                    return value[cut:]
                return value
            if cls is dict:
                result: dict[str, Any] = {}
                for k, v in value.items():
                    if type(k) is not str:
                        raise _NotJSON
                    fl = cached.get(k)
                    if fl is None:
                        fl = flags_of(k)
                    if fl & _STRIP:
                        continue
                    # The leaves no rule can change are kept here, without a call (measured):
                    # booleans and null, plain ints, and strings too short for any rule but
                    # the root's prefix.
                    t = type(v)
                    if (
                        t is bool
                        or v is None
                        or (t is int and not fl & _INT_RULES and -INT_LIMIT <= v < INT_LIMIT)
                        or (
                            t is str
                            and len(v) < short
                            and not fl & _VOLATILE
                            and (prefix is None or not v.startswith(prefix))
                        )
                    ):
                        result[k] = v
                        continue
                    result[k] = walk(v, fl, ids)
                return result
            if cls is list or cls is tuple:
                return [walk(v, flags, ids) for v in value]
            if cls is bool or value is None:
                return value
            if cls is int or cls is float:
                if cls is int and not -INT_LIMIT <= value < INT_LIMIT:
                    raise _NotJSON
                if cls is float and not math.isfinite(value):
                    raise _NotJSON
                if flags & _VOLATILE or (flags & _TIME and is_epoch(value)):
                    return cls(0)
                if flags & _SECRET and mask is not None and cls is int and secret_number(value):
                    return mask(str(value))
                return value
            raise _NotJSON

        return walk

    def output_ids(self, out: Any) -> list[str]:
        """The volatile ids in an output, in order of appearance (empty when ids are off)."""
        if not self._config.ids:
            return []
        found: list[str] = []
        collect_ids(out, None, found)
        return found

    def scrub_output(self, out: Any, seq: int) -> Any:
        """Return ``out`` with the values of its volatile fields (``output_volatile``)
        replaced by placeholders derived from ``seq``, and nothing else.

        Returns ``out`` itself when nothing changed.
        """
        return scrub(out, seq, self.output_volatile, frozenset(self._config.volatile))


def _fingerprint(config: NormalizeConfig) -> str:
    """``Normalizer.fingerprint`` of ``config``."""
    facts = {
        "v": RULES_VERSION,
        "strip": sorted(config.strip_fields),
        "volatile": sorted(config.volatile),
        "ids": config.ids,
        "timestamps": config.timestamps,
        "rules": sorted(config.rules),
        "shapes": [_UUID.pattern, _PROVIDER_ID.pattern, _GENERATED.pattern, _DATETIME.pattern],
        "names": [sorted(CREDENTIAL_FIELDS), sorted(_TIME_NAMES), list(_TIME_SUFFIXES)],
        "numbers": [list(EPOCH_S), list(EPOCH_MS), str(INT_LIMIT)],
    }
    return hashlib.sha256(orjson.dumps(facts, option=orjson.OPT_SORT_KEYS)).hexdigest()[:16]
