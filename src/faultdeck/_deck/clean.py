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

Shorter still, when the cassette's calls were keyed under the deck's own rules (``asis``):
a call whose args are the args stored on the line an in-order replay expects next
(``ReplayIndex.expected``) has that line's key, by ``_keys/asis.py``, so it is answered
without normalizing or hashing anything. Any doubt takes the keyed route.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from orjson import dumps, loads

from .._base.clock import Clock
from .._base.context import step_now
from .._base.errors import ArgumentError
from .._cassette.format import Entry, HeldEntry, held_after, stored_parts
from .._keys.asis import args_form, stores
from .._keys.canonical import make_key
from .._keys.fields import ABSENT
from .._keys.ids import IdMap
from .._keys.normalize import Normalizer
from .._keys.redact import Redactor
from ..faults import FaultRun
from .index import ReplayIndex

Taken = tuple[Entry, "dict[str, Any] | None"]
"""A recorded call taken, and its line's fields parsed (the answer's among them) when
reading its args took that (else ``None``)."""


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
    asis: bool
    as_stored: int
    aligned: bool
    _closed: bool
    _seq: int
    _fault_run: FaultRun | None

    def replay_clean(self, kind: str, name: str, args: Any, schema: str, step: Any) -> Any:
        """The recorded value for this call as a fresh copy, or ``ABSENT`` (nothing done)
        when ``begin`` must decide it."""
        taken = self.take_clean(kind, name, args, schema, step)
        if taken is None:
            return ABSENT
        entry, line = taken
        if line is not None:
            return line[entry.result]
        value = entry.value
        if type(value) is dict or type(value) is list:  # Entry.fresh_value, a frame less
            return loads(dumps(value))
        return value

    def take_clean(  # noqa: C901, PLR0913 - the hot path, one frame (measured)
        self,
        kind: str,
        name: str,
        args: Any,
        schema: str,
        step: Any,
        accept: Callable[[Entry], bool] | None = None,
        learn: Callable[[Any], Any] | None = None,
        parsed: bool = False,
        parse: Callable[[], Any] | None = None,
    ) -> Taken | None:
        """The recorded call that answers this one, taken and logged as replayed, if
        ``accept`` says its caller answers it as recorded with nothing else to log (by
        default: a recorded value); else ``None`` (nothing done). ``learn``: the part of the
        recorded value whose ids later calls may send back, when the line lists none (the
        whole value by default). ``parsed``: ``args`` hold only what parsed JSON
        holds (``asis.args_form``). ``parse``: ``args`` hold ``orjson.Fragment`` values of
        JSON as sent, and strings; ``parse()`` gives them parsed, for the keyed route
        (``Deck.take_recorded``)."""
        if not self.clean or not self.opened:
            return None
        if step is None:
            step = step_now()
        if type(step) is str:
            step = self.redactor.redact_text(step)
        with self.lock:
            if self._closed or type(name) is not str:
                return None
            seq, ids, index, normalizer = self._seq + 1, self.ids, self.index, self.normalizer
            faults = self._fault_run
            if faults is not None and not faults.passes(seq, kind, name):
                return None
            # The as-stored route: the line an in-order replay expects next, when ``args``
            # are its stored args and so key as it did (``_keys/asis.py``).
            entry = index.expected(seq) if self.asis and not ids.odd else None
            form = None
            if (
                entry is not None
                and entry.name == name
                and entry.kind == kind
                and entry.schema == schema
                and (form := args_form(args, normalizer.root_json, parsed or parse is not None))
                is not None
            ):
                # A line held as bytes stores the args as orjson writes them: compared
                # there, and only its answer read (``held_after``). (A parsed line's args
                # are compared as ``asis.stores`` does, without its call.)
                if type(entry) is HeldEntry:
                    line = held_after(entry, form)
                    if line is None:
                        stored, line = stored_parts(entry)
                        if not stores(form, stored):
                            form = None
                else:
                    line = None
                    if form != dumps(entry.args):
                        form = None
                # While every call came this way, in file order from the first line, the
                # run knows only ids the recording knew at this line, none in its args.
                if (
                    form is not None
                    and not self.aligned
                    and not ids.none_in(form, normalizer.output_ids)
                ):
                    form = None
            if form is not None and entry is not None:
                if entry.result != "out" if accept is None else not accept(entry):
                    self.aligned = False
                    return None  # the keyed route would find it and refuse it too
                key = entry.key
                taken: Taken = (entry, line)
                self.as_stored += 1
                index.take_next(entry)
            else:
                self.aligned = False
                if parse is not None:
                    args = parse()
                ids.tentative()
                try:
                    norm = normalizer.args(kind, name, args, ids, redact=False)
                except ArgumentError:
                    ids.rollback()
                    return None  # begin raises it, with the call numbered
                key = make_key(kind, name, norm, schema)
                found = index.peek(key, seq)
                if found is None or (
                    found.result != "out" if accept is None else not accept(found)
                ):
                    ids.rollback()
                    return None
                ids.commit()
                entry, taken = found, (found, None)
                index.take_peeked(key, seq, entry)
            self._seq = seq
            # A clean replay's log line (``as_record`` reads it): what the call was and its answer.
            self.log.append((seq, kind, name, key, step, self.clock.now(), entry))
            listed = entry.ids
            if listed is not None:  # the line lists them: no walk, no parse
                if listed or ids.pending:
                    ids.learn_stored(listed, normalizer.output_ids)
            else:
                value = entry.value if taken[1] is None else taken[1][entry.result]
                ids.defer(value if learn is None else learn(value))
        return taken
