"""Cassette format v1 as data: a header, one entry per call, intents, the recording.

Pure: ``reader`` reads files into these, ``lines`` checks each line, ``writer`` writes
them back.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple, get_args

import msgspec
import orjson

from .._keys.canonical import SCHEMA_DEFAULT

FORMAT_VERSION = 1
Result = Literal["out", "error", "stream"]
"""What a call produced: a value, an error or a stream."""

RESULT_FIELDS: tuple[Result, ...] = get_args(Result)


class Entry(NamedTuple):
    """One recorded call.

    A ``NamedTuple`` rather than a frozen dataclass: it is built once per cassette line,
    and a frozen dataclass costs more to build than parsing the line does (2.3 µs against
    1.5 µs); a named tuple is as immutable and costs a tenth.

    An entry read from a large cassette is a ``HeldEntry``: it keeps its line's bytes and
    parses ``args``, ``value`` and ``meta`` when they are read, so that a long recording
    costs about its size in memory. Either way every attribute reads the same; ``value``
    may be a fresh object or one shared with later reads: change only what
    ``fresh_value()`` gives.

    Attributes:
        seq: the call's position in the run that recorded it (1-based, by start order).
        kind: ``model``, ``tool``, ``env`` or ``http``.
        name: the call's name.
        key: the call's key (never includes ``seq``).
        args: the normalized, redacted args, for people.
        result: which of ``out``, ``error`` or ``stream`` the call produced.
        value: the output, the error object or the stream object; not to be changed.
        ms: how long the call took.
        step: the loop's step label, if the caller gave one.
        schema: the tool's schema version.
        meta: free-form data, never part of the key.
        fault: the fault injected at this call while recording, if any.
        line: the line number in the file it was read from (0 when not read).
        ids: the ids the call's output introduced, as recorded, if the line has them.
    """

    seq: int
    kind: str
    name: str
    key: str
    args: Any
    result: Result
    value: Any
    ms: float = 0.0
    step: Any = None
    schema: str = SCHEMA_DEFAULT
    meta: Any = None
    fault: Any = None
    line: int = 0
    ids: tuple[str, ...] | None = None

    def fresh_value(self) -> Any:
        """The value as a new object the caller may change: nothing read later sees it."""
        value = self.value
        if type(value) is dict or type(value) is list:
            return orjson.loads(orjson.dumps(value))
        return value

    def to_json(self) -> dict[str, Any]:
        """The entry as its cassette line's object."""
        return entry_line(*self)


def entry_line(  # noqa: PLR0913 - an entry's fields, in their order
    seq: int,
    kind: str,
    name: str,
    key: str,
    args: Any,
    result: Result,
    value: Any,
    ms: float,
    step: Any = None,
    schema: str = SCHEMA_DEFAULT,
    meta: Any = None,
    fault: Any = None,
    line: int = 0,
    ids: Any = None,
) -> dict[str, Any]:
    """The cassette line's object of an entry with these fields (``line`` is not written):
    a live call's line is made from its fields directly, with no ``Entry`` in between."""
    obj: dict[str, Any] = {"seq": seq, "kind": kind, "name": name}
    obj["key"] = key
    if step is not None:
        obj["step"] = step
    if schema != SCHEMA_DEFAULT:
        obj["schema"] = schema
    obj["args"] = args
    obj[result] = value
    obj["ms"] = ms
    if fault is not None:
        obj["fault"] = fault
    if meta is not None:
        obj["meta"] = meta
    if ids is not None:
        obj["ids"] = list(ids)
    return obj


def body_bytes(body: Any) -> bytes:
    """A stored HTTP body as the bytes a client reads: text as UTF-8, anything else as
    JSON."""
    return body.encode() if isinstance(body, str) else orjson.dumps(body)


_fields = tuple.__iter__


def stored_parts(entry: Entry) -> tuple[Any, dict[str, Any] | None]:
    """An entry's args and, for a ``HeldEntry``, its whole line parsed once (values read
    from it are fresh copies): what reading the args and then the answer costs, one parse
    at most."""
    if type(entry) is HeldEntry:
        obj: dict[str, Any] = orjson.loads(entry.raw)
        return obj["args"], obj
    return entry.args, None


_ARGS = b'"args":'
_OPEN = b"{"


class _Answer(msgspec.Struct):
    """What a replay reads of a plain held line: its args as their bytes, and its answer."""

    args: msgspec.Raw
    out: Any


_answer = msgspec.json.Decoder(_Answer).decode
_Raw = msgspec.Raw


def held_after(entry: HeldEntry, form: bytes) -> dict[str, Any] | None:
    """``entry``'s answer under its result field (a fresh copy), when the line stores its
    args as ``form`` (JSON bytes as orjson writes them) byte for byte; ``None`` when it may
    not, and the caller compares the parsed line.

    A plain line (``held.entries`` took it: msgspec reads its values as orjson does) is
    read by msgspec in one pass: its args (the last named, as orjson takes them) as their
    bytes, and its answer; nothing else is built.

    Any other line is searched, and the fields after its args parsed. The line's args
    start after its first ``"args":`` with nothing but its own brace open before (a string
    holds ``"`` only escaped, so that is the line's own field, before any object holds
    one), and a JSON value ends where its bytes say: a line that holds ``form`` there,
    followed by a comma, holds exactly those args, unless it names them twice (then the
    last counts: ``None``). What follows the comma, in braces, is an object of the line's
    other fields: parsed alone, the answer (``None`` when it is not among them) costs less
    than the whole line.
    """
    if entry.plain:
        line = _answer(entry.raw)
        return {"out": line.out} if line.args == _Raw(form) else None
    # (partition and slices: bytes.find and startswith parse their arguments at a cost)
    before, named, after = entry.raw.partition(_ARGS)
    end = len(form)
    # The line's own brace is the only one before: the last one found is its first byte
    # (rpartition, not count: count parses its arguments too; a line that starts with a
    # space is compared parsed).
    if (
        not named
        or after[:end] != form
        or after[end : end + 1] != b","
        or before.rpartition(_OPEN)[0]
    ):
        return None
    rest: dict[str, Any] = orjson.loads(b"{" + after[end + 1 :])
    # "args" named again at the top (the last counts: other args), or the answer written
    # before them (not among these fields): the caller compares the parsed line.
    return rest if entry.result in rest and "args" not in rest else None


class HeldEntry(Entry):
    """An entry that keeps its cassette line's bytes and parses ``args``, ``value`` and
    ``meta`` from them when read (each read a fresh parse).

    Built as ``HeldEntry(seq, kind, name, key, line_bytes, result, plain, ms, step, schema,
    None, fault, line, ids)`` from a line already checked (``plain``: ``True`` when
    ``held.entries`` took it, else ``None``). It reads, compares, copies and
    pickles as the ``Entry`` of the parsed line (``parsed()``).
    """

    __slots__ = ()

    # The line's bytes, where an Entry keeps its args; and whether ``held.entries`` took
    # the line (``True``: msgspec reads its values as orjson does) or ``None``, where an
    # Entry keeps its value. (Read as the named tuple's fields are: ``tuple.__getitem__``
    # would cost a call and a tuple.)
    raw: bytes = Entry.args
    plain: bool | None = Entry.value

    @property
    def args(self) -> Any:
        """The normalized, redacted args, parsed from the line."""
        return orjson.loads(self.raw)["args"]

    @property
    def value(self) -> Any:
        """The output, the error object or the stream object, parsed from the line."""
        return orjson.loads(self.raw)[self.result]

    @property
    def meta(self) -> Any:
        """The free-form data, parsed from the line."""
        return orjson.loads(self.raw).get("meta")

    def fresh_value(self) -> Any:
        """The value as a new object the caller may change (every read is a new parse)."""
        return orjson.loads(self.raw)[self.result]

    def parsed(self) -> Entry:
        """This entry as an ``Entry`` holding its parsed args, value and meta."""
        seq, kind, name, key, raw, result, _, ms, step, schema, _, fault, line, ids = _fields(self)
        obj = orjson.loads(raw)
        return Entry(
            seq, kind, name, key, obj["args"], result, obj[result], ms, step, schema,
            obj.get("meta"), fault, line, ids,
        )  # fmt: skip

    def to_json(self) -> dict[str, Any]:
        """The entry as its cassette line's object."""
        return self.parsed().to_json()

    def __iter__(self) -> Iterator[Any]:
        return iter(self.parsed())

    def __getitem__(self, index: Any) -> Any:
        return self.parsed()[index]

    def __eq__(self, other: object) -> bool:
        return self.parsed() == other

    def __ne__(self, other: object) -> bool:
        return self.parsed() != other

    def __hash__(self) -> int:
        return hash(self.parsed())

    def __repr__(self) -> str:
        return repr(self.parsed())

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), tuple(_fields(self)))

    def _asdict(self) -> dict[str, Any]:
        return self.parsed()._asdict()

    def _replace(self, /, **changes: Any) -> Entry:  # type: ignore[override]  # an Entry
        return self.parsed()._replace(**changes)


@dataclass(frozen=True, slots=True)
class Header:
    """The first line of a cassette.

    Attributes:
        version: the format version (1).
        match: ``keyed`` or ``strict``, as recorded.
        harness: ``{"git_sha": …, "dirty": …}`` of the program that recorded it.
        env: hashes of selected environment values at recording time.
        volatile: the field names whose values were stored as placeholders: the provider
            metadata that holds an answer's wall-clock time and the project's declared
            ``volatile`` (ignored by diffs). Older cassettes list only the declared ones.
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


class Intent(NamedTuple):
    """A ``begin`` line: a live call about to run, written before it runs.

    Attributes:
        seq: the call's seq in the run that wrote it.
        kind, name, key: the call.
        side_effect: the call changes the world; after a kill it is in doubt.
        idempotency_key: the key a side-effecting tool received, reused if it runs again.
        resumes: the seq of the earlier intent this one takes over (a call that was in
            flight at a kill, run again by ``resume``).
        line: the line number in the file.
    """

    seq: int
    kind: str
    name: str
    key: str
    side_effect: bool = False
    idempotency_key: str | None = None
    resumes: int | None = None
    line: int = 0


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
        intents: its ``begin`` lines, in file order (none in a cleanly closed cassette).
        aborted: ``(seq, key)`` of the intents whose call never reached the world.
        bodies: the body of each long recorded HTTP answer as the bytes a client reads
            (``body_bytes``), by the entry's line number: made once as the line is read,
            while its parsed body is at hand, so that a replay hands the bytes on instead
            of serializing a body it has not touched since. Only a well-formed answer
            (``lines.http_answer_problem`` finds nothing) is here, whatever the line's kind:
            a replay need not check its shape again.
        rules: the normalization rules (``Normalizer.fingerprint``) every call in the file
            was keyed under with its args as stored, so that the same args key the same
            again under the same rules (``_keys/asis.py``), as its last end line names them;
            ``None`` when it names none (a call whose args held a path under the project
            root, or went through a project rule, or was written under other rules) or the
            file does not end with an end line.
    """

    path: str
    header: Header
    entries: tuple[Entry, ...]
    end: dict[str, Any] | None
    truncated_line: int | None = None
    valid_bytes: int = 0
    intents: tuple[Intent, ...] = ()
    aborted: frozenset[tuple[int, str]] = frozenset()
    bodies: Mapping[int, bytes] = field(default_factory=dict, compare=False, repr=False)
    rules: str | None = field(default=None, compare=False, repr=False)

    @property
    def interrupted(self) -> bool:
        """Whether the run that wrote it did not close cleanly."""
        return self.end is None

    @property
    def failed(self) -> bool:
        """Whether the run that wrote it closed after an error got out of it."""
        return self.end is not None and self.end.get("status") not in (None, "ok")

    def in_flight(self) -> tuple[Intent, ...]:
        """The calls that began but never finished: in flight when the run stopped."""
        if not self.intents:
            return ()
        done = {(e.seq, e.key) for e in self.entries} | set(self.aborted)
        done.update((i.resumes, i.key) for i in self.intents if i.resumes is not None)
        return tuple(i for i in self.intents if (i.seq, i.key) not in done)

    @property
    def begun(self) -> int:
        """The highest seq of a call that began in the recorded run (0 for none)."""
        seqs = [e.seq for e in self.entries] + [i.seq for i in self.intents]
        return max(seqs, default=0)

    @property
    def unseen(self) -> int:
        """How many seqs up to ``begun`` left no line: calls the run had numbered but not yet
        written when it stopped (under threads a later call's intent can be written first)."""
        seqs = {e.seq for e in self.entries} | {i.seq for i in self.intents}
        return max(self.begun - len(seqs), 0)
