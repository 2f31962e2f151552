"""A live output as the cassette stores it, in one walk: the recording's hot path.

Storing an output used to take four walks over it, one per rule: a check that JSON can
hold it (``outputs.check_json``), volatile fields made placeholders (``outputs.scrub``),
secrets masked (``Redactor.redact``), then the ids it hands out found in what is stored
(``ids.collect_ids``). ``store_output`` applies the four at each value as it passes (a
run makes its walk once: ``output_store``), and gives the same result: ``NotJSON`` where
``check_json`` finds a value JSON cannot hold (it then names it), else the stored value
equal to ``redact(scrub(out, seq, volatile, declared))`` and the ids equal to
``collect_ids`` of it. Tuples, which ``scrub`` and ``collect_ids`` pass over as they are,
get only the redactor's walk.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from .ids import looks_like_id
from .names import DROP, SECRET
from .outputs import INT_LIMIT, PLACEHOLDER_EPOCH, is_json, stand_in
from .redact import Redactor, secret_number
from .secrets import MIN_SECRET_LEN, mask


class NotJSON(Exception):
    """The output holds a value JSON cannot hold; ``check_json`` names it."""


Store = Callable[[Any, int], tuple[Any, list[str]]]
"""``store(out, seq)``: ``out`` as stored, and the ids found in it (``store_output``)."""


def store_output(
    out: Any,
    seq: int,
    redactor: Redactor,
    *,
    volatile: frozenset[str],
    declared: frozenset[str],
    ids: bool,
) -> tuple[Any, list[str]]:
    """``out`` as stored, and the ids a later call may send back, in order of appearance.

    Raises:
        NotJSON: ``out`` holds a value JSON cannot hold (``check_json`` says which).

    Args:
        out: the output.
        seq: the call's seq, which the placeholders derive from.
        redactor: masks secrets and drops credential fields.
        volatile: the field names whose values are stored as placeholders, at any depth
            (``Normalizer.output_volatile``); nothing else is.
        declared: those of them the project declared (``NormalizeConfig.volatile``).
        ids: find the ids (``NormalizeConfig.ids``); none are found otherwise.
    """
    return output_store(redactor, volatile=volatile, declared=declared, ids=ids)(out, seq)


def output_store(  # noqa: C901 - one walk
    redactor: Redactor, *, volatile: frozenset[str], declared: frozenset[str], ids: bool
) -> Store:
    """``store_output`` under these rules, made once (a recording run's, ``Run.store_output``):
    its walk, every rule inlined, is built here and not at every call (the hot path of
    recording)."""
    leaf, field_kind, walk_other = redactor.redact_leaf, redactor.field_kind, redactor.redact_under
    extras = redactor.has_extras

    def walk(value: Any, name: str | None, secret: bool, stamp: int, found: list[str]) -> Any:  # noqa: C901 - see above
        cls = type(value)
        if cls is str:
            # Each rule only where it may change the string (its own first test, inlined):
            # a volatile field's by its name; a secret's shape 15 characters or more,
            # unless under a secret field's name or a project's pattern.
            if name in volatile:
                value = stand_in(value, name in declared, stamp)
            if secret or extras or len(value) >= MIN_SECRET_LEN:
                value = leaf(value, secret)
            if ids and len(value) >= 8 and looks_like_id(value, name):
                found.append(value)
            return value
        if cls is dict:
            result: dict[str, Any] = {}
            for k, v in value.items():
                if type(k) is not str:
                    raise NotJSON
                kind = field_kind(k)
                if kind == DROP:
                    if not is_json(v):
                        raise NotJSON  # dropped, but an answer JSON cannot hold all the same
                    continue
                result[k] = walk(v, k, kind == SECRET, stamp, found)
            return result
        if cls is list:
            return [walk(v, name, secret, stamp, found) for v in value]
        if cls is bool or value is None:
            return value
        if cls is int:
            if not -INT_LIMIT <= value < INT_LIMIT:
                raise NotJSON
            if name in volatile:
                value = stand_in(value, name in declared, stamp)
            if secret and secret_number(value):
                return mask(str(value))
            return value
        if cls is float:
            if not math.isfinite(value):
                raise NotJSON
            return stand_in(value, name in declared, stamp) if name in volatile else value
        if cls is tuple:
            if not is_json(value):
                raise NotJSON
            return walk_other(value, secret)
        raise NotJSON

    def store(out: Any, seq: int) -> tuple[Any, list[str]]:
        found: list[str] = []
        return walk(out, None, False, PLACEHOLDER_EPOCH + seq, found), found

    return store
