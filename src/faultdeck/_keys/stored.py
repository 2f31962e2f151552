"""A live output as the cassette stores it, in one walk: the recording's hot path.

Storing an output used to take four walks over it, one per rule: a check that JSON can
hold it (``outputs.check_json``), wall-clock values made placeholders (``outputs.scrub``),
secrets masked (``Redactor.redact``), then the ids it hands out found in what is stored
(``ids.collect_ids``). ``store_output`` applies the four at each value as it passes, and
gives the same result: ``NotJSON`` where ``check_json`` finds a value JSON cannot hold (it
then names it), else the stored value equal to ``redact(scrub(out, seq))`` and the ids
equal to ``collect_ids`` of it. Tuples, which ``scrub`` and ``collect_ids`` pass over as
they are, get only the redactor's walk.
"""

from __future__ import annotations

import math
from typing import Any

from .ids import looks_like_id
from .names import DROP, SECRET
from .outputs import (
    EPOCH_MS,
    EPOCH_S,
    INT_LIMIT,
    PLACEHOLDER_EPOCH,
    is_json,
    is_time_field,
    scrub_string,
)
from .redact import Redactor, secret_number
from .secrets import mask


class NotJSON(Exception):
    """The output holds a value JSON cannot hold; ``check_json`` names it."""


def store_output(  # noqa: C901 - one walk, every rule inlined (the hot path of recording)
    out: Any, seq: int, redactor: Redactor, *, scrub: bool, ids: bool
) -> tuple[Any, list[str]]:
    """``out`` as stored, and the ids a later call may send back, in order of appearance.

    Raises:
        NotJSON: ``out`` holds a value JSON cannot hold (``check_json`` says which).

    Args:
        out: the output.
        seq: the call's seq, which the wall-clock placeholders derive from.
        redactor: masks secrets and drops credential fields.
        scrub: replace wall-clock values (``NormalizeConfig.output_times``).
        ids: find the ids (``NormalizeConfig.ids``); none are found otherwise.
    """
    stamp = PLACEHOLDER_EPOCH + seq
    leaf, field_kind, walk_other = redactor.redact_leaf, redactor.field_kind, redactor.redact_under
    found: list[str] = []

    def walk(value: Any, name: str | None, secret: bool) -> Any:  # noqa: C901 - see above
        cls = type(value)
        if cls is str:
            if scrub:
                value = scrub_string(value, name, stamp)
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
                result[k] = walk(v, k, kind == SECRET)
            return result
        if cls is list:
            return [walk(v, name, secret) for v in value]
        if cls is bool or value is None:
            return value
        if cls is int:
            if not -INT_LIMIT <= value < INT_LIMIT:
                raise NotJSON
            if secret and secret_number(value):
                return mask(str(value))
        elif cls is float:
            if not math.isfinite(value):
                raise NotJSON
        elif cls is tuple:
            if not is_json(value):
                raise NotJSON
            return walk_other(value, secret)
        else:
            raise NotJSON
        if scrub and name is not None and is_time_field(name):
            if EPOCH_S[0] <= value < EPOCH_S[1]:
                return cls(stamp)
            if EPOCH_MS[0] <= value < EPOCH_MS[1]:
                return cls(stamp * 1000)
        return value

    return walk(out, None, False), found
