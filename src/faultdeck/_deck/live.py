"""The commonest live call, fused: a plain call recorded.

``begin`` and a ``Call`` decide and finish every call in general. A deck recording with no
fault plan runs most calls the same way: a call without side effects (nothing to block,
nothing in doubt, no idempotency key) whose args key as they are walked. ``record_clean``
does for such a call what ``begin``, ``Call.start`` and ``Call.result`` do, in one frame:
number and key the call under the run's lock, write its intent, run it outside the lock,
store its answer in one walk, learn its ids, log it and write its line. The cassette, the
log and the report are the same as ``begin``'s route would make them; a call that raises
is handed to the ``Call`` it would have been (``Call.fail`` records it). Anything else (the
deck not open yet or closed, a fault plan, another mode, a kind or name ``begin`` must
refuse, an ``http`` answer to check) gives ``ABSENT``, having done nothing, and ``begin``
decides the call as always.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from .._base.clock import Clock
from .._base.context import idempotency, idempotency_now, step_now
from .._cassette.format import entry_line
from .._cassette.session import CassetteSession
from .._keys.canonical import make_key
from .._keys.fields import ABSENT
from .._keys.ids import IdMap
from .._keys.normalize import Normalizer
from .._keys.outputs import check_json
from .._keys.redact import Redactor
from .._keys.stored import NotJSON, Store
from .call import Call

_PLAIN_KINDS = frozenset({"model", "tool", "env"})
"""The kinds this route records (an ``http`` answer is checked as one: ``begin``'s route)."""


class CleanRecord:
    """``Run``'s fused route for a plain live call while recording (see the module)."""

    # (in the order the route reads them)
    redactor: Redactor
    normalizer: Normalizer
    ids: IdMap
    file: CassetteSession
    lock: threading.RLock
    _closed: bool
    records_plain: bool
    _seq: int
    aligned: bool
    clock: Clock
    store_output: Store
    log: list[Any]
    recorded_plain: int

    def record_clean(
        self, kind: str, name: str, args: Any, schema: str, step: Any, fn: Callable[[], Any]
    ) -> Any:
        """Run ``fn`` live and record it, as ``begin`` and its ``Call`` would; ``ABSENT``,
        with nothing done, when ``begin`` must decide the call (see the module).

        Raises:
            ArgumentError: the args or the answer hold a value JSON cannot hold (the call
                keeps its seq and writes no line, as on ``begin``'s route).
            CassetteWriteError: the disk refused the call's intent or line.
        """
        if kind not in _PLAIN_KINDS or type(name) is not str or not name:
            return ABSENT
        if step is None:
            step = step_now()
        if type(step) is str:
            step = self.redactor.redact_text(step)
        normalizer, ids, file = self.normalizer, self.ids, self.file
        with self.lock:
            if self._closed or not self.records_plain:
                return ABSENT
            self._seq += 1
            self.aligned = False
            seq = self._seq
            started = self.clock.now()
            # ``_keyed`` for a live call: the name and args redacted, so a secret keys as
            # its mask; then what ``Run._rekeys`` says of the args.
            name = self.redactor.redact_text(name)
            norm = normalizer.args(kind, name, args, ids)
            key = make_key(kind, name, norm, schema)
            rekey = normalizer.has_rule(kind, name) or normalizer.may_move(args)
            # ``Call.start``: the intent first, so that after a kill ``resume`` knows the
            # call was in flight (an environment read writes none).
            intent = kind != "env" and file.writing
            if intent:
                file.intent({"begin": seq, "kind": kind, "name": name, "key": key})
        try:
            if idempotency_now() is None:
                value = fn()
            else:  # inside a side effect's call: this one runs with no key of its own
                with idempotency(None):
                    value = fn()
        except Exception as exc:
            run: Any = self  # the Run: the Ledger its calls finish themselves with
            call = Call(run, seq, kind, name, key, norm, schema, step, None, None, True, started)
            call.intent, call.rekey = intent, rekey
            call.fail(exc)
            raise
        ms = round((self.clock.now() - started) * 1000, 3)
        try:
            stored, found = self.store_output(value, seq)
        except NotJSON:
            check_json(value, f"out of {kind} {name} at seq {seq}")
            raise  # check_json names the value; it never gets here
        config = normalizer.config
        with self.lock:
            # ``Call._learn_written``: the ids after any earlier outputs still waiting.
            if found or ids.pending:
                ids.learn_stored(found, normalizer.output_ids)
            self.log.append((seq, kind, name, key, step, started, ms))
            self.recorded_plain += 1
            if file.writing:
                kept = step if isinstance(step, (str, int, float)) else None
                line = entry_line(
                    seq,
                    kind,
                    name,
                    key,
                    norm,
                    "out",
                    stored,
                    ms,
                    kept,
                    schema,
                    ids=found if config.ids else None,
                )
                file.write(line, rekey=rekey)
        return value
