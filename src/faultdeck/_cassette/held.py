"""The common line of a large cassette read in one step: a well-formed ``out`` of an
in-process call, decoded by msgspec into the fields its entry keeps, its args, answer and
meta left as the bytes they are (a ``HeldEntry`` parses them when read).

This is only a shortcut for what ``lines.entry`` checks line by line after ``orjson``
parsed the whole line: it takes a line only when orjson would take it too, with the same
values, and leaves every other line (``None``) to that route, which then decides it and
names whatever is wrong. msgspec checks what it skips over as JSON, with two exceptions
that are checked here instead:

- bytes that are not UTF-8 (it checks strings only where it decodes them): the values
  skipped in a chunk of lines are checked together, and when they are not UTF-8 every
  line of the chunk is left to orjson;
- a number too large for a float (orjson refuses ``1e400``): a line whose skipped values
  hold an exponent of three digits or more, or a run of nineteen digits or more, is left
  to orjson (``_LARGE``). A number needs one or the other to pass 1.8e308.

(``_drop_unsure`` makes both checks.)

And msgspec reads an integer past 64 bits as an integer where orjson reads a float: the
line's ``seq`` and ``ms`` must be below 2**64 (``step``, kept parsed, is parsed by orjson).
An integer in the skipped values that orjson reads as a float has nineteen digits or more,
so it is left to orjson too: msgspec then reads each value of a line taken here as orjson
does, and a replay reads the answer of such a line through msgspec (``format.held_after``;
the entry is ``plain``).
"""

from __future__ import annotations

import sys
from bisect import bisect_right
from itertools import accumulate

import msgspec
import orjson

from .._keys.canonical import KINDS, SCHEMA_DEFAULT
from .format import Entry, HeldEntry

_ABSENT = msgspec.Raw()


class _Line(msgspec.Struct, forbid_unknown_fields=True):
    """The fields of a plain out line; any other field (``error``, ``stream``, ``fault``,
    a ``begin``…) makes the line another route's."""

    seq: int
    kind: str
    name: str
    key: str
    args: msgspec.Raw
    out: msgspec.Raw
    ms: int | float = 0
    step: msgspec.Raw = _ABSENT
    schema: str = SCHEMA_DEFAULT
    meta: msgspec.Raw = _ABSENT
    ids: list[str] | None = None


class _Other(Exception):
    """A line for the line-by-line route."""


_decode = msgspec.json.Decoder(_Line).decode
_DecodeError = msgspec.DecodeError  # (ValidationError is one)
_FAST = {k: (k, k + ":") for k in KINDS if k != "http"}
_LIMIT = 1 << 64  # orjson reads an integer from 2**64 as a float
_MS_LIMIT = float(_LIMIT)  # (a float compares with a float faster than with a large int)
_intern = sys.intern
_new = tuple.__new__
_loads = orjson.loads

# Digits read as 0 and E as e: what a number too large for a float must hold, as the
# bytes it is made of: an exponent of three digits or more (1e400, 1.5E+308), or, with
# an exponent of two digits at most, a hundred digits before the point; and what an
# integer past 64 bits holds, nineteen digits (-2**63 - 1 has nineteen): a run of them.
# (Signs are dropped: "1e+400" reads "0e000"; a match where none was can only leave more
# lines to orjson.)
_DIGITS = bytes.maketrans(b"123456789E", b"000000000e")
_LARGE = (b"0e000", b"0" * 19)
_SEP = b"\n"  # between the values searched: read as no digit


def entries(raws: list[bytes], first: int, below: int) -> tuple[list[Entry | None], bool]:
    """The entry of each line of ``raws`` (line ``first`` onwards) shorter than ``below``
    that is a plain out line of an in-process call, as ``lines.entry`` builds it with the
    line held; ``None`` for every other line, which the line-by-line route decides. And
    whether every line was taken (said here: looking for ``None`` among the entries would
    compare each with it, and a ``HeldEntry`` compares as its parsed line, a parse each)."""
    made: list[Entry | None] = []
    append = made.append
    values: list[msgspec.Raw] = []  # the values skipped, three a line taken
    keep = values.extend
    for number, raw in enumerate(raws, first):
        try:
            if len(raw) >= below:  # kept parsed (``reader.HOLD_LINES_BELOW``)
                raise _Other
            line = _decode(raw)
            seq, fast, key, ms, name = line.seq, _FAST.get(line.kind), line.key, line.ms, line.name
            if (
                fast is None
                or not 0 < seq < _LIMIT
                or not 0 <= ms < _MS_LIMIT  # (an integer as orjson reads it, a finite float)
                or not name
                or not key.startswith(fast[1])
            ):
                raise _Other
            step = _loads(memoryview(line.step)) if line.step else None  # as orjson reads it
        except (_DecodeError, orjson.JSONDecodeError, _Other):
            append(None)
            continue
        ids = line.ids
        schema = line.schema
        keep((line.args, line.out, line.meta))
        append(
            _new(  # a HeldEntry, its fields in order
                HeldEntry,
                (
                    seq,
                    fast[0],
                    _intern(name),
                    key,
                    raw,  # held in place of the args
                    "out",
                    True,  # plain: msgspec reads its values as orjson does
                    ms,
                    step,
                    schema if schema is SCHEMA_DEFAULT else _intern(schema),
                    None,
                    None,
                    number,
                    None if ids is None else tuple(ids),
                ),
            )
        )
    if values and _drop_unsure(made, values):
        return made, False
    return made, len(values) == 3 * len(made)


def _drop_unsure(made: list[Entry | None], values: list[msgspec.Raw]) -> bool:
    """Leave to orjson the lines of ``made`` whose three ``values`` (those of each line
    taken, in order) orjson might not read as msgspec skipped them: every line when they
    are not all UTF-8, else each line whose values may hold a number too large for a
    float. Whether any line was left."""
    joined = _SEP.join(values)
    if not joined.isascii():
        try:
            joined.decode()
        except UnicodeDecodeError:
            made[:] = [None] * len(made)
            return True
    text = joined.translate(_DIGITS, b"+-")
    ends: list[int] = []  # past each line's values in ``text``, made at the first match
    taken: list[int] = []  # the index in ``made`` of each line with values
    for needle in _LARGE:
        at = text.find(needle)
        while at >= 0:
            if not ends:
                taken = [i for i, one in enumerate(made) if one is not None]
                ends = list(accumulate(len(v) + 1 for v in values))[2::3]
            made[taken[bisect_right(ends, at)]] = None
            at = text.find(needle, at + 1)
    return bool(ends)
