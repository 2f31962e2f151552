"""The parts of what faultdeck hands back, for annotations: faultdeck makes them, you read
them. By what returns them:

- ``fd.load``: a ``Recording``, with its ``Header``, its calls (``Entry``) and, when its
  run did not close, the calls it had begun (``Intent``);
- ``Deck.report()``: a ``Report``, naming the recorded calls never asked for (``CallRef``)
  and the calls asked more often than recorded (``Repeat``);
- ``fd.diff_recordings``: a ``CallPathDiff``, its rows (``Row``) with what changed in each
  (``Change``), and ``Forked`` when one cassette forked from the other;
- ``fd.compare_drift``: a ``Drift``, with how each run ended (``Ending``);
- ``fd.rehearse``: a ``Matrix``, a ``Cell`` for each fault at each call;
- ``Redactor.findings``: what it would mask or drop, each a ``Finding``.

And the names some of their fields take: ``INVARIANTS`` (``Violation.invariant``), and the
rows of a full matrix (``Cell.label``): ``REPLAY_ROW`` first, then the labels of
``FAULT_MENU``.
"""

from ._cassette.format import Entry, Header, Intent, Recording
from ._deck.report import CallRef, Repeat
from ._diff.align import Change, Row
from ._diff.drift import Ending
from ._diff.fork import Forked
from ._judge.invariants import INVARIANTS
from ._keys.redact import Finding
from ._rehearse.matrix import FAULT_MENU, REPLAY_ROW, Cell

__all__ = [
    "CallRef",
    "Cell",
    "Change",
    "Ending",
    "Entry",
    "FAULT_MENU",
    "Finding",
    "Forked",
    "Header",
    "INVARIANTS",
    "Intent",
    "REPLAY_ROW",
    "Recording",
    "Repeat",
    "Row",
]
