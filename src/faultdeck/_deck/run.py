"""A deck's run: the cassette as its mode opens it, the decision for each call, the log.

The ``Deck`` is the public face and its settings; the run holds the state of one run under
one lock: the ``Cassette`` (the lock file and the working file), the ``ReplayIndex``
(per-key FIFO queues), the id renaming, the log. ``begin`` decides every call and returns
its ``Call``, whose methods finish it (``call.py``).

Replaying, ``begin`` first compares the call with the line an in-order replay expects next:
args that are that line's stored args key as it did (``_keys/asis.py``), so nothing is
normalized or hashed. Otherwise it keys the call by its args as they are (a key is always
made of redacted args, so args that hold no secret have the same key either way); only when
that misses are the args redacted and keyed again. A replay of calls without secrets pays
nothing for redaction.

A cassette named by a store URL (``s3://…``) is read from the store to replay; a run that
writes works on a local copy in a temporary folder (its lock file too) and uploads it when
it closes cleanly, so the store keeps the old cassette after a run that fails.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping, Sequence
from operator import attrgetter
from typing import Any

from .._base.clock import Clock
from .._base.config import Durability, Repeats
from .._base.context import step_now
from .._base.errors import ArgumentError, CassetteCorrupt, ConfigError, ReplayMiss
from .._cassette.format import Entry, Intent
from .._cassette.lines import RESTORE
from .._keys.asis import args_form
from .._keys.canonical import KINDS, make_key
from .._keys.normalize import Normalizer
from .._keys.redact import Redactor
from ..faults import CallInfo, Fault, FaultRun
from ..faults import from_json as fault_from_json
from .altering import kept_answers
from .call import Call
from .fork import ForkPoint
from .index import ReplayIndex
from .ledger import Ledger
from .miss import miss_in
from .opening import Cassette
from .report import CallRecord, Report
from .reporting import build_report
from .resuming import TURN_WAIT, Turns

_REPLAYING = frozenset({"replay", "append", "resume", "fork"})
_KINDS = frozenset(KINDS)


class Run:
    """A deck's run: its cassette, its calls' decisions and its log, under one lock.

    Its state is read and changed under one lock (an ``RLock``), so a deck can be shared
    between threads; the call itself (``fn``) runs outside the lock, and so does the one
    append of a replayed answer's record when it teaches no ids (``Call.replay``). It owns its
    ``Cassette`` (``opening.py``), its ``ReplayIndex`` (``index.py``), the ``Turns`` a
    resumed call waits for (``resuming.py``) and the ``Ledger`` its calls finish
    themselves with (``ledger.py``).

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
        repeats: what a call asked more often than recorded gets (``ReplayIndex``).
        environ: the environment whose locale and hash seed go into a new header.
        root: the project root, whose git commit is recorded and compared.
        on_harness_change: ``warn`` or ``ignore`` on a cassette from another commit.
        replace: ``False``: a fresh recording stays in its partial file, for the caller.
        fork: mode ``fork``'s parent and fork point (``fork.py``).

    Attributes:
        cassette: the cassette as the mode opened it.
        index: the recorded calls still to serve.
        turns: what a resumed call ahead of the recording waits for.
        ledger: what a ``Call`` finishes itself with (``ledger.py``).
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
        repeats: Repeats,
        environ: Mapping[str, str],
        root: str,
        on_harness_change: str,
        replace: bool = True,
        fork: ForkPoint | None = None,
    ) -> None:
        self.path = path
        self.lock = threading.RLock()
        self.remote: set[str] = set()  # the tools that said they reach a service
        self.index = ReplayIndex(strict=match == "strict", repeats=repeats)
        self.cassette = Cassette(
            path,
            mode,
            lock=self.lock,
            index=self.index,
            normalizer=normalizer,
            durability=durability,
            replace=replace,
            fork=fork,
            root=root,
            match=match,
            environ=environ,
            on_harness_change=on_harness_change,
        )
        self.turns = Turns(self.lock, self.index, self.cassette.in_flight, self._miss)
        self._fork, self._match, self._fault_run = fork, match, fault_run
        # Mode fork: live past this seq; without ``at``, past the call before the first miss.
        self._live_after = (fork.at if fork.at is not None else math.inf) if fork else 0
        self.ledger = Ledger(
            self.cassette,
            lock=self.lock,
            clock=clock,
            normalizer=normalizer,
            redactor=redactor,
            allow_side_effects=allow_side_effects,
        )
        self.ledger.answers = kept_answers(fault_run)
        self.clock, self.normalizer, self.redactor = clock, normalizer, redactor
        self.ids = self.ledger.ids
        # Replaying a cassette keyed under this deck's rules, with no fault recorded: a
        # call whose args are the stored args of the line expected next keys as that line.
        self._stored_keys_hold = False
        # Every call so far was answered as stored, in file order from the first line: the
        # run has learned the ids the recording had at this line, and named none.
        self._in_file_order = True
        self._seq = 0

    @property
    def mode(self) -> str:
        """The mode decided on opening (``once`` becomes ``replay`` or ``record``)."""
        return self.cassette.mode

    # -- opening and closing ---------------------------------------------------------------

    def open(self) -> None:
        """Load and lock the cassette as the mode needs; see ``Deck.open``."""
        cassette = self.cassette
        with self.lock:
            if cassette.opened:
                return
            cassette.open()
            self.ledger.file = cassette.file  # a store's cassette is written as a local copy
            recording = cassette.recording
            self._stored_keys_hold = (
                cassette.mode == "replay"
                and recording is not None
                and not cassette.faulted
                and recording.rules == self.normalizer.fingerprint
            )

    def rewind(self, fault_run: FaultRun | None) -> None:
        """Start a replay over with ``fault_run``'s counters; see ``Deck.rewind``."""
        with self.lock:
            self.index.rewind()
            self.ids = self.ledger.restart()
            self._fault_run, self._in_file_order, self._seq = fault_run, True, 0
            self.ledger.answers = kept_answers(fault_run)

    def close(self, status: str) -> None:
        """Write the end line (when writing) and release the cassette; once."""
        self.cassette.close(status, self.ledger.unanswered)

    def abandon(self) -> None:
        """Release the cassette without an end line; once."""
        self.cassette.abandon()

    # -- deciding a call -----------------------------------------------------------------

    def begin(  # noqa: C901 - the one decision per call (mode, key, answer, fault, intent), kept in one place
        self,
        kind: str,
        name: str,
        args: Any,
        schema: str,
        step: Any,
        meta: Any,
        shaped: frozenset[str],
        retarget: bool = False,
    ) -> Call:
        """Number the call, key it and decide: the recorded answer, a live run, or a miss.
        With ``retarget``, a call a fork sends to another model is keyed as sent.

        A resumed call ahead of the recording waits for the calls before it (``Turns``).

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
        cassette = self.cassette
        if not cassette.opened:
            self.open()  # the first call opens the deck, as `with` would
        if step is None:
            step = step_now()
        if type(step) is str:
            step = self.redactor.redact_text(step)
        with self.lock:
            if cassette.closed:
                raise ConfigError(f"deck for {self.path} is closed; open a new Deck")
            self._seq += 1
            seq = self._seq
            mode = cassette.mode
            if mode == "fork" and seq > self._live_after:
                mode = "record"  # past the fork point: every call runs live
            started = self.clock.now()
            sent_to = None
            if retarget and cassette.retarget is not None:
                args, sent_to = cassette.retarget.apply(seq, kind, args)
            expected, norm, key = None, args, ""
            if mode != "off":
                if self._stored_keys_hold:
                    expected = self._as_stored(kind, name, args, schema, seq)
                if expected is not None:
                    norm, key = expected.args, expected.key
                else:
                    name, norm, key = self._keyed(kind, name, args, schema, seq, mode in _REPLAYING)
            ledger = self.ledger
            call = Call(
                ledger, seq, kind, name, key, norm, schema, step, meta, mode != "off", started
            )
            call.model = sent_to
            fault, faults = None, self._fault_run
            if faults is not None and not faults.passes(seq, kind, name):  # else none can land
                fault = faults.pick(CallInfo(seq, kind, name, call.key))
            if expected is None or fault is not None:
                self._in_file_order = False
            if mode in ("record", "off"):
                call.fault = fault
                if mode == "record":
                    call._rekey = self._rekeys(kind, name, args)
                return call
            head = self.index.peek(key, seq) if cassette.faulted else None
            if head is not None and head.fault is not None:
                # Recorded under a fault: the answer already carries it, whatever the plan.
                call.recorded = self.index.take(key, seq)
                call.fault = recorded_fault(head, self.ledger.where)
                call.fault_applied = True
                call.records = False
                return call
            call.fault = fault
            if fault is not None and fault.raises and fault.kind not in shaped:
                # The call never reaches the recording: a retry gets the recorded answer.
                call.records = False
                return call
            if expected is not None:
                self.index.take_expected(expected)
                entry: Entry | None = expected
            else:
                entry = self.index.take(key, seq)
            if entry is not None:
                call.recorded = entry
                call.records = False
                if mode == "resume":
                    self.turns.took_turn()
                return call
            if mode == "fork" and cassette.leave(seq - 1):
                self._live_after = seq - 1  # the fork point, found: this call and on run live
                mode = "record"
            if mode in ("append", "record") or (mode == "resume" and self._resumes(call)):
                call._rekey = self._rekeys(kind, name, args)  # it runs live: its line is written
                return call
            raise self._miss(call)

    def _as_stored(self, kind: str, name: str, args: Any, schema: str, seq: int) -> Entry | None:
        """The line an in-order replay expects next, when ``args`` are its stored args and
        so key as it did (``_keys/asis.py``): compared before anything is normalized."""
        entry = self.index.expected(seq)
        if entry is None or self.ids.odd:
            return None
        if entry.name != name or entry.kind != kind or entry.schema != schema:
            return None
        normalizer = self.normalizer
        form = args_form(args, normalizer.root_json)
        if form is None or form != entry.args_json():
            return None
        # No string in them may be an id the run learned since the line was recorded (the
        # one rule that depends on the run so far): none can be while every call came this
        # way, in file order from the first line.
        ids = self.ids
        if self._in_file_order or not (ids.names or ids.pending):
            return entry
        return entry if ids.none_in(form, normalizer.output_ids) else None

    def _resumes(self, call: Call) -> bool:
        """Whether ``call``, which the recording does not answer, runs live in a resumed
        run: in flight when the old run stopped, past what it numbered, or early."""
        cassette = self.cassette
        queue = cassette.in_flight.get(call.key)
        if queue:
            # In flight when the old run stopped: it goes live, its intent taken over.
            call._resumes = queue.popleft()
            self.turns.took_turn()
            return True
        if self.index.remaining == 0 or call.seq > cassette.begun:
            return True
        if cassette.unseen:  # the old run numbered a call it never wrote: this may be it
            cassette.unseen -= 1
            return True
        return self.turns.waits_turn(call)  # early, not divergent: threads reorder

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
        ids.tentative()
        try:  # a call refused (an argument JSON cannot hold) leaves no names behind
            if replaying:
                # Args without a secret key the same unredacted; try that (cheap) first, unless
                # it names a string anew: a secret's placeholder may match another call's key.
                norm = normalizer.args(kind, name, args, ids, redact=False)
                key = make_key(kind, name, norm, schema)
                known = self.index.has(key, seq) or key in self.cassette.in_flight
                if known and not ids.named_tentatively:
                    ids.commit()
                    return name, norm, key
                ids.rollback()
                ids.tentative()
            name = self.redactor.redact_text(name)
            norm = normalizer.args(kind, name, args, ids)
            key = make_key(kind, name, norm, schema)
            ids.commit()
            return name, norm, key
        finally:
            ids.rollback()  # nothing to forget after a commit

    def _miss(self, call: Call, waited: Sequence[Entry | Intent] = ()) -> ReplayMiss:
        call._log("miss")
        cassette = self._fork.parent if self._fork is not None else self.path
        return miss_in(
            call, self.index, self.cassette.recording, cassette=cassette,
            strict=self._match == "strict", waited=waited, waited_s=TURN_WAIT,
        )  # fmt: skip

    # -- the report ------------------------------------------------------------------------

    def calls(self) -> tuple[CallRecord, ...]:
        """Every call so far, in the order they started."""
        with self.lock:
            return tuple(sorted(self.ledger.log, key=attrgetter("seq")))

    def report(self) -> Report:
        """What happened so far; see ``Deck.report``."""
        with self.lock:
            cassette = self.cassette
            return build_report(
                self.calls(),
                cassette=self.path,
                mode=cassette.mode,
                index=self.index,
                recording=cassette.recording,
                clock=self.clock,
                harness_changed=cassette.harness_changed,
                kept=cassette.kept,
                stored=cassette.file.stored,
                unanswered=tuple(self.ledger.unanswered),
                remote_tools=tuple(sorted(self.remote)),
            )


def recorded_fault(entry: Entry, where: str) -> Fault:
    """The fault a recorded call carries, read from its line in ``where``."""
    try:
        return fault_from_json(entry.fault, where=f"seq {entry.seq}: fault")
    except ConfigError as exc:
        raise CassetteCorrupt(where, entry.line or None, str(exc), RESTORE) from None
