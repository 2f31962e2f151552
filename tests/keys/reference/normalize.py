"""Rules applied to a call's args before hashing, and to its outputs before storing.

On args, in one walk and in this order: transport-only fields stripped; credential-shaped
strings masked (when a ``Redactor`` is given and the walk redacts, so that a secret enters
the key as its mask); volatile ids renamed (``«id:N»`` in order of first appearance in the
run); timestamps and declared volatile fields replaced by placeholders of the same type;
absolute paths under the project root made relative; then the user's rule for that call, if
any. Numbers, booleans and every other string are left as they are: semantic arguments
(filters, limits, queries) are never touched.

On outputs: ids are learned (so an id returned at step 3 and sent again at step 4 gets the
same placeholder in both runs), and wall-clock values are replaced by same-type placeholders
that depend only on the call's ``seq``, so re-recordings diff cleanly and SDK parsers still
accept the replayed bodies.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from faultdeck._base.errors import ArgumentError

from .ids import (
    _GENERATED,
    _PROVIDER_ID,
    _PROVIDER_PREFIXES,
    _UUID,
    IdMap,
    collect_ids,
    could_be_id,
    is_id_field,
)
from .names import CREDENTIAL_FIELDS, DROP, SECRET
from .outputs import INT_LIMIT, PROVIDER_TIMES, is_epoch, is_time_field, locate, scrub
from .redact import Redactor

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
_NAMES_CACHED = 4096
# Shorter strings cannot hold a secret of any built-in shape nor pass the secret-field rule.
_REDACT_MIN = 12


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
        volatile: extra field names whose values are volatile; replaced by same-type
            placeholders in args and ignored by diffs.
        root: the project root; absolute paths below it are made relative. ``None`` to keep.
        output_times: replace the provider's wall-clock metadata (``PROVIDER_TIMES``) in
            outputs by seq-based placeholders.
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
    """

    __slots__ = ("_config", "_names", "_plain", "_redacting", "_redactor")

    def __init__(
        self, config: NormalizeConfig | None = None, redactor: Redactor | None = None
    ) -> None:
        self._config = config or NormalizeConfig()
        self._redactor = redactor
        self._names: dict[str, int] = {}
        # One walk, made twice: with redaction and without (replay tries that first).
        self._plain = self._make_walk(None)
        self._redacting = self._make_walk(redactor) if redactor is not None else self._plain

    @property
    def config(self) -> NormalizeConfig:
        """The rules in force."""
        return self._config

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
        output_ids = self.output_ids
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
                    if ids.waiting and could_be_id(value):
                        ids.drain(output_ids)
                    known = ids.get(value)
                    if known is not None:
                        return known
                    if (
                        (n == 36 and uuid(value))
                        or (value.startswith(_PROVIDER_PREFIXES) and provider(value))
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
        """Return ``out`` with the values of volatile fields (the provider's wall-clock
        metadata unless ``output_times`` is off, and the declared ``volatile``) replaced by
        placeholders derived from ``seq``; nothing else.

        Returns ``out`` itself when nothing changed.
        """
        declared = frozenset(self._config.volatile)
        times = PROVIDER_TIMES if self._config.output_times else frozenset()
        return scrub(out, seq, times | declared, declared)
