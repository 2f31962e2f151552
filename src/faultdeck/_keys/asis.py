"""Args a replay keys without normalizing them again: the args a recording stored.

Normalization makes values it leaves as they are: an id becomes ``«id:N»``, a date-time
``«ts»``, a volatile value ``«volatile»``, a secret its mask, and a stripped field is gone.
So a call whose args are the very args a cassette line stored, JSON type for JSON type and
field for field, normalizes to them again, and its key is the line's (docs/format.md: the
key is computed from the args as stored), without a walk and without a hash, provided:

- the rules are the ones the line was keyed under: the cassette's end line names the
  replaying deck's (``Normalizer.fingerprint``, which counts the names of the project's
  rules for calls), and it names none when a call went through a project rule;
- no path under a project root stands in them: the end line names no rules when a call's
  args held one (a path made relative may read as an id or a date-time, which a second
  walk would change), and the replay looks for its own root (``args_form``);
- no string in them is an id the run has learned since the line was recorded, the one rule
  that depends on the run so far (``id_candidates`` lists the strings it could apply to).

The args are told apart exactly by their JSON as orjson writes it, once ``args_form`` has
made sure they hold only JSON values each of its own type (see there): ``Run.begin``
compares it with the line's stored args as orjson writes them (``Entry.args_json``). Any
doubt keys the call the long way, which decides it as always.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from .outputs import INT_LIMIT

_EXACT = (
    orjson.OPT_PASSTHROUGH_SUBCLASS
    | orjson.OPT_PASSTHROUGH_DATACLASS
    | orjson.OPT_PASSTHROUGH_DATETIME
)
# A string made only of the characters ids are made of, 8 or more of them, as JSON writes
# it (such characters are never escaped): the strings a learned id can be.
_CANDIDATE = re.compile(rb'"([A-Za-z0-9_.:-]{8,})"')


def args_form(args: Any, root: bytes | None) -> bytes | None:
    """``args`` as JSON bytes, as a line stores them, when they hold JSON values each of its
    own type (``exact``) and no path under ``root`` (the project root's prefix as JSON writes
    it in a string, ``Normalizer.root_json``); ``None`` otherwise, and the long way decides.

    orjson writes each JSON type distinctly (``1``, ``1.0`` and ``true`` differ) and keeps
    the fields' order; with the subclass, dataclass and date passthroughs it refuses a
    subclass of a JSON type, a date and a cycle. What it writes as a plain value though the
    keyed route refuses it or keys it as another (an enum member, a UUID, an
    ``orjson.Fragment``, NaN and the infinities, an integer past 63 bits, a tuple), ``exact``
    refuses."""
    try:
        form = orjson.dumps(args, option=_EXACT)
    except (TypeError, ValueError):  # not JSON as stored, or nested too deeply
        return None
    try:
        if not exact(args):
            return None
    except RecursionError:  # (orjson nests 255 deep at most: only near the stack's end)
        return None
    # (partition: ``in`` tries its operand as an integer first, and fails, at a cost, and
    # bytes.find parses its arguments at a cost too)
    return form if root is None or not form.partition(root)[1] else None


def exact(value: Any) -> bool:
    """Whether ``value`` holds only dicts, lists, strings, booleans, ``None``, integers the
    keys can hold and finite floats, each of its own type (no subclass, no tuple), as
    parsed JSON does: args that orjson writes as a line's JSON are then that line's args,
    value for value. Dict keys are orjson's to check (strings, each of its own
    type, with the subclass passthrough)."""
    t = type(value)
    if t is dict:
        values: Any = value.values()
    elif t is list:
        values = value
    else:
        return _leaf(value, t)
    for v in values:  # the common leaves here, without a call (measured)
        t = type(v)
        if t is str or t is bool or v is None:
            continue
        if t is int:
            if -INT_LIMIT <= v < INT_LIMIT:
                continue
            return False
        if t is float:
            if v - v == 0.0:  # finite: NaN and the infinities give NaN
                continue
            return False
        if (t is dict or t is list) and exact(v):
            continue
        return False
    return True


def _leaf(value: Any, t: type) -> bool:
    """``exact`` for a value that is not a dict or a list."""
    if t is str or t is bool or value is None:
        return True
    if t is int:
        return bool(-INT_LIMIT <= value < INT_LIMIT)
    return t is float and value - value == 0.0


def id_candidates(form: bytes) -> list[str]:
    """The strings in ``form`` (a line's args as JSON) that a learned id could equal: 8 or
    more id characters (``IdMap`` learns no other, unless ``IdMap.odd``). Field names too,
    which only costs a lookup."""
    return [m.decode("ascii") for m in _CANDIDATE.findall(form)]
