"""Cassette format v1, read and validated; ``_writer`` writes it. JSON meets the disk only
in these two modules.

A cassette is JSONL: a header line, one line per call, and an end line written on a clean
close. While a run is writing, a ``begin`` line goes before each live call (its intent), so
that after a kill ``resume`` knows which calls were in flight; a clean close drops them.
Every reader error names the file, the line and what to do.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections import OrderedDict
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson

from .._base import terms
from .._base.errors import (
    CassetteCorrupt,
    CassetteError,
    CassetteNotFound,
    CassetteVersionError,
    CassetteWarning,
    warn,
)
from . import store
from .bodies import BodyError, KeptBodies
from .format import (
    FORMAT_VERSION,
    RESULT_FIELDS,
    Entry,
    Header,
    Intent,
    Recording,
)
from .lines import RESTORE as _RESTORE
from .lines import abort, entry, http_answer_problem, intent

__all__ = [
    "FORMAT_VERSION",
    "RESULT_FIELDS",
    "Entry",
    "Header",
    "Intent",
    "Recording",
    "http_answer_problem",
    "load",
    "load_shared",
    "parse",
]

HOLD_LINES_FROM = 4 << 20
"""A cassette this large (in bytes) or larger is read into entries that keep their lines'
bytes and parse args, value and meta when first read (``Entry``): a long recording then
costs about its size in memory. A smaller one keeps them parsed (about ten times its size,
40 MB at most): a rehearsal reads its values again and again, and a replay's fresh copy of
a parsed answer costs a third of parsing its whole line again."""

HOLD_LINES_BELOW = 2048
"""Even then a line this long or longer stays parsed: its values are mostly long strings,
which cost about their size parsed too, and a replay would parse it again (an HTTP answer's
body) for little memory saved. The body of a well-formed HTTP answer on such a line is also
kept as the bytes a client reads (``Recording.bodies``), whatever the cassette's size: a
binary one decoded and checked as the line is read, any other made when a replay first asks
for it (``KeptBodies``)."""

SHARE_UP_TO = 8 << 20
"""``load_shared`` keeps a recording for reuse when its file is no larger than this."""

COMPARE_UP_TO = 1 << 20
"""``load_shared`` tells a smaller file's content from another's by its bytes, a larger
one's by their hash."""

_SHARED_MAX = 4  # recordings kept by load_shared, the most recently used first


def load(path: str | os.PathLike[str]) -> Recording:
    """Read and validate a cassette: a file, or an fsspec URL (``s3://…``) in a store.

    Raises:
        ConfigError: ``path`` is a URL and fsspec is not installed (the error says what to
            install).
        CassetteNotFound: there is no such file or object.
        CassetteCorrupt: a line is not valid format v1 (the error names it).
        CassetteVersionError: the file is a newer format version.
    """
    name = os.fspath(path)
    if store.is_url(name):
        return parse(store.read_bytes(name), name)
    try:
        data = Path(name).read_bytes()
    except FileNotFoundError:
        raise CassetteNotFound(
            name,
            None,
            "no such cassette",
            f"record it first with {terms.current().about(name).record}",
        ) from None
    except IsADirectoryError:
        raise CassetteNotFound(
            name, None, "is a directory, not a cassette", "pass the path of a .jsonl file"
        ) from None
    except OSError as exc:
        raise CassetteError(name, None, f"cannot be read ({exc.strerror})", "check it") from None
    return parse(data, name)


def interrupted_warning(path: str) -> str:
    """The warning of a replay of a run that was interrupted."""
    return (
        f"{path}: the recorded run was interrupted (no end line); replaying what it "
        f"recorded; finish it with {terms.current().about(path).resume}"
    )


def load_shared(path: str | os.PathLike[str]) -> Recording:
    """``load(path)``, shared: a cassette read again unchanged gives the recording read
    before, so that a rehearsal parses its cassette once and not once per cell.

    A recording is immutable, and a replay reads it without changing it: sharing it between
    decks is safe. The file is read every time, and its recording reused only when the
    file is the same one with the same bytes (device, inode, size and times, then its
    content: compared byte for byte up to ``COMPARE_UP_TO``, by a hash beyond), so a
    cassette rewritten in place, even to the same size within the same clock tick, is read
    afresh. A few recordings are kept, the most recently used; a URL or a file larger than
    ``SHARE_UP_TO`` is simply loaded.

    Raises:
        The errors of ``load``.
    """
    name = os.fspath(path)
    if store.is_url(name):
        return load(name)
    try:
        st, data = _read_small(name)
    except OSError:
        return load(name)  # the same errors, named as load names them
    if data is None:
        return load(name)
    key = (st.st_dev, st.st_ino, len(data), st.st_mtime_ns, st.st_ctime_ns)
    content = _content(data)
    with _shared_lock:
        held = _shared.get(key)
        recording = held[1] if held is not None and held[0] == content else None
        if recording is not None:
            _shared.move_to_end(key, last=False)
    if recording is None:
        recording = parse(data, name)
        with _shared_lock:
            _shared[key] = (content, recording)
            _shared.move_to_end(key, last=False)
            while len(_shared) > _SHARED_MAX:
                _shared.popitem()
    elif recording.truncated_line is not None:
        _truncated_warning(name, recording.truncated_line)  # as a fresh read would warn
    return recording if recording.path == name else replace(recording, path=name)


def _read_small(name: str) -> tuple[os.stat_result, bytes | None]:
    """The file's status and bytes, or ``None`` for the bytes when it is larger than
    ``SHARE_UP_TO`` (read with os.read: a buffered file object costs as much as reading)."""
    fd = os.open(name, os.O_RDONLY)
    try:
        st = os.fstat(fd)
        if st.st_size > SHARE_UP_TO:
            return st, None
        chunks = []
        while chunk := os.read(fd, max(st.st_size + 1, 1 << 16)):
            chunks.append(chunk)
        return st, b"".join(chunks)
    finally:
        os.close(fd)


def _content(data: bytes) -> bytes:
    """What tells a file's content from another of the same size: itself when small (a
    compare costs less than a hash), else its hash."""
    return data if len(data) <= COMPARE_UP_TO else hashlib.blake2b(data, digest_size=16).digest()


_shared: OrderedDict[tuple[Any, ...], tuple[bytes, Recording]] = OrderedDict()
_shared_lock = threading.Lock()


def _truncated_warning(path: str, number: int) -> None:
    warn(
        f"{path}:{number}: truncated last line skipped (a crash mid-write); "
        "the calls before it are intact",
        CassetteWarning,
    )


def parse(data: bytes, path: str = "<memory>") -> Recording:  # noqa: C901 - one pass, a branch per line kind
    """Validate cassette bytes; see ``load``. A cassette of ``HOLD_LINES_FROM`` bytes or more
    is read into entries that keep their lines (``Entry``)."""
    hold = len(data) >= HOLD_LINES_FROM
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
            _truncated_warning(path, truncated)
    if not lines:
        raise CassetteCorrupt(path, 1, "empty file, no header", _RESTORE)
    header = _header(lines[0], path)
    entries: list[Entry] = []
    bodies = KeptBodies()
    intents: list[Intent] = []
    aborted: set[tuple[int, str]] = set()
    end: dict[str, Any] | None = None
    loads, append, below = orjson.loads, entries.append, HOLD_LINES_BELOW
    for number, raw in enumerate(lines[1:], 2):
        try:
            obj = loads(raw)
        except orjson.JSONDecodeError as exc:
            raise CassetteCorrupt(path, number, f"not JSON ({exc})", _RESTORE) from None
        except RecursionError:
            raise CassetteCorrupt(path, number, "nested too deeply", _RESTORE) from None
        if type(obj) is not dict:
            raise CassetteCorrupt(path, number, "a line must be a JSON object", _RESTORE)
        if "seq" in obj:
            if len(raw) < below:
                append(entry(obj, path, number, raw if hold else None))
            else:
                append(whole := entry(obj, path, number))
                value = whole.value
                if whole.result == "out" and http_answer_problem(value, body=True) is None:
                    try:
                        bodies.keep(number, value)
                    except BodyError as exc:
                        where = f"seq {whole.seq}: {exc}"
                        raise CassetteCorrupt(path, number, where, _RESTORE) from None
        elif "begin" in obj:
            intents.append(intent(obj, path, number))
        elif "abort" in obj:
            aborted.add(abort(obj, path, number))
        elif "end" in obj and type(obj["end"]) is dict:
            end = obj["end"]
            continue
        else:
            raise CassetteCorrupt(
                path, number, "neither a call (no 'seq') nor an end line", _RESTORE
            )
        end = None  # the run went on after an end line (append, resume)
    return Recording(
        path,
        header,
        tuple(entries),
        end,
        truncated,
        valid_bytes,
        tuple(intents),
        frozenset(aborted),
        bodies,
        rules if end is not None and type(rules := end.get("rules")) is str else None,
    )


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
