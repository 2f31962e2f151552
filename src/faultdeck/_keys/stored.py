"""A live output as the cassette stores it, in one walk: the recording's hot path.

Storing an output used to take three walks over it, one per rule: wall-clock values made
placeholders (``outputs.scrub``), secrets masked (``Redactor.redact``), then the ids it
hands out found in what is stored (``ids.collect_ids``). ``store_output`` applies the three
at each value as it passes, and gives the same result: the stored value equal to
``redact(scrub(out, seq))`` and the ids equal to ``collect_ids`` of it. Tuples, which
``scrub`` and ``collect_ids`` pass over as they are, get only the redactor's walk.
"""

from __future__ import annotations

from typing import Any

from .ids import looks_like_id
from .names import DROP, SECRET
from .outputs import EPOCH_MS, EPOCH_S, PLACEHOLDER_EPOCH, is_time_field, scrub_string
from .redact import Redactor, secret_number
from .secrets import mask


def store_output(  # noqa: C901 - one walk, every rule inlined (the hot path of recording)
    out: Any, seq: int, redactor: Redactor, *, scrub: bool, ids: bool
) -> tuple[Any, list[str]]:
    """``out`` as stored, and the ids a later call may send back, in order of appearance.

    Args:
        out: the output, already checked to be JSON (``check_json``).
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
                kind = field_kind(k)
                if kind == DROP:
                    continue
                result[k] = walk(v, k, kind == SECRET)
            return result
        if cls is list:
            return [walk(v, name, secret) for v in value]
        if cls is tuple:
            return walk_other(value, secret)
        if secret and cls is int and secret_number(value):
            return mask(str(value))
        if scrub and (cls is int or cls is float) and name is not None and is_time_field(name):
            if EPOCH_S[0] <= value < EPOCH_S[1]:
                return cls(stamp)
            if EPOCH_MS[0] <= value < EPOCH_MS[1]:
                return cls(stamp * 1000)
        return value

    return walk(out, None, False), found
