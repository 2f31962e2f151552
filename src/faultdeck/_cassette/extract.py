"""One call of a cassette frozen as a fixture: a one-call cassette, or the plain call.

The one-call cassette is the original header (plus ``"extracted": {"from", "seq"}``), the
call's line byte for byte as it was recorded, and an end line: it replays as any cassette
does, so the call behind a bug can be pinned in a unit test of the tool layer
(``@pytest.mark.faultdeck(cassette=…)``). The plain form is ``{"kind", "name", "args",
"out" | "error" | "stream"}``, for a test that feeds the recorded answer to its code itself.

An ``append`` run numbers its calls again, so a seq may stand on several lines: the first
(the run that wrote the cassette) is taken unless ``line`` picks another.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import Any

import orjson

from .._base.errors import CassetteError, CassetteWarning, CassetteWriteError, warn
from . import store
from .format import Entry, Recording
from .reader import load, parse
from .writer import dumps_line, write_error

__all__ = ["extract", "extract_json", "pick", "seq_ranges", "write_new"]


def _read(cassette: str) -> bytes:
    """The cassette's bytes; a missing or unreadable one raises as ``load`` says it."""
    if store.is_url(cassette):
        return store.read_bytes(cassette)
    try:
        return Path(cassette).read_bytes()
    except OSError:
        load(cassette)  # raises the error a reader gives, named as it names it
        raise


def seq_ranges(seqs: list[int]) -> str:
    """Seqs in brief: ``[1, 2, 3, 5]`` → ``1-3, 5``."""
    parts: list[str] = []
    last = 0
    for seq in sorted(set(seqs)):
        if parts and seq == last + 1:
            first = parts[-1].split("-")[0]
            parts[-1] = f"{first}-{seq}"
        else:
            parts.append(str(seq))
        last = seq
    return ", ".join(parts)


def pick(recording: Recording, seq: int, line: int | None = None) -> Entry:
    """The entry of call ``seq`` (the one on ``line`` when several lines have it).

    Raises:
        CassetteError: no call line has that seq (the error lists the seqs there are), or
            none of them is on ``line``.
    """
    path = recording.path
    found = [e for e in recording.entries if e.seq == seq]
    if not found:
        have = seq_ranges([e.seq for e in recording.entries]) or "none"
        flying = any(i.seq == seq for i in recording.in_flight())
        problem = (
            f"seq {seq} was in flight when the run stopped and has no answer"
            if flying
            else f"has no call with seq {seq}"
        )
        raise CassetteError(path, None, f"{problem} (its seqs: {have})", "pick one of them")
    if line is not None:
        chosen = [e for e in found if e.line == line]
        if not chosen:
            lines = ", ".join(str(e.line) for e in found)
            raise CassetteError(
                path,
                line,
                f"seq {seq} is not on this line",
                f"it is on line{'s' if len(found) > 1 else ''} {lines}",
            )
        return chosen[0]
    if len(found) > 1:
        lines = ", ".join(str(e.line) for e in found)
        warn(
            f"{path}: seq {seq} is on lines {lines} (later runs numbered their calls again); "
            f"extracted line {found[0].line}; --line (line=) picks another",
            CassetteWarning,
        )
    return found[0]


def _loaded(cassette: str | os.PathLike[str]) -> tuple[bytes, Recording]:
    name = os.fspath(cassette)
    data = _read(name)
    return data, parse(data, name)


def extract(cassette: str | os.PathLike[str], seq: int, *, line: int | None = None) -> bytes:
    """Call ``seq`` of ``cassette`` as a one-call cassette's bytes.

    Args:
        cassette: the cassette (a file or a store URL).
        seq: the call's seq.
        line: the line to take when several lines have that seq (``append`` runs).

    Returns:
        The header (with ``"extracted": {"from": cassette, "seq": seq}``), the call's line
        as recorded, and ``{"end": {"calls": 1, "status": "ok"}}`` (with the cassette's
        ``rules``, when its end line names them).

    Raises:
        CassetteError: the cassette cannot be read, or has no such call.
    """
    data, recording = _loaded(cassette)
    entry = pick(recording, seq, line)
    lines = data.split(b"\n")
    header = orjson.loads(lines[0])
    header["extracted"] = {"from": os.fspath(cassette), "seq": seq}
    call = lines[entry.line - 1].rstrip(b"\r")
    end: dict[str, Any] = {"calls": 1, "status": "ok"}
    if recording.rules is not None:  # keyed as stored there, so here too
        end["rules"] = recording.rules
    return dumps_line(header) + call + b"\n" + dumps_line({"end": end})


def extract_json(
    cassette: str | os.PathLike[str], seq: int, *, line: int | None = None
) -> dict[str, Any]:
    """Call ``seq`` of ``cassette`` as plain data: ``{"kind", "name", "args"}`` and one of
    ``"out"``, ``"error"`` or ``"stream"``, as recorded (args normalized and redacted).

    Raises:
        CassetteError: the cassette cannot be read, or has no such call.
    """
    _, recording = _loaded(cassette)
    entry = pick(recording, seq, line)
    return {
        "kind": entry.kind,
        "name": entry.name,
        "args": entry.args,
        entry.result: entry.fresh_value(),
    }


def write_new(path: str, data: bytes, *, force: bool = False) -> None:
    """Write ``data`` at ``path``, whole or not at all (a temporary file renamed into place).

    Raises:
        FileExistsError: ``path`` exists and ``force`` is false.
        CassetteWriteError: the disk refused.
    """
    if not force and os.path.lexists(path):
        raise FileExistsError(path)
    folder = os.path.dirname(path) or "."
    if not os.path.isdir(folder):
        raise CassetteWriteError(
            path, None, f"no folder {folder}", "create it, or pick another path"
        )
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".faultdeck-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.chmod(tmp, 0o644)
        if force:
            os.replace(tmp, path)
        else:
            os.link(tmp, path)  # fails if the path appeared meanwhile: never overwrite
            os.unlink(tmp)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError) and not isinstance(exc, FileExistsError):
            raise write_error(path, exc) from None
        raise
