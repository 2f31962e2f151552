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
  walk would change), and the replay looks for its own root (``same_args``);
- no string in them is an id the run has learned since the line was recorded, the one rule
  that depends on the run so far (``id_candidates`` lists the strings it could apply to).

``same_args`` tells the args apart exactly: ``marshal`` writes each JSON type distinctly
(``1``, ``1.0`` and ``True`` differ), keeps the fields' order, and refuses what is no JSON
value of its own type (a ``str`` subclass, an enum, a date), and NaN, which it writes, is
in no line. Any doubt sends the call the long way, which decides it as always.
"""

from __future__ import annotations

import marshal
import re
from typing import Any

import orjson

# Version 2: no interning and no references, so equal values give equal bytes.
_MARSHAL_VERSION = 1
# A string made only of the characters ids are made of, 8 or more of them, as JSON writes
# it (such characters are never escaped): the strings a learned id can be.
_CANDIDATE = re.compile(rb'"([A-Za-z0-9_.:-]{8,})"')


def same_args(args: Any, stored: Any, root: bytes | None) -> bool:
    """Whether ``args`` are ``stored`` exactly: the same values of the same types, fields
    in the same order (``marshal`` writes each distinctly; a tuple is no list), and hold no
    path under ``root`` (the project root's prefix, UTF-8, as marshal writes strings).
    ``False`` too when ``args`` hold an object marshal does not write (a subclass of a JSON
    type, an enum, a date…): the long way decides those."""
    try:
        form = marshal.dumps(args, _MARSHAL_VERSION)
    except ValueError:  # not marshallable, or nested too deeply
        return False
    return form == marshal.dumps(stored, _MARSHAL_VERSION) and (root is None or root not in form)


def id_candidates(stored: Any) -> list[str]:
    """The strings in ``stored`` (a line's args) that a learned id could equal: 8 or more
    id characters (``IdMap`` learns no other, unless ``IdMap.odd``). Field names too, which
    only costs a lookup."""
    return [m.decode("ascii") for m in _CANDIDATE.findall(orjson.dumps(stored))]
