"""The commonest call, fused: a plain replay answered with a recorded value.

``begin`` decides every call in general: the mode, a fault to pick, a fault recorded with
the answer, a resumed intent, the redacted key, a miss. A deck replaying a cassette that
holds no fault answers most calls the same way, when no fault of its plan can land on the
call (a rehearsal's plan names one call): key the args as they are, take the recorded
value, log it, hand out a fresh copy. ``replay_clean`` does just that under the run's lock
and gives ``ABSENT`` whenever anything else might apply (the deck not open yet, a fault
that may land, a key that needs redaction, an error or stream recorded, a queue used up),
having changed nothing; ``begin`` then decides the call as always. The result, the log and
the report are the same either way: only the route is shorter.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from .._base.clock import Clock
from .._base.context import current_step
from .._base.errors import ArgumentError
from .._cassette.format import Entry
from .._keys.canonical import make_key
from .._keys.fields import ABSENT
from .._keys.ids import IdMap
from .._keys.normalize import Normalizer
from .._keys.redact import Redactor
from ..faults import FaultRun
from .index import ReplayIndex


class CleanReplay:
    """``Run``'s fused route for a plain replay (see the module)."""

    lock: threading.RLock
    clock: Clock
    index: ReplayIndex
    ids: IdMap
    log: list[Any]
    normalizer: Normalizer
    redactor: Redactor
    opened: bool
    clean: bool
    _closed: bool
    _seq: int
    _fault_run: FaultRun | None

    def replay_clean(self, kind: str, name: str, args: Any, schema: str, step: Any) -> Any:
        """The recorded value for this call as a fresh copy, or ``ABSENT`` (nothing done)
        when ``begin`` must decide it."""
        entry = self.take_clean(kind, name, args, schema, step)
        return ABSENT if entry is None else entry.fresh_value()

    def take_clean(
        self,
        kind: str,
        name: str,
        args: Any,
        schema: str,
        step: Any,
        accept: Callable[[Entry], bool] | None = None,
        learn: Callable[[Any], Any] | None = None,
    ) -> Entry | None:
        """The recorded call that answers this one, taken and logged as replayed, if
        ``accept`` says its caller answers it as recorded with nothing else to log (by
        default: a recorded value); else ``None`` (nothing done). ``learn``: the part of the
        recorded value whose ids later calls may send back, when the line lists none (the
        whole value by default)."""
        if not self.clean or not self.opened:
            return None
        if step is None:
            step = current_step()
        if type(step) is str:
            step = self.redactor.redact_text(step)
        with self.lock:
            if self._closed or type(name) is not str:
                return None
            seq, ids, index = self._seq + 1, self.ids, self.index
            faults = self._fault_run
            if faults is not None and not faults.passes(seq, kind, name):
                return None
            ids.tentative()
            try:
                norm = self.normalizer.args(kind, name, args, ids, redact=False)
            except ArgumentError:
                ids.rollback()
                return None  # begin raises it, with the call numbered
            key = make_key(kind, name, norm, schema)
            entry = index.peek(key, seq)
            if entry is None or (entry.result != "out" if accept is None else not accept(entry)):
                ids.rollback()
                return None
            ids.commit()
            self._seq = seq
            index.take_peeked(key, seq, entry)
            # A clean replay's log line (``as_record`` reads it): what the call was and its answer.
            self.log.append((seq, kind, name, key, step, self.clock.now(), entry))
            found = entry.ids
            if found is not None:  # the line lists them: no walk, no parse
                if found or ids.waiting:
                    ids.learn_stored(found, self.normalizer.output_ids)
            else:
                ids.defer(entry.value if learn is None else learn(entry.value))
        return entry
