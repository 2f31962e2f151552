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
made sure that JSON says everything about them (see there): ``stores`` compares it with a
line's parsed args, and ``format.held_after`` with a line held as bytes where it stores
them. Any doubt sends the call the long way, which decides it as always.
"""

from __future__ import annotations

import marshal
import re
from typing import Any

import orjson

# marshal only checks that args hold values of its own types (version 0: the cheapest).
_MARSHAL_VERSION = 0
_EXACT = (
    orjson.OPT_PASSTHROUGH_SUBCLASS
    | orjson.OPT_PASSTHROUGH_DATACLASS
    | orjson.OPT_PASSTHROUGH_DATETIME
)
# A string made only of the characters ids are made of, 8 or more of them, as JSON writes
# it (such characters are never escaped): the strings a learned id can be.
_CANDIDATE = re.compile(rb'"([A-Za-z0-9_.:-]{8,})"')


def args_form(args: Any, root: bytes | None) -> bytes | None:
    """``args`` as JSON bytes, as a line stores them, when they are JSON values each of its
    own type and hold no path under ``root`` (the project root's prefix as JSON writes it
    in a string, ``Normalizer.root_json``); ``None`` otherwise, and the long way decides.

    orjson writes each JSON type distinctly (``1``, ``1.0`` and ``true`` differ) and keeps
    the fields' order; with the subclass, dataclass and date passthroughs it refuses a
    subclass of a JSON type and a date. It writes an enum, a UUID and a ``Fragment`` as
    their values: ``marshal``, which writes only values of its own types, refuses those. A
    tuple passes, as the list a walk makes of it. NaN and the infinities are written
    ``null``: ``stores`` tells them apart."""
    try:
        form = orjson.dumps(args, option=_EXACT)
        marshal.dumps(args, _MARSHAL_VERSION)
    except (TypeError, ValueError):  # not JSON as stored, or nested too deeply
        return None
    # (bytes.find: ``in`` tries its operand as an integer first, and fails, at a cost)
    return form if root is None or form.find(root) < 0 else None


def stores(form: bytes, args: Any, stored: Any) -> bool:
    """Whether ``stored`` (parsed from a line) is ``args``, given their ``args_form``."""
    # NaN and the infinities are written null, and are no stored value: == tells them apart.
    return form == orjson.dumps(stored) and (form.find(b"null") < 0 or args == stored)


def id_candidates(form: bytes) -> list[str]:
    """The strings in ``form`` (a line's args as JSON) that a learned id could equal: 8 or
    more id characters (``IdMap`` learns no other, unless ``IdMap.odd``). Field names too,
    which only costs a lookup."""
    return [m.decode("ascii") for m in _CANDIDATE.findall(form)]
