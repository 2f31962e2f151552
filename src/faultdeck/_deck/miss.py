"""The errors of a call that cannot go on: a ``ReplayMiss`` (which call, after how many
agreeing, what changed) and a ``CallInDoubt`` (a side effect that may have run).

Pure: given the call and the recording, it builds the error; it runs only when one is due.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any, Protocol

from .._base import terms
from .._base.errors import CallInDoubt, ReplayMiss
from .._base.words import ordinal, plural
from .._cassette.format import Entry, Intent, Recording
from .._keys.fields import field_diff, preview_pair
from .index import ReplayIndex

NEAREST_LIMIT = 500
DIFF_SHOWN = 8


def miss_in(
    call: _Asked,
    index: ReplayIndex,
    recording: Recording | None,
    *,
    cassette: str,
    strict: bool,
    waited: Sequence[Entry | Intent] = (),
    waited_s: float = 0.0,
) -> ReplayMiss:
    """The ``ReplayMiss`` of ``call`` in a run that replays ``recording`` through ``index``
    (``build_miss`` says what each fact is)."""
    return build_miss(
        cassette=cassette,
        seq=call.seq,
        kind=call.kind,
        name=call.name,
        key=call.key,
        args=call.args,
        schema=call.schema,
        agreed=index.served,
        recorded=index.recorded.get(call.key, 0),
        asked=index.asked[call.key],
        strict=strict,
        entries=recording.entries if recording is not None else (),
        unused={id(e) for e in index.unused()},
        waited=sorted((w.seq, w.kind, w.name) for w in waited),
        waited_s=waited_s,
    )


def build_miss(  # noqa: PLR0913 - keyword-only: every fact a miss message names
    *,
    cassette: str,
    seq: int,
    kind: str,
    name: str,
    key: str,
    args: Any,
    schema: str,
    agreed: int,
    recorded: int,
    asked: int,
    strict: bool,
    entries: Sequence[Entry],
    unused: Collection[int],
    waited: Sequence[tuple[int, str, str]] = (),
    waited_s: float = 0.0,
) -> ReplayMiss:
    """Build the ``ReplayMiss`` for a call with no answer left.

    Args:
        cassette: the cassette's path.
        seq, kind, name, key: the call.
        args: the call's normalized args, redacted as they are stored.
        schema: the call's schema version.
        agreed: calls answered from the cassette before this one.
        recorded: how often this key was recorded.
        asked: how often this key has been asked, this call included.
        strict: whether matching is strict.
        entries: every recorded call.
        unused: ``id()`` of the recorded calls not yet used.
        waited: resuming, the calls of the killed run (seq, kind, name) this one waited
            ``waited_s`` seconds for, that were never asked again.
    """
    lines = [
        f"replay miss at seq {seq}: {kind} {name} (key {key}) has no recorded answer left "
        f"in {cassette}",
        f"  {plural(agreed, 'call')} agreed with the recording before it.",
    ]
    if recorded:
        lines.append(
            f"  this key was recorded {plural(recorded, 'time')} and is now asked a "
            f"{ordinal(asked)} time: a retry storm, or a loop that repeats itself"
            + (" (or a call out of its recorded position: match is strict)" if strict else "")
        )
    diff: tuple[tuple[str, Any, Any], ...] = ()
    near: dict[str, Any] | None = None
    best = _nearest(seq, kind, name, args, entries, unused)
    if best is not None:
        diff = tuple(field_diff(best.args, args))
        near = {"seq": best.seq, "key": best.key, "line": best.line, "args": best.args}
        lines.append(
            f"  nearest recorded {kind} {name}: seq {best.seq}, key {best.key}, "
            f"{cassette}:{best.line}{'' if id(best) in unused else ' (already used)'}"
        )
        for path, was, now in diff[:DIFF_SHOWN]:
            recorded_text, asked_text = preview_pair(was, now)
            lines.append(f"    {path}: recorded {recorded_text}, now {asked_text}")
        if len(diff) > DIFF_SHOWN:
            lines.append(f"    … and {len(diff) - DIFF_SHOWN} more differing fields")
        if best.schema != schema:
            same = "args are equal; " if not diff else ""
            lines.append(
                f"    {same}the schema version differs: recorded {best.schema!r}, now {schema!r}"
            )
        elif not diff and best.key != key:
            lines.append(_same_args(strict, best.seq, seq))
    elif not recorded:
        names = sorted({e.name for e in entries if e.kind == kind})
        lines.append(
            f"  nothing named {name} was recorded; recorded {kind} calls: "
            f"{', '.join(names[:10]) or 'none'}"
        )
    if waited:
        shown = ", ".join(
            f"seq {w_seq} ({w_kind} {w_name})" for w_seq, w_kind, w_name in waited[:3]
        )
        more = f" and {len(waited) - 3} more" if len(waited) > 3 else ""
        lines.append(
            f"  resumed, it waited {waited_s:g} s for its turn, but the killed run's {shown}"
            f"{more}, numbered before it, {'was' if len(waited) == 1 else 'were'} never asked "
            "again: this run no longer makes "
            f"{'that call' if len(waited) == 1 else 'those calls'} where the killed run did"
        )
    said = terms.current().about(cassette)
    lines.append(
        f"  if the change is intended, re-record with {said.record}, or record only the new "
        f"calls with {said.append}"
    )
    return ReplayMiss(
        "\n".join(lines),
        seq=seq,
        kind=kind,
        name=name,
        key=key,
        agreed=agreed,
        nearest=near,
        diff=diff,
    )


class _Call(Protocol):
    seq: int
    kind: str
    name: str
    key: str


class _Asked(_Call, Protocol):
    args: Any
    schema: str


def in_doubt(call: _Call, where: str, line: int) -> CallInDoubt:
    """The ``CallInDoubt`` of a side-effecting call in flight at a kill, whose intent is at
    ``where:line``."""
    return CallInDoubt(
        f"resume at seq {call.seq}: {call.kind} {call.name} (key {call.key}) was in flight "
        f"when the run stopped (its intent is at {where}:{line}, no answer was written), "
        "so it may have run. It has side effects, so it is not run again unless told: "
        "declare @deck.tool(side_effect=True, on_in_doubt='rerun') or 'skip' (deck.call "
        "takes on_in_doubt= too), or give the tool an idempotency key "
        "(@deck.tool(idempotency_key='name')); or check the world and re-record",
        seq=call.seq,
        kind=call.kind,
        name=call.name,
        key=call.key,
        line=line,
    )


def _same_args(strict: bool, recorded_seq: int, seq: int) -> str:
    """Why a call with the recorded args and schema still has another key."""
    if strict and recorded_seq != seq:
        return f"    the args agree, but it was recorded at seq {recorded_seq} (match is strict)"
    return (
        "    the args agree as stored, but the recorded key was made from other values "
        "(an older faultdeck keyed secrets unmasked); re-record"
    )


def _nearest(
    seq: int, kind: str, name: str, args: Any, entries: Sequence[Entry], unused: Collection[int]
) -> Entry | None:
    """The recorded call of the same kind and name most like this one: unused first, then
    fewest differing fields, then closest in position."""
    same = [e for e in entries if e.name == name and e.kind == kind]
    if not same:
        return None
    same.sort(key=lambda e: abs(e.seq - seq))
    return min(
        same[:NEAREST_LIMIT],
        key=lambda e: (
            id(e) not in unused,
            len(field_diff(e.args, args, limit=1000)),
            abs(e.seq - seq),
        ),
    )
