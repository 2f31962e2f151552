"""One cassette line checked: a call, a ``begin`` intent or an ``abort``.

The common line (a well-formed ``out`` of an in-process call) is checked in one go; any
other takes the careful path, which names what is wrong (what replay would trip over: an
HTTP answer without its status, a stream without events, a fault that is not an object).
A large cassette's common lines come here only when ``held.entries`` left them.
"""

from __future__ import annotations

import sys
from typing import Any

from .._base.errors import CassetteCorrupt
from .._keys.canonical import KINDS, SCHEMA_DEFAULT
from .bodies import BINARY, BodyError, answer_bytes, binary_problem
from .format import RESULT_FIELDS, Entry, HeldEntry, Intent

RESTORE = "restore it from version control or re-record it"
# Binary bodies shorter than this are decoded as their line is checked; a longer one (a line
# the reader parses whole) where the reader keeps its bytes.
_DECODE_BELOW = 2048


# The kinds as shared strings: each line's kind is read as the one of these it equals, so a
# long recording holds one copy of each (and of each name, interned) instead of one per line.
_KIND = {k: k for k in KINDS}
# The kinds checked in one go (http lines are checked in full), each as its shared string and
# its key's prefix ("tool:"), found in one lookup.
_FAST = {k: (k, k + ":") for k in KINDS if k != "http"}
_intern = sys.intern
# A named tuple's own constructor goes through a generated function; the entries of a long
# recording are built straight from their fields (measured: a tenth of a load).
_new = tuple.__new__


def entry(obj: dict[str, Any], path: str, number: int, raw: bytes | None = None) -> Entry:
    """The entry of the call line ``obj`` (line ``number`` of ``path``), checked.

    With ``raw``, the line's bytes, the entry is a ``HeldEntry`` that keeps them and parses
    its args, value and meta when read; every check is made here all the same.

    Raises:
        CassetteCorrupt: the line is not a valid call (the error names what is wrong).
    """
    # The common case, a well-formed out line of an in-process call, checked and built in
    # one go (its fields read by subscript, cheaper than get); anything else takes the
    # careful path below, which names what is wrong.
    try:
        seq: Any = obj["seq"]
        fast: Any = _FAST.get(obj["kind"])
        key: Any = obj["key"]
        name: Any = obj["name"]
        args: Any = obj["args"]
        out: Any = obj["out"]
    except (KeyError, TypeError):  # a field missing, or a kind that is no string
        return _checked_entry(obj, path, number, raw)
    get = obj.get
    ms: Any = get("ms", 0)
    schema: Any = get("schema", SCHEMA_DEFAULT)
    ids: Any = get("ids")
    if (
        fast is not None
        and "error" not in obj
        and "stream" not in obj
        and "fault" not in obj
        and type(seq) is int
        and seq > 0
        and type(key) is str
        and key.startswith(fast[1])
        and (type(ms) is int or type(ms) is float)
        and ms >= 0
        and type(schema) is str
        and type(name) is str
        and name
        and (ids is None or type(ids) is list)
    ):
        if ids:
            ids = _ids(ids, path, number, seq)
        elif ids is not None:
            ids = ()  # most lines: an answer that hands out none
        if schema is not SCHEMA_DEFAULT:
            schema = _intern(schema)
        held = raw is not None
        return _new(  # an Entry, or a HeldEntry holding its line, its fields in order
            HeldEntry if held else Entry,
            (
                seq,
                fast[0],
                _intern(name),
                key,
                raw if held else args,
                "out",
                None if held else out,
                ms,
                get("step"),
                schema,
                None if held else get("meta"),
                None,
                number,
                ids,
            ),
        )
    return _checked_entry(obj, path, number, raw)


def _ids(ids: list[Any], path: str, number: int, seq: int) -> tuple[str, ...]:
    """A line's ``ids``, checked: a list of strings."""
    problem = _ids_problem(ids)
    if problem is not None:
        raise CassetteCorrupt(path, number, f"seq {seq}: {problem}", RESTORE)
    return tuple(ids)


def _ids_problem(ids: Any) -> str | None:
    """What is wrong with a line's optional ``ids`` (a list of strings), if anything."""
    if ids is None or (type(ids) is list and all(type(i) is str for i in ids)):
        return None
    return "ids must be a list of strings"


def _build(obj: dict[str, Any], result: str, number: int, raw: bytes | None) -> Entry:
    """The entry of a line already checked."""
    get = obj.get
    ids = get("ids")
    schema = get("schema", SCHEMA_DEFAULT)
    held = raw is not None
    return (HeldEntry if held else Entry)(
        obj["seq"],
        _KIND[obj["kind"]],
        _intern(obj["name"]),
        obj["key"],
        raw if held else obj["args"],
        result,  # type: ignore[arg-type]
        None if held else obj[result],
        get("ms", 0),
        get("step"),
        schema if schema is SCHEMA_DEFAULT else _intern(schema),
        None if held else get("meta"),
        get("fault"),
        number,
        None if ids is None else tuple(ids),
    )


def _checked_entry(obj: dict[str, Any], path: str, number: int, raw: bytes | None) -> Entry:
    seq: Any = obj["seq"]
    if type(seq) is not int or seq < 1:
        raise CassetteCorrupt(path, number, f"seq {seq!r} is not a positive integer", RESTORE)
    problem = _call_problem(obj)
    results = [r for r in RESULT_FIELDS if r in obj]
    if problem is None and len(results) != 1:
        problem = (
            f"a call has exactly one of out, error, stream (found {', '.join(results) or 'none'})"
        )
    if problem is None:
        problem = _result_problem(obj["kind"], results[0], obj[results[0]])
    if problem is not None:
        raise CassetteCorrupt(path, number, f"seq {seq}: {problem}", RESTORE)
    return _build(obj, results[0], number, raw)


def _call_problem(obj: dict[str, Any]) -> str | None:
    """What is wrong with a call line's fields other than its result, if anything."""
    kind: Any = obj.get("kind")
    name: Any = obj.get("name")
    key: Any = obj.get("key")
    ms: Any = obj.get("ms", 0)
    fault: Any = obj.get("fault")
    if kind not in KINDS:
        return f"kind {kind!r} is not one of {', '.join(KINDS)}"
    if type(name) is not str or not name:
        return "name is missing or not a string"
    if type(key) is not str or not key.startswith(f"{kind}:"):
        return f"key {key!r} does not start with '{kind}:'"
    if "args" not in obj:
        return "args is missing"
    if type(ms) not in (int, float) or ms < 0:
        return f"ms {ms!r} is not a duration"
    if type(obj.get("schema", SCHEMA_DEFAULT)) is not str:
        return "schema must be a string"
    if fault is not None and (type(fault) is not dict or type(fault.get("fault")) is not str):
        return 'fault must be an object like {"fault": "quota", …}'
    return _ids_problem(obj.get("ids"))


def _result_problem(kind: str, result: str, value: Any) -> str | None:
    """What is wrong with a call's result as replay will read it, if anything."""
    if result == "error":
        if type(value) is not dict or type(value.get("type")) is not str:
            return "error needs a 'type'"
        return None
    if result == "stream":
        if type(value) is not dict or type(value.get("events")) is not list:
            return "stream needs 'events'"
        for i, event in enumerate(value["events"]):
            if type(event) is not dict:
                return f"stream events[{i}] is not an object"
            if type(event.get("ms", 0)) not in (int, float):
                return f"stream events[{i}].ms is not a number"
        return http_answer_problem(value, body=False)
    if kind == "http":
        return http_answer_problem(value, body=True)
    return None


def http_answer_problem(value: Any, *, body: bool) -> str | None:
    """What keeps ``value`` from being a stored HTTP answer (``status``, ``headers`` and
    ``body`` or ``events``), if anything."""
    if type(value) is not dict:
        return "an HTTP answer is an object with status, headers and body"
    if type(value.get("status")) is not int:
        return "an HTTP answer needs an integer 'status'"
    headers = value.get("headers")
    if type(headers) is not dict or not all(
        type(v) is str or (type(v) is list and all(type(s) is str for s in v))
        for v in headers.values()
    ):
        return "an HTTP answer needs 'headers', an object of strings (or lists of strings)"
    if not body:
        return None
    if "body" not in value:
        return "an HTTP answer needs a 'body'"
    if BINARY in value:
        problem = binary_problem(value)
        if problem is not None:
            return problem
        # A long body is decoded once, where the reader keeps its bytes (``Recording.bodies``).
        if len(value["body"]) < _DECODE_BELOW:
            try:
                answer_bytes(value)
            except BodyError as exc:
                return str(exc)
    chunks = value.get("chunks")
    return None if chunks is None else _chunks_problem(chunks, value)


def _chunks_problem(chunks: Any, value: dict[str, Any]) -> str | None:
    """What keeps ``chunks`` from splitting a stored body into timed pieces, if anything."""
    if type(chunks) is not list or not all(
        type(c) is dict and type(c.get("ms")) in (int, float) and type(c.get("bytes")) is int
        for c in chunks
    ):
        return "'chunks' is a list of objects with 'ms' and 'bytes'"
    body = value["body"]
    if BINARY in value:
        size = value[BINARY]["size"]
    elif type(body) is str:
        size = len(body.encode())
    else:
        return "a body split into 'chunks' is text or binary"
    if sum(c["bytes"] for c in chunks) != size:
        return f"'chunks' add up to {sum(c['bytes'] for c in chunks)} bytes, the body has {size}"
    return None


def intent(obj: dict[str, Any], path: str, number: int) -> Intent:
    seq: Any = obj["begin"]
    kind: Any = obj.get("kind")
    name: Any = obj.get("name")
    key: Any = obj.get("key")
    idem: Any = obj.get("idempotency_key")
    resumes: Any = obj.get("resumes")
    if (
        type(seq) is not int
        or seq < 1
        or kind not in KINDS
        or type(name) is not str
        or type(key) is not str
        or not key.startswith(f"{kind}:")
        or not (idem is None or type(idem) is str)
        or not (resumes is None or (type(resumes) is int and resumes >= 1))
    ):
        raise CassetteCorrupt(
            path,
            number,
            "a begin line needs a positive 'begin', a kind, a name and its key",
            RESTORE,
        )
    return Intent(seq, kind, name, key, obj.get("side_effect") is True, idem, resumes, number)


def abort(obj: dict[str, Any], path: str, number: int) -> tuple[int, str]:
    seq: Any = obj["abort"]
    key: Any = obj.get("key")
    if type(seq) is not int or seq < 1 or type(key) is not str:
        raise CassetteCorrupt(
            path, number, "an abort line needs a positive 'abort' and a key", RESTORE
        )
    return seq, key
