"""What a call reads and writes of its run: the ``Ledger``.

A ``Call`` finishes itself through its run's ledger, under the run's lock (but for the
record of a replayed answer that teaches no ids: one list append, atomic): the clock it
reads its duration from, the id renaming its answer teaches, the log its ``CallRecord``
goes to, the file its intent and line are written to (values already redacted), and what
the mode allows. The ``Run`` (``run.py``) owns one and decides calls with the same parts.
"""

from __future__ import annotations

import threading
from typing import Any, Protocol

from .._base.clock import Clock
from .._cassette.format import Entry, entry_line
from .._cassette.session import CassetteSession
from .._keys.fields import ABSENT
from .._keys.ids import IdMap
from .._keys.normalize import Normalizer
from .._keys.redact import Redactor
from .._keys.stored import Store, output_store
from .opening import Cassette
from .report import CallRecord


class _Call(Protocol):
    """What a call's line is made of (a ``Call``'s attributes)."""

    seq: int
    kind: str
    name: str
    key: str
    args: Any
    schema: str
    step: Any
    meta: Any


class Ledger:
    """What a call reads and writes of its run (see the module).

    Attributes:
        lock: the run's lock.
        clock: where durations are read.
        ids: the id renaming of the run so far.
        normalizer, redactor: the deck's rules.
        store_output: stores a live answer under those rules (``output_store``, made once).
        allow_side_effects: side-effecting calls may run live.
        log: one ``CallRecord`` per call, as each ends.
        file: the file the run writes, and its lock (set on opening: a cassette in a store
            is written as a local copy).
        unanswered: the error type of each live call that got no answer (``outage.py``):
            not written.
        answers: each call's last answer as it came, by kind and name, while the run's
            fault plan may serve one stale (``tool_result(action="stale")``); else ``None``.
    """

    def __init__(
        self,
        cassette: Cassette,
        *,
        lock: threading.RLock,
        clock: Clock,
        normalizer: Normalizer,
        redactor: Redactor,
        allow_side_effects: bool,
    ) -> None:
        self._cassette = cassette
        self.lock, self.clock = lock, clock
        self.normalizer, self.redactor = normalizer, redactor
        rules = normalizer.config
        self.store_output: Store = output_store(
            redactor,
            volatile=normalizer.output_volatile,
            declared=frozenset(rules.volatile),
            ids=rules.ids,
        )
        self.allow_side_effects = allow_side_effects
        self.ids = IdMap()
        self.file: CassetteSession = cassette.file  # the file the run writes (set on opening)
        self.log: list[CallRecord] = []
        self.unanswered: list[str] = []
        self.answers: dict[tuple[str, str], Any] | None = None

    def restart(self) -> IdMap:
        """Forget the run so far, for a replay that starts over: its log, its unanswered
        calls, its answers kept and its ids (a new run names them afresh). The new ids."""
        self.log, self.unanswered = [], []
        if self.answers is not None:
            self.answers = {}
        self.ids = IdMap()
        return self.ids

    @property
    def mode(self) -> str:
        """The mode decided on opening (``once`` becomes ``replay`` or ``record``)."""
        return self._cassette.mode

    @property
    def where(self) -> str:
        """The file the recording was read from: the cassette, or its partial file."""
        recording = self._cassette.recording
        return recording.path if recording is not None else self._cassette.path

    def learn_recorded(self, entry: Entry, value: Any = ABSENT, *, as_recorded: bool) -> None:
        """Learn the ids a replayed answer hands out: the ones its line lists, found when it
        was recorded, if the answer goes out as recorded (no fault changed it); else those
        found in ``value`` (the entry's value by default) when a later call may need them."""
        ids = self.ids
        if as_recorded and entry.ids is not None:
            if entry.ids or ids.pending:  # else there is nothing to learn
                ids.learn_stored(entry.ids, self.normalizer.output_ids)
        else:
            ids.defer(entry.value if value is ABSENT else value)

    def learn_written(self, output: Any, found: list[str] | None = None) -> Any:
        """Learn the ids of a live answer about to be written, and return them for its line
        (``None`` when ids are not renamed): a replay of the line learns them from there
        without walking the answer. ``found``: the ids already found in ``output``."""
        normalizer, ids = self.normalizer, self.ids
        if found is None:
            found = normalizer.output_ids(output)
        if found or ids.pending:  # else there is nothing to learn
            ids.learn_stored(found, normalizer.output_ids)
        return found if normalizer.config.ids else None

    def write_line(
        self,
        call: _Call,
        result: str,
        value: Any,
        ms: float,
        fault: Any,
        ids: Any,
        skipped: bool,
        rekey: bool,
    ) -> None:
        """Write ``call``'s line, when the run writes (``skipped``: an in-doubt call that was
        not run again, as its line says)."""
        file = self.file
        if not file.writing:
            return
        step = call.step if isinstance(call.step, (str, int, float)) else None
        meta = self.redactor.redact(call.meta) if call.meta is not None else None
        line = entry_line(
            call.seq, call.kind, call.name, call.key, call.args,
            result,  # type: ignore[arg-type]  # one of the three, as the Call says
            value, ms, step, call.schema, meta, fault, ids=ids,
        )  # fmt: skip
        file.write(line, in_doubt="skipped" if skipped else None, rekey=rekey)
