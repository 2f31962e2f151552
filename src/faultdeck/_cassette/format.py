"""Cassette format v1 as data: a header, one entry per call, intents, the recording.

Pure: ``reader`` reads files into these, ``lines`` checks each line, ``writer`` writes
them back.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple, get_args

import orjson

from .._keys.canonical import SCHEMA_DEFAULT

FORMAT_VERSION = 1
Result = Literal["out", "error", "stream"]
"""What a call produced: a value, an error or a stream."""

RESULT_FIELDS: tuple[Result, ...] = get_args(Result)


class Entry:
    """One recorded call.

    An entry read from a large cassette keeps its line's bytes instead of its parsed
    ``args``, ``value`` and ``meta``, and parses them the first time one is read (once: the
    entry then holds them), so that a long recording costs about its size in memory.
    ``value`` is shared with later reads: change only what ``fresh_value()`` gives.

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

    __slots__ = (
        "_args", "_form", "_meta", "_raw", "_value", "fault", "ids", "key", "kind", "line",
        "ms", "name", "result", "schema", "seq", "step",
    )  # fmt: skip

    def __init__(  # noqa: PLR0913 - an entry's fields, in their order
        self,
        seq: int,
        kind: str,
        name: str,
        key: str,
        args: Any,
        result: Result,
        value: Any,
        ms: float = 0.0,
        step: Any = None,
        schema: str = SCHEMA_DEFAULT,
        meta: Any = None,
        fault: Any = None,
        line: int = 0,
        ids: tuple[str, ...] | None = None,
        raw: bytes | None = None,  # (not keyword-only: a keyword costs a third of a build)
    ) -> None:
        # One store a field: a long recording builds one entry a line, and a tuple of four
        # assigned at once is built and unpacked first.
        self.seq = seq
        self.kind = kind
        self.name = name
        self.key = key
        self._args = args
        self.result = result
        self._value = value
        self.ms = ms
        self.step = step
        self.schema = schema
        self._meta = meta
        self.fault = fault
        self.line = line
        self.ids = ids
        self._raw = raw  # the line, when args, value and meta are still to be parsed from it
        self._form: bytes | None = None

    @property
    def args(self) -> Any:
        """The normalized, redacted args."""
        if self._raw is not None:
            self._parse()
        return self._args

    @property
    def value(self) -> Any:
        """The output, the error object or the stream object; not to be changed."""
        if self._raw is not None:
            self._parse()
        return self._value

    @property
    def meta(self) -> Any:
        """The free-form data stored with the call."""
        if self._raw is not None:
            self._parse()
        return self._meta

    def _parse(self) -> None:
        """Parse the held line, once (the reader checked it: it parses)."""
        raw = self._raw
        if raw is None:  # another thread parsed it meanwhile
            return
        obj = orjson.loads(raw)
        self._args, self._value, self._meta = obj["args"], obj[self.result], obj.get("meta")
        self._raw = None

    def args_json(self) -> bytes:
        """The args as orjson writes them (made once: a replay compares a call's with them)."""
        form = self._form
        if form is None:
            form = self._form = kept_bytes(orjson.dumps(self.args))  # kept, once per line
        return form

    def fresh_value(self) -> Any:
        """The value as a new object the caller may change: nothing read later sees it."""
        value = self.value
        if type(value) is dict or type(value) is list:
            return orjson.loads(orjson.dumps(value))
        return value

    def fields(self) -> tuple[Any, ...]:
        """The entry's fields, in their order."""
        return (
            self.seq, self.kind, self.name, self.key, self.args, self.result, self.value,
            self.ms, self.step, self.schema, self.meta, self.fault, self.line, self.ids,
        )  # fmt: skip

    def replace(self, **changes: Any) -> Entry:
        """A copy with ``changes`` (field names as in the constructor)."""
        fields = dict(zip(_FIELDS, self.fields(), strict=True))
        fields.update(changes)
        return Entry(**fields)

    def to_json(self) -> dict[str, Any]:
        """The entry as its cassette line's object."""
        return entry_line(*self.fields())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Entry):
            return NotImplemented
        return self.fields() == other.fields()

    def __hash__(self) -> int:
        return hash((self.seq, self.key, self.line))

    def __repr__(self) -> str:
        return f"Entry(seq={self.seq}, kind={self.kind!r}, name={self.name!r}, line={self.line})"


_FIELDS = (
    "seq", "kind", "name", "key", "args", "result", "value", "ms", "step", "schema", "meta",
    "fault", "line", "ids",
)  # fmt: skip


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


def kept_bytes(data: bytes) -> bytes:
    """``data`` in a bytes object of its own length, for bytes that are kept: orjson hands
    back what it writes in the buffer it wrote it in, 4 KB at least and up to eight times
    its length."""
    return memoryview(data).tobytes()


def body_bytes(body: Any) -> bytes:
    """A stored HTTP body as the bytes a client reads: text as UTF-8, anything else as
    JSON."""
    return body.encode() if isinstance(body, str) else orjson.dumps(body)


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
            (``body_bytes``), by the entry's line number: a binary body decoded and checked
            as the line is read, any other made from the parsed answer when first asked
            for (``bodies.KeptBodies``), once, so that a replay hands the bytes on instead
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
