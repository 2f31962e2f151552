"""A deck's run: the cassette as its mode opens it, the decision for each call, the log.

The ``Deck`` is the public face and its settings; the run holds the state of one run under
one lock: the ``ReplayIndex`` (per-key FIFO queues), the ``CassetteSession`` (the lock file
and the working file), the id renaming, the log. ``begin`` decides a call and returns its
``Call``, whose methods finish it (``call.py``).

Replay looks a call up by the key of its args as they are first (a key is always made of
redacted args, so args that hold no secret have the same key either way); only when that
misses are the args redacted and keyed again. A replay of calls without secrets pays
nothing for redaction.

A cassette named by a store URL (``s3://…``) is read from the store to replay; a run that
writes works on a local copy in a temporary folder (its lock file too) and uploads it when
it closes cleanly, so the store keeps the old cassette after a run that fails.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any

from .._base.clock import Clock
from .._base.config import Durability
from .._base.context import step_now
from .._base.errors import (
    ArgumentError,
    ConfigError,
    ReplayMiss,
)
from .._cassette import store
from .._cassette.format import Entry, Intent, Recording
from .._cassette.session import CassetteSession
from .._keys.canonical import KINDS, make_key
from .._keys.ids import IdMap
from .._keys.normalize import Normalizer
from .._keys.redact import Redactor
from .._keys.stored import Store, output_store
from ..faults import CallInfo, FaultRun
from .call import Call, Logged, as_record, recorded_fault
from .clean import CleanReplay
from .fork import ForkPoint
from .index import ReplayIndex
from .live import CleanRecord
from .miss import build_miss
from .opening import Opening
from .report import CallRecord, Report
from .reporting import build_report
from .resuming import TURN_WAIT, Resuming

_REPLAYING = frozenset({"replay", "append", "resume", "fork"})
_KINDS = frozenset(KINDS)


class Run(Opening, CleanReplay, CleanRecord, Resuming):
    """A deck's run: its cassette, its calls' decisions and its log, under one lock.

    Its state is read and changed under one lock (an ``RLock``), so a deck can be shared
    between threads; the call itself (``fn``) runs outside the lock.

    Args:
        path: the cassette file.
        mode: the deck's mode, as configured (``once`` is decided on opening).
        match: ``keyed`` or ``strict``.
        durability: ``flush`` or ``fsync`` each written line.
        clock: where durations are read.
        fault_run: this run's fault counters, if faults are injected.
        normalizer: normalizes (and redacts) args before keying, outputs before writing.
        redactor: masks secrets before anything is keyed or written.
        allow_side_effects: side-effecting calls may run live.
        repeat_last: a call asked more often than recorded gets the last answer again.
        environ: the environment whose locale and hash seed go into a new header.
        root: the project root, whose git commit is recorded and compared.
        on_harness_change: ``warn`` or ``ignore`` on a cassette from another commit.
        replace: ``False``: a fresh recording stays in its partial file, for the caller.
        fork: mode ``fork``'s parent and fork point (``fork.py``).

    Attributes:
        path: the cassette file.
        opened: whether ``open`` has run.
        mode: the mode decided on opening (``once`` becomes ``replay`` or ``record``).
        index, ids, log, file, lock, clock, normalizer, redactor, allow_side_effects:
            the state a ``Call`` finishes itself with (its ``Ledger``).
        store_output: stores a live answer under the deck's rules (``output_store``, made
            once for the run).
        clean, records_plain: a plain replay or a plain live call may take its short route
            (``clean.py``, ``live.py``).
    """

    def __init__(  # noqa: PLR0913 - keyword-only: the deck's resolved options, passed once
        self,
        *,
        path: str,
        mode: str,
        match: str,
        durability: Durability,
        clock: Clock,
        fault_run: FaultRun | None,
        normalizer: Normalizer,
        redactor: Redactor,
        allow_side_effects: bool,
        repeat_last: bool,
        environ: Mapping[str, str],
        root: str,
        on_harness_change: str,
        replace: bool = True,
        fork: ForkPoint | None = None,
    ) -> None:
        self.path = path
        self._fork, self._at = fork, (fork.at if fork is not None else 0)
        self.lock = threading.RLock()
        self.configured = mode
        self.mode = mode
        self.opened = False
        self._closed = False
        self.file = CassetteSession(path, durability=durability, replace=replace)
        self._copy = store.WorkingCopy(path) if store.is_url(path) else None
        self._durability = durability
        self._replace = replace
        self._recording: Recording | None = None
        self._environ = environ
        self._root = root
        self._on_harness_change = on_harness_change
        self._harness_changed: tuple[str, str] | None = None
        # What a resumed run found in flight, by key, and the last seq the old run began.
        self._in_flight: dict[str, deque[Intent]] = {}
        self._begun = 0
        self._unseen = 0  # of those seqs, how many left no line (numbered, never written)
        self._faulted = False  # whether any recorded call carries a fault
        self.clean = False  # replaying, no fault recorded: ``replay_clean`` may answer
        self.records_plain = False  # recording, no fault plan: ``record_clean`` may run calls
        self.recorded_plain = 0  # calls it ran
        # Replaying lines keyed under this deck's rules: ``take_clean`` may key a call whose
        # args are a line's stored args as that line (``_keys/asis.py``).
        self.asis = False
        self.as_stored = 0  # calls answered so
        # Every call so far answered by that route, in file order from the first line: the
        # run has learned the ids the recording had learned there, and named none.
        self.aligned = True
        self._match = match
        self.index = ReplayIndex(strict=match == "strict", repeat_last=repeat_last)
        self.clock = clock
        self._fault_run = fault_run
        self.normalizer = normalizer
        self.redactor = redactor
        rules = normalizer.config
        self.store_output: Store = output_store(
            redactor,
            volatile=normalizer.output_volatile,
            declared=frozenset(rules.volatile),
            ids=rules.ids,
        )
        self.allow_side_effects = allow_side_effects
        self._seq = 0
        self.ids = IdMap()
        self.log: list[Logged] = []
        # The error type of each live call that got no answer (``outage.py``): not written.
        self.unanswered: list[str] = []

    @property
    def recording(self) -> Recording | None:
        """The cassette as it was read on opening; ``None`` for a fresh recording."""
        return self._recording

    @property
    def where(self) -> str:
        """The file the recording was read from: the cassette, or its partial file."""
        return self._recording.path if self._recording is not None else self.path

    # -- deciding a call -----------------------------------------------------------------

    def begin(  # noqa: C901 - the one decision per call (mode, key, answer, fault, intent), kept in one place on the hot path
        self,
        kind: str,
        name: str,
        args: Any,
        schema: str,
        step: Any,
        meta: Any,
        shaped: frozenset[str],
        awaits: bool = False,
    ) -> Call:
        """Number the call, key it and decide: the recorded answer, a live run, or a miss.

        A resumed call ahead of the recording waits for the calls before it (``resuming``);
        with ``awaits`` (``Deck.abegin``) inside an event loop it comes back ``behind`` instead,
        for ``catch_up``.

        Raises:
            ArgumentError: the kind or name is not one a cassette can hold.
            ConfigError: the deck is closed.
            CassetteWriteError: an earlier write failed; the deck no longer records.
            ReplayMiss: the cassette has no answer and the mode may not run the call.
        """
        if kind not in _KINDS:
            raise ArgumentError("kind", f"{kind!r} is not one of: {', '.join(KINDS)}")
        if type(name) is not str or not name:
            raise ArgumentError("name", f"{name!r} is not a non-empty string")
        if not self.opened:
            self.open()  # the first call opens the deck, as `with` would
        if step is None:
            step = step_now()
        if type(step) is str:
            step = self.redactor.redact_text(step)
        with self.lock:
            if self._closed:
                raise ConfigError(f"deck for {self.path} is closed; open a new Deck")
            self._seq += 1
            self.aligned = False  # a call the short route did not answer
            seq = self._seq
            mode = self.mode
            if mode == "fork" and seq > self._at:
                mode = "record"  # past the fork point: every call runs live
            started = self.clock.now()
            if mode == "off":
                call = Call(
                    self, seq, kind, name, "", args, schema, step, meta, None, False, started
                )
            else:
                name, norm, key = self._keyed(kind, name, args, schema, seq, mode in _REPLAYING)
                call = Call(
                    self, seq, kind, name, key, norm, schema, step, meta, None, True, started
                )
            fault = None
            if self._fault_run is not None:
                fault = self._fault_run.pick(CallInfo(seq, kind, name, call.key))
            if mode in ("record", "off"):
                call.fault = fault
                if mode == "record":
                    call.rekey = self._rekeys(kind, name, args)
                return call
            head = self.index.peek(key, seq) if self._faulted else None
            if head is not None and head.fault is not None:
                # Recorded under a fault: the answer already carries it, whatever the plan.
                call.recorded = self.index.take(key, seq)
                call.fault = recorded_fault(head, self.where)
                call.fault_applied = True
                call.write = False
                return call
            call.fault = fault
            if fault is not None and fault.raises and fault.kind not in shaped:
                # The call never reaches the recording: a retry gets the recorded answer.
                call.write = False
                return call
            entry = self.index.take(key, seq)
            if entry is not None:
                call.recorded = entry
                call.write = False
                if mode == "resume":
                    self._took_turn()
                return call
            if mode == "append":
                call.rekey = self._rekeys(kind, name, args)
                return call
            if mode == "resume":
                call.rekey = self._rekeys(kind, name, args)
                queue = self._in_flight.get(key)
                if queue:
                    # In flight when the old run stopped: it goes live, its intent taken over.
                    call.resumes = queue.popleft()
                    call.in_doubt = call.resumes.side_effect
                    self._took_turn()
                    return call
                if self.index.remaining == 0 or seq > self._begun:
                    return call
                if self._unseen:  # the old run numbered a call it never wrote: this may be it
                    self._unseen -= 1
                    return call
                if self._waits_turn(call, awaits):  # early, not divergent: threads reorder
                    return call
            raise self._miss(call)

    def _rekeys(self, kind: str, name: str, args: Any) -> bool:
        """Whether a replay must normalize args like these again to key them, for a call
        that runs live and writes its line: they may hold a path under the project root
        (made relative, it may read as an id or a date-time a second walk changes), or a
        project rule applies (``Recording.rules``)."""
        normalizer = self.normalizer
        return normalizer.has_rule(kind, name) or normalizer.may_move(args)

    def _keyed(
        self, kind: str, name: str, args: Any, schema: str, seq: int, replaying: bool
    ) -> tuple[str, Any, str]:
        """The call's name, args and key as stored: redacted, so a secret keys as its mask."""
        normalizer, ids = self.normalizer, self.ids
        if replaying:
            # Args without a secret key the same unredacted; try that (cheap) first.
            ids.tentative()
            norm = normalizer.args(kind, name, args, ids, redact=False)
            key = make_key(kind, name, norm, schema)
            if self.index.has(key, seq) or key in self._in_flight:
                ids.commit()
                return name, norm, key
            ids.rollback()
        name = self.redactor.redact_text(name)
        norm = normalizer.args(kind, name, args, ids)
        return name, norm, make_key(kind, name, norm, schema)

    def _miss(self, call: Call, waited: Sequence[Entry | Intent] = ()) -> ReplayMiss:
        self.log.append((call, "miss", None, 0.0, None, None, None, False))
        index = self.index
        return build_miss(
            cassette=self._fork.parent if self._fork is not None else self.path,
            seq=call.seq,
            kind=call.kind,
            name=call.name,
            key=call.key,
            args=call.args,
            schema=call.schema,
            agreed=index.served,
            recorded=index.recorded.get(call.key, 0),
            asked=index.asked[call.key],
            strict=self._match == "strict",
            entries=self._recording.entries if self._recording is not None else (),
            unused={id(e) for e in index.unused()},
            waited=sorted((w.seq, w.kind, w.name) for w in waited),
            waited_s=TURN_WAIT,
        )

    # -- the report ------------------------------------------------------------------------

    def calls(self) -> tuple[CallRecord, ...]:
        """Every call so far, in the order they started."""
        with self.lock:
            return tuple(sorted(map(as_record, self.log), key=lambda c: c.seq))

    def report(self) -> Report:
        """What happened so far; see ``Deck.report``."""
        with self.lock:
            kept = (self._copy.kept if self._copy else None) or self.file.kept
            return build_report(
                self.calls(),
                cassette=self.path,
                mode=self.mode,
                index=self.index,
                recording=self._recording,
                clock=self.clock,
                harness_changed=self._harness_changed,
                kept=kept,
                stored=self.file.stored,
                unanswered=tuple(self.unanswered),
            )
