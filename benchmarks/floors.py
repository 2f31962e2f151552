"""Contract floors: the least a keyed replay and a redacting recorder must do per call.

Each floor is straight-line code doing only what faultdeck's contract requires of a call,
with faultdeck's own rules (its regexes, its transport fields, its ``Redactor``), so that
faultdeck's cost over the floor is what its structure adds, not what its contract needs.

    replay floor   per call: normalize args (transport fields stripped, known ids renamed
                   through a dict, UUID / provider / id-field ids named, date-times → «ts»,
                   project paths made relative; only strings of 8+ characters without
                   spaces are looked at for ids), canonical JSON of {"v","kind","name",
                   "args"} + sha256 (16 hex), a deque.popleft from a dict of per-key
                   deques, a tuple appended to a log, a fresh copy of the answer.
                   No redaction: faultdeck's replay keys args unredacted first.
    record floor   per call: one walk of the args (normalize + redact), the key, the live
                   call, one walk of the answer (check it is JSON, store the provider's
                   volatile fields as placeholders, redact, learn its ids), the line
                   (orjson of the entry object),
                   one write + flush.

The benchmarks check, before timing, that a floor gives the keys (replay) or the lines
(record, all but ``ms``) faultdeck wrote, so a floor cannot be cheaper by doing less.
"""

from __future__ import annotations

import hashlib
import math
import os
import time
from collections import deque
from collections.abc import Callable, Iterable
from typing import IO, Any

import orjson

import faultdeck as fd
from faultdeck._keys.ids import _GENERATED, _PROVIDER_ID, _PROVIDER_PREFIXES, _UUID, looks_like_id
from faultdeck._keys.names import DROP, SECRET
from faultdeck._keys.normalize import _DATETIME, TRANSPORT_FIELDS
from faultdeck._keys.outputs import (
    INT_LIMIT,
    PLACEHOLDER_EPOCH,
    PROVIDER_TIMES,
    is_epoch,
    is_time_field,
    stand_in,
)
from faultdeck._keys.redact import Redactor

Walk = Callable[[Any, int], Any]
_STRIP, _ID_FIELD, _SECRET, _TIME, _DROP = 1, 2, 4, 8, 16
_SORT = orjson.OPT_SORT_KEYS
_LINE = orjson.OPT_APPEND_NEWLINE
_REDACT_MIN = 12  # shorter strings hold no built-in secret shape (as faultdeck's walk)


def _field_flags(
    strip: frozenset[str], redactor: Redactor | None
) -> tuple[dict[str, int], Callable[[str], int]]:
    """A field name's meaning, cached per name (as faultdeck caches it): the cache, and
    the function that fills it."""
    cache: dict[str, int] = {}

    def flags(name: str) -> int:
        found = cache.get(name)
        if found is None:
            kind = redactor.field_kind(name) if redactor is not None else 0
            found = (
                (_STRIP if name.lower() in strip or kind == DROP else 0)
                | (_DROP if kind == DROP else 0)
                | (_ID_FIELD if name == "id" or name.endswith(("_id", "Id", "-id")) else 0)
                | (_SECRET if kind == SECRET else 0)
                | (_TIME if is_time_field(name) else 0)
            )
            cache[name] = found
        return found

    return cache, flags


def args_walk(  # noqa: C901 - one walk, every rule inlined (it is the hot path)
    ids: dict[str, str], root: str | None, strip: frozenset[str], redactor: Redactor | None
) -> Walk:
    """The one walk of a call's args: normalization (and redaction when given a redactor),
    renaming ids through ``ids``, making paths under ``root`` relative, dropping ``strip``
    fields (compared lower-case)."""
    prefix = (root.rstrip(os.sep) + os.sep) if root else "\0"
    cut = len(prefix)
    cached, flags_of = _field_flags(strip, redactor)
    redact = redactor.redact_leaf if redactor is not None else None
    uuid, provider, generated = _UUID.fullmatch, _PROVIDER_ID.fullmatch, _GENERATED.fullmatch
    datetime = _DATETIME.fullmatch

    def walk(value: Any, flags: int) -> Any:  # noqa: C901 - inlined
        cls = type(value)
        if cls is str:
            if redact is not None and len(value) >= _REDACT_MIN:
                value = redact(value, bool(flags & _SECRET))
            n = len(value)
            if n >= 8 and " " not in value:
                known = ids.get(value)
                if known is not None:
                    return known
                if (
                    (n == 36 and uuid(value))
                    or (value.startswith(_PROVIDER_PREFIXES) and provider(value))
                    or (flags & _ID_FIELD and generated(value))
                ):
                    ids[value] = name = f"«id:{len(ids) + 1}»"
                    return name
            if n >= 16 and value[4] == "-" and value[10] in "T " and datetime(value):
                return "«ts»"
            return value[cut:] if value.startswith(prefix) else value
        if cls is dict:
            out = {}
            for k, v in value.items():
                fl = cached.get(k)
                if fl is None:
                    fl = flags_of(k)
                if not fl & _STRIP:
                    out[k] = walk(v, fl)
            return out
        if cls is list or cls is tuple:
            return [walk(v, flags) for v in value]
        if (cls is int or cls is float) and flags & _TIME and is_epoch(value):
            return cls(0)
        return value

    return walk


def answer_walk(  # noqa: C901 - one walk, every rule inlined
    ids: dict[str, str], redactor: Redactor
) -> Callable[[Any, int, list[str]], Any]:
    """The one walk of a live answer: JSON checked, the provider's volatile fields
    (``PROVIDER_TIMES``: nothing else is rewritten) stored as placeholders (by ``seq``),
    secrets redacted, ids learned into ``ids``; ``walk(value, seq, found)`` also lists the
    ids it found in ``found``, in order."""
    cached, flags_of = _field_flags(frozenset(), redactor)
    redact = redactor.redact_leaf
    volatile = PROVIDER_TIMES

    def walk(value: Any, field: str | None, flags: int, stamp: int, found: list[str]) -> Any:  # noqa: C901 - inlined
        cls = type(value)
        if cls is str:
            if field in volatile:
                value = stand_in(value, False, stamp)
            if len(value) >= _REDACT_MIN or flags & _SECRET:
                value = redact(value, bool(flags & _SECRET))
            if len(value) >= 8 and looks_like_id(value, field):
                found.append(value)
                if value not in ids:
                    ids[value] = f"«id:{len(ids) + 1}»"
            return value
        if cls is dict:
            out = {}
            for k, v in value.items():
                if type(k) is not str:
                    raise TypeError("not JSON: a dict key that is not a string")
                fl = cached.get(k)
                if fl is None:
                    fl = flags_of(k)
                if not fl & _DROP:
                    out[k] = walk(v, k, fl, stamp, found)
            return out
        if cls is list or cls is tuple:
            return [walk(v, field, flags, stamp, found) for v in value]
        if cls is bool or value is None:
            return value
        if cls is int or cls is float:
            if (cls is int and not -INT_LIMIT <= value < INT_LIMIT) or (
                cls is float and not math.isfinite(value)
            ):
                raise TypeError("not JSON: a number out of range")
            return stand_in(value, False, stamp) if field in volatile else value
        raise TypeError(f"not JSON: {cls.__name__}")

    return lambda value, seq, found: walk(value, None, 0, PLACEHOLDER_EPOCH + seq, found)


def floor_key(kind: str, name: str, norm: Any, schema: str = "v1") -> str:
    """A call's key: sha256 of the canonical JSON, first 16 hex digits."""
    payload = orjson.dumps({"v": schema, "kind": kind, "name": name, "args": norm}, option=_SORT)
    return f"{kind}:{hashlib.sha256(payload).hexdigest()[:16]}"


class ReplayFloor:
    """Keyed replay of recorded ``(key, answer)`` pairs at the contract's least cost.

    Args:
        recorded: the cassette's (key, answer) pairs, in file order.
        root: the project root, whose absolute paths args are made relative to.
        strip: the transport fields dropped from args.
    """

    def __init__(
        self,
        recorded: Iterable[tuple[str, Any]],
        root: str | None,
        strip: frozenset[str] = TRANSPORT_FIELDS,
    ) -> None:
        self.queues: dict[str, deque[Any]] = {}
        for key, answer in recorded:
            self.queues.setdefault(key, deque()).append(answer)
        self.ids: dict[str, str] = {}
        self.walk = args_walk(self.ids, root, strip, None)
        self.log: list[tuple[int, str, str]] = []

    def key(self, kind: str, name: str, args: Any) -> str:
        """The key the floor computes for one call (the check before timing)."""
        return floor_key(kind, name, self.walk(args, 0))

    def caller(self) -> Callable[[str, str, Any], Any]:
        """The per-call function: ``call(kind, name, args) -> a fresh copy of the answer``."""
        walk, queues, log = self.walk, self.queues, self.log
        dumps, loads, sha256, sort = orjson.dumps, orjson.loads, hashlib.sha256, _SORT
        note = log.append

        def call(kind: str, name: str, args: Any) -> Any:
            norm = walk(args, 0)
            payload = dumps({"v": "v1", "kind": kind, "name": name, "args": norm}, option=sort)
            key = f"{kind}:{sha256(payload).hexdigest()[:16]}"
            answer = queues[key].popleft()
            note((len(log) + 1, key, "replay"))
            return loads(dumps(answer))

        return call


class RecordFloor:
    """Redacting, keyed recording into an open binary file at the contract's least cost.

    Args:
        out: the file the lines go to (write + flush per line).
        root: the project root.
        strip: the transport fields dropped from args.
        ids_field: write the ids found in the answer beside it (``"ids": [...]``), as
            faultdeck's lines do when they carry them.
    """

    def __init__(
        self,
        out: IO[bytes],
        root: str | None,
        strip: frozenset[str] = TRANSPORT_FIELDS,
        *,
        ids_field: bool = False,
    ) -> None:
        self.out = out
        self.ids_field = ids_field
        self.redactor = Redactor()
        self.ids: dict[str, str] = {}
        self.args = args_walk(self.ids, root, strip, self.redactor)
        self.answer = answer_walk(self.ids, self.redactor)

    def caller(self) -> Callable[[str, str, Any, Callable[[], Any]], Any]:
        """The per-call function: ``call(kind, name, args, fn) -> fn()``, its line written."""
        walk_args, walk_answer = self.args, self.answer
        redact_text = self.redactor.redact_text
        write, flush = self.out.write, self.out.flush
        dumps, sha256, sort, line = orjson.dumps, hashlib.sha256, _SORT, _LINE
        clock = time.perf_counter
        ids_field = self.ids_field
        seq = 0

        def call(kind: str, name: str, args: Any, fn: Callable[[], Any]) -> Any:
            nonlocal seq
            seq += 1
            name = redact_text(name)
            norm = walk_args(args, 0)
            payload = dumps({"v": "v1", "kind": kind, "name": name, "args": norm}, option=sort)
            key = f"{kind}:{sha256(payload).hexdigest()[:16]}"
            started = clock()
            value = fn()
            ms = round((clock() - started) * 1000, 3)
            found: list[str] = []
            stored = walk_answer(value, seq, found)
            entry = {"seq": seq, "kind": kind, "name": name, "key": key, "args": norm}
            entry["out"] = stored
            entry["ms"] = ms
            if ids_field:
                entry["ids"] = found
            write(dumps(entry, option=line))
            flush()
            return value

        return call


def without_ms(line: bytes) -> dict[str, Any]:
    """A cassette line's object without its ``ms`` (the one field that may differ)."""
    obj: dict[str, Any] = orjson.loads(line)
    obj.pop("ms", None)
    return obj


def rules_of(deck: Any) -> tuple[str | None, frozenset[str]]:
    """The project root and transport fields a deck normalizes with, for a floor."""
    config = deck._run.normalizer.config
    return config.root, config.strip_fields


def check_keys(floor: ReplayFloor, kind: str, name: str, args: list[Any], path: Any) -> None:
    """Raise unless the floor keys ``args`` as faultdeck keyed them in the cassette."""
    recorded = [e.key for e in fd.load(path).entries]
    ours = [floor.key(kind, name, a) for a in args]
    if ours != recorded:
        wrong = next(i for i, (a, b) in enumerate(zip(ours, recorded, strict=False)) if a != b)
        raise AssertionError(f"the replay floor keys call {wrong + 1} otherwise than faultdeck")
    floor.ids.clear()  # the check named ids; the timed runs start afresh
