"""The environment that gives a Python program its deck at start-up, whatever its code.

The bootstrap itself is ``faultdeck._bootstrap`` (its ``sitecustomize`` builds the deck from
the ``FAULTDECK_*`` variables and routes the program's HTTP clients through it); this module
names its folder, so that whatever starts a program (a command, a rehearsal's cell, a Ray
task) can put it on the program's path.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

FOLDER = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "_bootstrap")
"""The folder of faultdeck's ``sitecustomize``."""


def bootstrapped(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` with the bootstrap's folder first on ``PYTHONPATH`` and
    ``FAULTDECK_BOOTSTRAP=1``, without a ``FAULTDECK_OWNER`` inherited (the program started
    claims it: only that process records)."""
    found = dict(env)
    found.pop("FAULTDECK_OWNER", None)
    path = found.get("PYTHONPATH")
    found["PYTHONPATH"] = FOLDER + (os.pathsep + path if path else "")
    found["FAULTDECK_BOOTSTRAP"] = "1"
    return found
