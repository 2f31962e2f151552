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

from .._base.errors import ArgumentError
from .redact import CREDENTIAL_FIELDS, DROP, SECRET, Redactor

Rule = Callable[[Any], Any]

# Transport-only fields: they say how a call travelled, not what it asked.
TRANSPORT_FIELDS = CREDENTIAL_FIELDS | frozenset(
    {"idempotency-key", "idempotency_key", "x-request-id", "request-id", "request_id"}
)

_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
# Prefixes of the ids providers hand out (chatcmpl-…, call_…, toolu_…, resp_…).
_PROVIDER_NAMES = (
    "chatcmpl",
    "cmpl",
    "call",
    "toolu",
    "srvtoolu",
    "msg",
    "msgbatch",
    "resp",
    "req",
    "run",
    "fc",
    "rs",
    "ws",
    "item",
    "batch",
    "file",
    "asst",
    "thread",
    "step",
    "evt",
    "sess",
    "ctc",
    "mcp",
    "mcpr",
)
_PROVIDER_ID = re.compile(rf"(?:{'|'.join(_PROVIDER_NAMES)})[-_][A-Za-z0-9_-]{{6,}}")
_ID_CHARS = re.compile(r"[A-Za-z0-9_.:-]{8,}")
_DIGIT = re.compile(r"\d")
_GENERATED = re.compile(r"(?=[^\d]*\d)[A-Za-z0-9_.:-]{8,}")
_DATETIME = re.compile(
    r"(\d{4}-\d{2}-\d{2})([T ])(\d{2}:\d{2}(?::\d{2})?)(\.\d+)?(Z|[+-]\d{2}:?\d{2})?"
)
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_TIME_NAMES = frozenset({"created", "updated", "timestamp", "ts", "time", "now", "date"})
_TIME_SUFFIXES = ("_at", "_time", "_ts", "At")
_EPOCH_S = (1e9, 4e9)
_EPOCH_MS = (1e12, 4e12)
# 2000-01-01T00:00:00Z: placeholders count seconds from here by seq.
_PLACEHOLDER_EPOCH = 946684800
_INT_LIMIT = 2**63
_MISSING = object()
_PROVIDER_PREFIXES = tuple(f"{name}{sep}" for name in _PROVIDER_NAMES for sep in "-_")
# A field name's meaning to normalization, as bits; cached per name.
_STRIP, _VOLATILE, _TIME, _ID_FIELD, _SECRET = 1, 2, 4, 8, 16
_NAMES_CACHED = 4096
# Shorter strings cannot hold a secret of any built-in shape nor pass the secret-field rule.
_REDACT_MIN = 12


class _NotJSON(Exception):
    """The walk met a value JSON cannot hold; ``_locate`` then names it."""


def is_id_field(name: str) -> bool:
    """Whether a field name conventionally holds an identifier."""
    return name == "id" or name.endswith(("_id", "Id", "-id"))


def is_time_field(name: str) -> bool:
    """Whether a field name conventionally holds a wall-clock value."""
    return name in _TIME_NAMES or name.endswith(_TIME_SUFFIXES)


def looks_like_id(value: str, field_name: str | None) -> bool:
    """Whether a string is a generated identifier: a UUID, a provider id, or a
    generated-looking value (8+ id characters with a digit) under an id-named field."""
    n = len(value)
    if n == 36 and _UUID.fullmatch(value):
        return True
    if n >= 8 and _PROVIDER_ID.fullmatch(value):
        return True
    return field_name is not None and is_id_field(field_name) and bool(_GENERATED.fullmatch(value))


class IdMap:
    """Consistent renaming of volatile ids within one run, in order of first appearance."""

    __slots__ = ("_names", "_pending", "_tentative")

    def __init__(self) -> None:
        self._names: dict[str, str] = {}
        # Outputs whose ids are learned only when a later call could send one back: most
        # answers are never looked into, and the numbering comes out the same.
        self._pending: list[Any] = []
        # Ids named by a walk whose key may be thrown away (see ``tentative``).
        self._tentative: list[str] | None = None

    def __len__(self) -> int:
        return len(self._names)

    def get(self, raw: str) -> str | None:
        """The placeholder already given to ``raw``, if any."""
        return self._names.get(raw)

    def name(self, raw: str) -> str:
        """The placeholder of ``raw``, giving it the next one if it has none."""
        placeholder = self._names.get(raw)
        if placeholder is None:
            placeholder = f"«id:{len(self._names) + 1}»"
            self._names[raw] = placeholder
            if self._tentative is not None:
                self._tentative.append(raw)
        return placeholder

    def learn(self, ids: list[str]) -> None:
        """Give placeholders to ids found in an output, in order."""
        names = self._names
        for raw in ids:
            if raw not in names:
                names[raw] = f"«id:{len(names) + 1}»"

    def tentative(self) -> None:
        """From now on remember which ids ``name`` adds, until ``commit`` or ``rollback``.

        Outputs learned meanwhile are kept either way: learning comes before any naming in
        a walk, so dropping the walk's names leaves the numbering dense.
        """
        self._tentative = []

    def commit(self) -> None:
        """Keep the ids named since ``tentative``."""
        self._tentative = None

    def rollback(self) -> None:
        """Forget the ids named since ``tentative``."""
        for raw in self._tentative or ():
            del self._names[raw]
        self._tentative = None

    @property
    def waiting(self) -> bool:
        """Whether outputs wait to have their ids learned."""
        return bool(self._pending)

    def defer(self, output: Any) -> None:
        """Remember an output whose ids are learned when they may be needed (``drain``)."""
        self._pending.append(output)

    def drain(self, collect: Callable[[Any], list[str]]) -> None:
        """Learn the ids of every remembered output, in the order they came."""
        pending, self._pending = self._pending, []
        for output in pending:
            self.learn(collect(output))


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
        output_times: replace wall-clock values in outputs by seq-based placeholders.
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
            path, detail = _locate(args, "args", lambda k: k.lower() in strip)
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

    def _make_walk(self, redactor: Redactor | None) -> Callable[[Any, int, IdMap], Any]:
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

        def walk(value: Any, flags: int, ids: IdMap) -> Any:
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
                    if ids.waiting and _could_be_id(value):
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
                if cls is int and not -_INT_LIMIT <= value < _INT_LIMIT:
                    raise _NotJSON
                if cls is float and not math.isfinite(value):
                    raise _NotJSON
                if flags & _VOLATILE or (flags & _TIME and _is_epoch(value)):
                    return cls(0)
                return value
            raise _NotJSON

        return walk

    def output_ids(self, out: Any) -> list[str]:
        """The volatile ids in an output, in order of appearance (empty when ids are off)."""
        if not self._config.ids:
            return []
        found: list[str] = []
        _collect_ids(out, None, found)
        return found

    def scrub_output(self, out: Any, seq: int) -> Any:
        """Return ``out`` with wall-clock values replaced by placeholders derived from ``seq``.

        Returns ``out`` itself when nothing changed.
        """
        if not self._config.output_times:
            return out
        return _scrub(out, None, _PLACEHOLDER_EPOCH + seq)


def check_json(value: Any, where: str) -> None:
    """Raise ``ArgumentError`` naming the first value in an output that JSON cannot hold.

    Args:
        value: the output.
        where: what it is the output of, for the message.
    """
    found = _locate(value, "out", None)
    if found is not None:
        path, detail = found
        raise ArgumentError(f"{where}: {path}", detail)


def _locate(value: Any, path: str, skip: Callable[[str], bool] | None) -> Any:
    """``(path, what is wrong)`` of the first value JSON cannot hold, in walk order, or
    ``None``; dict keys for which ``skip`` is true are passed over, as normalization strips
    them."""
    stack: list[tuple[str, Any]] = [(path, value)]
    while stack:
        here, item = stack.pop()
        cls = type(item)
        if cls is dict:
            children = []
            for k, v in item.items():
                if type(k) is not str:
                    return (
                        f"{here}[{k!r}]",
                        f"dict key of type {type(k).__name__}; JSON keys are strings",
                    )
                if skip is None or not skip(k):
                    children.append((f"{here}.{k}", v))
            stack.extend(reversed(children))
        elif cls is list or cls is tuple:
            stack.extend(reversed([(f"{here}[{i}]", v) for i, v in enumerate(item)]))
        elif cls is float:
            if not math.isfinite(item):
                return here, f"{item} is not a JSON number; pass null or a string"
        elif cls is int:
            if not -_INT_LIMIT <= item < _INT_LIMIT:
                return here, "integer outside 64 bits; pass it as a string"
        elif cls is not str and cls is not bool and item is not None:
            return (
                here,
                f"{cls.__name__} is not a JSON value; convert it first (for example str(), "
                ".isoformat() or .model_dump(mode='json'); for SDK objects, record at the HTTP "
                "boundary with fd.http.Transport)",
            )
    return None


def _is_epoch(value: float) -> bool:
    return _EPOCH_S[0] <= value < _EPOCH_S[1] or _EPOCH_MS[0] <= value < _EPOCH_MS[1]


def _could_be_id(value: str) -> bool:
    """Whether ``value`` has the shape of some id an output could have handed out."""
    return bool(
        (len(value) == 36 and _UUID.fullmatch(value))
        or value.startswith(_PROVIDER_PREFIXES)
        or (_ID_CHARS.fullmatch(value) and _DIGIT.search(value))
    )


def _collect_ids(value: Any, field_name: str | None, found: list[str]) -> None:
    cls = type(value)
    if cls is str:
        # Shorter than any id: most of a model's answer is words, checked for free here.
        if len(value) >= 8 and looks_like_id(value, field_name):
            found.append(value)
    elif cls is dict:
        for k, v in value.items():
            _collect_ids(v, k, found)
    elif cls is list:
        for v in value:
            _collect_ids(v, field_name, found)


def _scrub(value: Any, field_name: str | None, stamp: int) -> Any:
    cls = type(value)
    if cls is dict:
        changed = False
        result: dict[str, Any] = {}
        for k, v in value.items():
            new = _scrub(v, k, stamp)
            changed = changed or new is not v
            result[k] = new
        return result if changed else value
    if cls is list:
        items = [_scrub(v, field_name, stamp) for v in value]
        if any(new is not old for new, old in zip(items, value, strict=True)):
            return items
        return value
    if cls is str:
        return _scrub_string(value, field_name, stamp)
    if (cls is int or cls is float) and field_name is not None and is_time_field(field_name):
        if _EPOCH_S[0] <= value < _EPOCH_S[1]:
            return cls(stamp)
        if _EPOCH_MS[0] <= value < _EPOCH_MS[1]:
            return cls(stamp * 1000)
    return value


def _scrub_string(value: str, field_name: str | None, stamp: int) -> str:
    if len(value) >= 16:
        match = _DATETIME.fullmatch(value)
        if match is not None:
            return _format_stamp(stamp, match)
    if (
        field_name is not None
        and len(value) == 10
        and is_time_field(field_name)
        and _DATE.fullmatch(value)
    ):
        return "2000-01-01"
    return value


def _format_stamp(stamp: int, match: re.Match[str]) -> str:
    seconds = stamp - _PLACEHOLDER_EPOCH
    hh, rest = divmod(seconds, 3600)
    mm, ss = divmod(rest, 60)
    days, hh = divmod(hh, 24)
    date = f"2000-01-{1 + days:02d}" if days < 31 else "2000-02-01"
    clock = (
        f"{hh:02d}:{mm:02d}:{ss:02d}" if match.group(3).count(":") == 2 else f"{hh:02d}:{mm:02d}"
    )
    fraction = match.group(4)
    frac = "." + "0" * (len(fraction) - 1) if fraction else ""
    return f"{date}{match.group(2)}{clock}{frac}{match.group(5) or ''}"
