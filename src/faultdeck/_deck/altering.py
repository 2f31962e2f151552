"""A call's answer as a result fault leaves it: ``tool_result`` and ``injection``.

These faults raise nothing: the call is answered (from the cassette, or live) and the loop
gets the answer changed. ``altered(call, answer)`` is the one place that happens, for a
``deck.call``, an ``@deck.tool`` (sync or async) and an MCP ``tools/call`` alike (the MCP
session passes the view of a tool result it reads, ``faultdeck.mcp._results``). What a
kind does to a result is its ``FaultKind.alter`` (``faults/_results.py``); here the run's
part is added: the tool's previous answer (for ``stale``), and, when the fault found
nothing to change, a call that names no fault (it never landed) and a ``FaultNotApplied``
warning, one line naming the call (none for a fault aimed at no path that found nothing
of its kind: an injection into a result without a string).

Recording, the loop's answer is the changed one, and that is what the cassette keeps,
with the fault on its line, as for every fault recorded (``"fault": {…}``): replaying the
line gives the loop what it got then, changed once, whatever the plan. The answer kept for
``stale`` is the one the call gave before any fault (a line recorded under a fault: as
recorded).
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from .._base.errors import warn
from ..faults._results import NONE, WHOLE, FaultNotApplied, View, alter, keeps_answers

_GIVEN = "given"  # the slot kind of a model's answer given at the HTTP boundary

if TYPE_CHECKING:
    from ..faults import FaultRun
    from .call import Call


def altered(call: Call, answer: Any, view: View = WHOLE) -> Any:
    """What the loop gets of ``call``'s ``answer``: as its fault (a ``tool_result`` or an
    ``injection``) leaves it, else the answer itself; ``view`` reads the result in the
    answer (the whole answer by default). Kept as the call's last answer when the run keeps
    answers. Callers on every call's path skip it for a call with no fault in a run that
    keeps no answers: it has nothing to do there."""
    answers = call._ledger.answers
    slot = (call.kind, call.name)
    previous = NONE
    if answers is not None:
        previous = answers.get(slot, NONE)
        answers[slot] = copy.deepcopy(answer)
    fault = call.fault
    change = fault.spec.alter if fault is not None else None
    if fault is None or change is None or call.fault_applied:
        return answer
    done = alter(change, fault.values, answer, previous, view)
    if done.missed is not None:
        _unclaimed(call)
        if not done.aimless:
            left = "as recorded" if call.recorded is not None else "as the tool returned it"
            warn(
                f"seq {call.seq}: {call.kind} {call.name}: {fault.describe()} changed nothing "
                f"({done.missed}); the result is left {left}",
                FaultNotApplied,
            )
    return done.value


def _unclaimed(call: Call) -> None:
    """A result fault that changed nothing did not land: the call's record (made already,
    when it was replayed) and its line (to be written, when it is recorded) name no fault,
    so that the report, a rehearsal (its cell is then ``not fired``) and
    ``injection_contained`` see a plain call."""
    call.fault = None
    ledger = call._ledger
    with ledger.lock:
        log = ledger.log
        for i in range(len(log) - 1, -1, -1):
            if log[i].seq == call.seq:
                log[i] = log[i]._replace(fault=None)
                return


def give(call: Call, form: str, answer: Any) -> None:
    """The run gave ``answer`` to the model ``call`` at the HTTP boundary (``form``:
    ``"out"``, a body, or ``"stream"``, its events): kept as the last answer of its name when
    the run keeps answers, for ``stale_answer`` to give again."""
    answers = call._ledger.answers
    if answers is not None:
        answers[(_GIVEN, call.name)] = (form, answer)


def given(call: Call) -> tuple[str, Any] | None:
    """The last answer ``give`` kept for a model call named as ``call`` is, if any."""
    answers = call._ledger.answers
    return None if answers is None else answers.get((_GIVEN, call.name))


def kept_answers(fault_run: FaultRun | None) -> dict[tuple[str, str], Any] | None:
    """A run's store of each call's last answer, when its plan may serve one stale; else
    ``None`` (nothing kept, nothing copied)."""
    keep = fault_run is not None and keeps_answers(fault_run.plan.faults)
    return {} if keep else None
