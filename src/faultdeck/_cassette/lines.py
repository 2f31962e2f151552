"""One cassette line checked: a call, a ``begin`` intent or an ``abort``.

Each check names what is wrong (what replay would trip over: an HTTP answer without its
status, a stream without events, a fault that is not an object).
"""

from __future__ import annotations

import sys
from typing import Any

from .._base.errors import CassetteCorrupt
from .._keys.canonical import KINDS, SCHEMA_DEFAULT
from .bodies import BINARY, BodyError, answer_bytes, binary_problem
from .format import RESULT_FIELDS, Entry, Intent, Result

RESTORE = "restore it from version control or re-record it"
# Binary bodies shorter than this are decoded as their line is checked; a longer one (a line
# the reader parses whole) where the reader keeps its bytes.
_DECODE_BELOW = 2048


# The kinds as shared strings, each with its key's prefix ("tool:"): each line's kind is read
# as the one of these it equals, so a long recording holds one copy of each (and of each name,
# interned) instead of one per line.
_KIND = {k: (k, k + ":") for k in KINDS}
_intern = sys.intern
# Which of out, error and stream a line holds, by whether it holds each: the one it holds,
# or none when it holds none or more than one (looked up unless it holds only an out, as
# most lines do).
_ONE_RESULT: dict[tuple[bool, bool, bool], Result] = {
    (True, False, False): "out",
    (False, True, False): "error",
    (False, False, True): "stream",
}


def entry(obj: dict[str, Any], path: str, number: int, raw: bytes | None = None) -> Entry:  # noqa: C901 - one check a field, in the order a message names them
    """The entry of the call line ``obj`` (line ``number`` of ``path``), checked.

    With ``raw``, the line's bytes, the entry keeps them instead of its args, value and
    meta, and parses them when first read; every check is made here all the same.

    Raises:
        CassetteCorrupt: the line is not a valid call (the error names what is wrong).
    """
    get = obj.get
    seq: Any = obj["seq"]
    kind: Any = get("kind")
    name: Any = get("name")
    key: Any = get("key")
    ms: Any = get("ms", 0)
    schema: Any = get("schema", SCHEMA_DEFAULT)
    fault: Any = get("fault")
    ids: Any = get("ids")
    if type(seq) is not int or seq < 1:
        raise CassetteCorrupt(path, number, f"seq {seq!r} is not a positive integer", RESTORE)
    known = _KIND.get(kind) if type(kind) is str else None
    result = (
        "out"
        if "out" in obj and "error" not in obj and "stream" not in obj
        else _ONE_RESULT.get(("out" in obj, "error" in obj, "stream" in obj))
    )
    problem = None
    if known is None:
        problem = f"kind {kind!r} is not one of {', '.join(KINDS)}"
    elif type(name) is not str or not name:
        problem = "name is missing or not a string"
    elif type(key) is not str or not key.startswith(known[1]):
        problem = f"key {key!r} does not start with '{kind}:'"
    elif "args" not in obj:
        problem = "args is missing"
    elif (type(ms) is not int and type(ms) is not float) or ms < 0:
        problem = f"ms {ms!r} is not a duration"
    elif type(schema) is not str:
        problem = "schema must be a string"
    elif fault is not None and (type(fault) is not dict or type(fault.get("fault")) is not str):
        problem = 'fault must be an object like {"fault": "quota", …}'
    elif ids is not None and (
        type(ids) is not list or (ids and not all(type(i) is str for i in ids))
    ):
        problem = "ids must be a list of strings"
    elif result is None:
        found = ", ".join(r for r in RESULT_FIELDS if r in obj) or "none"
        problem = f"a call has exactly one of out, error, stream (found {found})"
    elif result != "out" or kind == "http":
        problem = _result_problem(kind, result, obj[result])
    if problem is not None:
        raise CassetteCorrupt(path, number, f"seq {seq}: {problem}", RESTORE)
    held = raw is not None
    return Entry(
        seq, known[0], _intern(name), key, None if held else obj["args"], result,  # type: ignore[index, arg-type]
        None if held else obj[result], ms, get("step"),  # type: ignore[index]
        schema if schema is SCHEMA_DEFAULT else _intern(schema), None if held else get("meta"),
        fault, number, None if ids is None else (tuple(ids) if ids else ()), raw,
    )  # fmt: skip


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
