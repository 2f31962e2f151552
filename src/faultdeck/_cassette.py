"""Cassette format v1: read, validate, append. The only place JSON meets the disk.

A cassette is JSONL: a header line, one line per call, and an end line written on a clean
close. Each call's line is written with one unbuffered write as the call returns, so a
killed process loses at most the calls still in flight. Every reader error names the file,
the line and what to do.
"""

from __future__ import annotations

import os
import threading
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, NamedTuple

import orjson

from ._canonical import KINDS, SCHEMA_DEFAULT
from ._errors import (
    CassetteCorrupt,
    CassetteError,
    CassetteNotFound,
    CassetteVersionError,
    CassetteWarning,
)

FORMAT_VERSION = 1
RESULT_FIELDS = ("out", "error", "stream")
Durability = Literal["flush", "fsync"]

_RESTORE = "restore it from version control or re-record it"


class Entry(NamedTuple):
    """One recorded call.

    A ``NamedTuple`` rather than a frozen dataclass: it is built once per cassette line,
    and a frozen dataclass costs more to build than parsing the line does (2.3 µs against
    1.5 µs); a named tuple is as immutable and costs a tenth.

    Attributes:
        seq: the call's position in the run that recorded it (1-based, by start order).
        kind: ``model``, ``tool``, ``env`` or ``http``.
        name: the call's name.
        key: the call's key (never includes ``seq``).
        args: the normalized, redacted args, for people.
        result: which of ``out``, ``error`` or ``stream`` the call produced.
        value: the output, the error object or the stream object.
        ms: how long the call took.
        step: the loop's step label, if the caller gave one.
        schema: the tool's schema version.
        meta: free-form data, never part of the key.
        fault: the fault injected at this call while recording, if any.
        line: the line number in the file it was read from (0 when not read).
    """

    seq: int
    kind: str
    name: str
    key: str
    args: Any
    result: Literal["out", "error", "stream"]
    value: Any
    ms: float = 0.0
    step: Any = None
    schema: str = SCHEMA_DEFAULT
    meta: Any = None
    fault: Any = None
    line: int = 0

    def to_json(self) -> dict[str, Any]:
        """The entry as its cassette line's object."""
        obj: dict[str, Any] = {"seq": self.seq, "kind": self.kind, "name": self.name}
        obj["key"] = self.key
        if self.step is not None:
            obj["step"] = self.step
        if self.schema != SCHEMA_DEFAULT:
            obj["schema"] = self.schema
        obj["args"] = self.args
        obj[self.result] = self.value
        obj["ms"] = self.ms
        if self.fault is not None:
            obj["fault"] = self.fault
        if self.meta is not None:
            obj["meta"] = self.meta
        return obj


@dataclass(frozen=True, slots=True)
class Header:
    """The first line of a cassette.

    Attributes:
        version: the format version (1).
        match: ``keyed`` or ``strict``, as recorded.
        harness: ``{"git_sha": …, "dirty": …}`` of the program that recorded it.
        env: hashes of selected environment values at recording time.
        volatile: field names declared volatile (ignored by diffs).
        extra: any other fields, kept as they were.
    """

    version: int = FORMAT_VERSION
    match: str = "keyed"
    harness: dict[str, Any] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    volatile: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The header as its cassette line's object."""
        obj: dict[str, Any] = {"faultdeck": self.version, "match": self.match}
        obj["harness"] = self.harness
        obj["env"] = self.env
        obj["volatile"] = list(self.volatile)
        obj.update(self.extra)
        return obj


@dataclass(frozen=True, slots=True)
class Recording:
    """A cassette as read from disk.

    Attributes:
        path: the file.
        header: its header.
        entries: its calls, in file order.
        end: the last end line's object, or ``None`` when the run was interrupted.
        truncated_line: the number of a truncated last line that was skipped, if any.
        valid_bytes: the length of the file up to the end of its last whole line.
    """

    path: str
    header: Header
    entries: tuple[Entry, ...]
    end: dict[str, Any] | None
    truncated_line: int | None = None
    valid_bytes: int = 0

    @property
    def interrupted(self) -> bool:
        """Whether the run that wrote it did not close cleanly."""
        return self.end is None


def load(path: str | os.PathLike[str]) -> Recording:
    """Read and validate a cassette.

    Raises:
        CassetteNotFound: there is no such file.
        CassetteCorrupt: a line is not valid format v1 (the error names it).
        CassetteVersionError: the file is a newer format version.
    """
    name = os.fspath(path)
    try:
        data = Path(name).read_bytes()
    except FileNotFoundError:
        raise CassetteNotFound(
            name, None, "no such cassette", "record it first with mode='record'"
        ) from None
    except IsADirectoryError:
        raise CassetteNotFound(
            name, None, "is a directory, not a cassette", "pass the path of a .jsonl file"
        ) from None
    except OSError as exc:
        raise CassetteError(name, None, f"cannot be read ({exc.strerror})", "check it") from None
    return parse(data, name)


def parse(data: bytes, path: str = "<memory>") -> Recording:
    """Validate cassette bytes; see ``load``."""
    lines = data.split(b"\n")
    truncated: int | None = None
    valid_bytes = len(data)
    if lines[-1] == b"":
        lines.pop()
    elif len(lines) > 1 or lines[0]:
        # The last line has no newline: a crash mid-write, unless it is whole JSON anyway.
        try:
            orjson.loads(lines[-1])
        except orjson.JSONDecodeError:
            truncated = len(lines)
            valid_bytes = len(data) - len(lines[-1])
            lines.pop()
            warnings.warn(
                f"{path}:{truncated}: truncated last line skipped (a crash mid-write); "
                "the calls before it are intact",
                CassetteWarning,
                stacklevel=3,
            )
    if not lines:
        raise CassetteCorrupt(path, 1, "empty file, no header", _RESTORE)
    header = _header(lines[0], path)
    entries: list[Entry] = []
    end: dict[str, Any] | None = None
    loads = orjson.loads
    for number, raw in enumerate(lines[1:], start=2):
        try:
            obj = loads(raw)
        except orjson.JSONDecodeError as exc:
            raise CassetteCorrupt(path, number, f"not JSON ({exc})", _RESTORE) from None
        if type(obj) is not dict:
            raise CassetteCorrupt(path, number, "a line must be a JSON object", _RESTORE)
        if "seq" in obj:
            entries.append(_entry(obj, path, number))
            end = None
        elif "end" in obj and type(obj["end"]) is dict:
            end = obj["end"]
        else:
            raise CassetteCorrupt(
                path, number, "neither a call (no 'seq') nor an end line", _RESTORE
            )
    return Recording(path, header, tuple(entries), end, truncated, valid_bytes)


def _header(raw: bytes, path: str) -> Header:
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise CassetteCorrupt(path, 1, f"header is not JSON ({exc})", _RESTORE) from None
    if type(obj) is not dict or "faultdeck" not in obj:
        raise CassetteCorrupt(
            path,
            1,
            'no header: the first line of a cassette is {"faultdeck": 1, …}',
            "is this file a faultdeck cassette?",
        )
    version = obj.pop("faultdeck")
    if type(version) is not int or version < 1:
        raise CassetteCorrupt(path, 1, f"format version {version!r} is not valid", _RESTORE)
    if version > FORMAT_VERSION:
        raise CassetteVersionError(
            path,
            1,
            f"written in cassette format {version}; this faultdeck reads format {FORMAT_VERSION}",
            "upgrade faultdeck (pip install -U faultdeck)",
        )
    match = obj.pop("match", "keyed")
    if match not in ("keyed", "strict"):
        raise CassetteCorrupt(path, 1, f"match {match!r} is not 'keyed' or 'strict'", _RESTORE)
    harness = obj.pop("harness", {})
    env = obj.pop("env", {})
    volatile = obj.pop("volatile", [])
    if type(harness) is not dict or type(env) is not dict or type(volatile) is not list:
        raise CassetteCorrupt(path, 1, "harness and env must be objects, volatile a list", _RESTORE)
    return Header(version, match, harness, env, tuple(str(v) for v in volatile), obj)


def _entry(obj: dict[str, Any], path: str, number: int) -> Entry:
    # The common case, a well-formed out line, checked in one go; anything else takes the
    # careful path below, which names what is wrong.
    get = obj.get
    seq: Any = obj["seq"]
    kind: Any = get("kind")
    key: Any = get("key")
    ms: Any = get("ms", 0)
    if (
        "out" in obj
        and "error" not in obj
        and "stream" not in obj
        and "args" in obj
        and type(seq) is int
        and seq > 0
        and kind in KINDS
        and type(key) is str
        and key.startswith(kind)
        and key[len(kind) : len(kind) + 1] == ":"
        and (type(ms) is int or type(ms) is float)
        and ms >= 0
    ):
        name: Any = get("name")
        if type(name) is str and name:
            return _build(obj, "out", number)
    return _checked_entry(obj, path, number)


def _build(obj: dict[str, Any], result: str, number: int) -> Entry:
    """The entry of a line already checked."""
    get = obj.get
    return Entry(
        obj["seq"],
        obj["kind"],
        obj["name"],
        obj["key"],
        obj["args"],
        result,  # type: ignore[arg-type]
        obj[result],
        get("ms", 0),
        get("step"),
        get("schema", SCHEMA_DEFAULT),
        get("meta"),
        get("fault"),
        number,
    )


def _checked_entry(obj: dict[str, Any], path: str, number: int) -> Entry:
    seq: Any = obj["seq"]
    kind: Any = obj.get("kind")
    name: Any = obj.get("name")
    key: Any = obj.get("key")
    problem = None
    if type(seq) is not int or seq < 1:
        problem = f"seq {seq!r} is not a positive integer"
    elif kind not in KINDS:
        problem = f"kind {kind!r} is not one of {', '.join(KINDS)}"
    elif type(name) is not str or not name:
        problem = "name is missing or not a string"
    elif type(key) is not str or not key.startswith(f"{kind}:"):
        problem = f"key {key!r} does not start with '{kind}:'"
    elif "args" not in obj:
        problem = "args is missing"
    if problem is not None:
        raise CassetteCorrupt(path, number, f"seq {seq}: {problem}", _RESTORE)
    results = [r for r in RESULT_FIELDS if r in obj]
    if len(results) != 1:
        raise CassetteCorrupt(
            path,
            number,
            f"seq {seq}: a call has exactly one of out, error, stream "
            f"(found {', '.join(results) or 'none'})",
            _RESTORE,
        )
    result = results[0]
    value = obj[result]
    if result == "error" and (type(value) is not dict or type(value.get("type")) is not str):
        raise CassetteCorrupt(path, number, f"seq {seq}: error needs a 'type'", _RESTORE)
    if result == "stream" and (type(value) is not dict or type(value.get("events")) is not list):
        raise CassetteCorrupt(path, number, f"seq {seq}: stream needs 'events'", _RESTORE)
    ms = obj.get("ms", 0)
    if type(ms) not in (int, float) or ms < 0:
        raise CassetteCorrupt(path, number, f"seq {seq}: ms {ms!r} is not a duration", _RESTORE)
    return _build(obj, result, number)


def dumps_line(obj: Any) -> bytes:
    """One cassette line: compact JSON and a newline."""
    return orjson.dumps(obj, option=orjson.OPT_APPEND_NEWLINE)


class Writer:
    """Appends whole lines to a cassette, one unbuffered write per line.

    Args:
        path: the cassette file.
        header: written first when starting a fresh file; ``None`` to append to an
            existing one.
        keep_bytes: when appending, the file is cut to this length first (dropping a
            truncated last line); ``None`` keeps it whole.
        durability: ``flush`` writes each line through to the OS; ``fsync`` also syncs
            it to the disk before the call returns.
    """

    def __init__(
        self,
        path: str,
        *,
        header: Header | None,
        keep_bytes: int | None = None,
        durability: Durability = "flush",
    ) -> None:
        self.path = path
        self._fsync = durability == "fsync"
        self._lock = threading.Lock()
        parent = os.path.dirname(path)
        if parent:
            os.makedirs(parent, exist_ok=True)
        if header is not None:
            self._file = open(path, "wb", buffering=0)  # noqa: SIM115 - closed by close()
            self._write(dumps_line(header.to_json()))
        else:
            self._file = open(path, "r+b", buffering=0)  # noqa: SIM115 - closed by close()
            if keep_bytes is not None:
                self._file.truncate(keep_bytes)
            self._file.seek(0, os.SEEK_END)

    def write(self, obj: Any) -> None:
        """Append one line holding ``obj``."""
        self._write(dumps_line(obj))

    def _write(self, line: bytes) -> None:
        with self._lock:
            view = memoryview(line)
            while view:
                written = self._file.write(view)
                view = view[written or 0 :]
            if self._fsync:
                os.fsync(self._file.fileno())

    def close(self) -> None:
        """Close the file; later writes fail."""
        with self._lock:
            self._file.close()
