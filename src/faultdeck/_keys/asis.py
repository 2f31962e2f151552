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

The args are told apart exactly by their JSON as orjson writes it and by ``==``, once
``args_form`` has made sure they hold no object JSON would write as a plain value (see
there): ``stores`` compares them with a line's parsed args, and ``format.held_after`` with
a line held as bytes where it stores them. Any doubt sends the call the long way, which
decides it as always.
"""

from __future__ import annotations

import marshal
import re
from typing import Any

import orjson

# marshal only checks that args hold values of its own types (version 0: the cheapest).
_MARSHAL_VERSION = 0
_SHORT = 2048  # bytes of args' JSON up to which a look for a null costs less than ==
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
    own type, or may (``stores``, or ``==`` with the parsed JSON, settles it), and no path
    under ``root`` (the project root's prefix as JSON writes it in a string,
    ``Normalizer.root_json``); ``None`` otherwise, and the long way decides.

    orjson writes each JSON type distinctly (``1``, ``1.0`` and ``true`` differ) and keeps
    the fields' order; with the subclass, dataclass and date passthroughs it refuses a
    subclass of a JSON type, a date and a cycle. It writes an enum member, a UUID and an
    ``orjson.Fragment`` as their values: ``marshal``, which writes only values of its own
    types, refuses those. What both let through, ``stores`` tells apart: NaN and the
    infinities (written ``null``), and a tuple (written as a list)."""
    try:
        form = orjson.dumps(args, option=_EXACT)
        marshal.dumps(args, _MARSHAL_VERSION)
    except (TypeError, ValueError):  # not JSON as stored, or nested too deeply
        return None
    # (bytes.find: ``in`` tries its operand as an integer first, and fails, at a cost)
    return form if root is None or form.find(root) < 0 else None


def stores(form: bytes, args: Any, stored: Any) -> bool:
    """Whether ``stored`` (parsed from a line) is ``args``, given their ``args_form``.

    The same JSON, and no NaN or infinity in ``args`` standing for a null in ``stored``
    (orjson writes them null): short args are looked through for a null (a tuple passes
    then, which the keyed route makes the list stored: the same key), long ones compared
    with ``==`` (bytes.find is slow past one byte: a look costs more than ``==`` there)."""
    return form == orjson.dumps(stored) and (
        (len(form) < _SHORT and form.find(b"null") < 0) or args == stored
    )


def id_candidates(form: bytes) -> list[str]:
    """The strings in ``form`` (a line's args as JSON) that a learned id could equal: 8 or
    more id characters (``IdMap`` learns no other, unless ``IdMap.odd``). Field names too,
    which only costs a lookup."""
    return [m.decode("ascii") for m in _CANDIDATE.findall(form)]
