"""How a program is started so that it gets its deck, whatever its code and language.

A Python program gets it at start-up from the bootstrap, ``faultdeck._bootstrap`` (its
``sitecustomize`` builds the deck from the ``FAULTDECK_*`` variables and routes the program's
HTTP clients through it): ``bootstrapped`` puts its folder on the program's path. Any other
program is started by ``faultdeck._bootstrap.foreign``, which serves the deck through a proxy
its SDKs' base-URL variables point at. ``started`` decides between them, for whatever starts
a program: a command, a rehearsal's cell, a Ray task.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from collections.abc import Mapping, Sequence

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


FOREIGN = "faultdeck._bootstrap.foreign"
"""The module that runs a program that is not Python with its deck served to it."""


def started(command: Sequence[str], env: Mapping[str, str]) -> tuple[list[str], dict[str, str]]:
    """The command line and environment that start ``command`` with the deck the
    ``FAULTDECK_*`` variables of ``env`` describe.

    A Python program (``is_python``) runs as it is, ``bootstrapped``. Any other program found
    on ``PATH`` runs under ``python -m faultdeck._bootstrap.foreign``, which serves the deck
    on 127.0.0.1 for the program's lifetime and points its SDKs' base-URL variables there
    (docs/cli.md, *Programs that are not Python*). One that cannot be found is left as it
    is: it fails to start before any deck is opened.
    """
    if not command or is_python(command) or shutil.which(command[0]) is None:
        return list(command), bootstrapped(env)
    found = dict(env)
    found.pop("FAULTDECK_OWNER", None)
    return [sys.executable, "-m", FOREIGN, *command], found


_PYTHON = re.compile(r"python(\d+(\.\d+)*)?")  # python, python3, python3.11
_RUNNERS = {"uv": "run", "poetry": "run"}  # `uv run CMD` runs CMD in the project's venv
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")  # env's NAME=value


def is_python(command: Sequence[str]) -> bool:
    """Whether ``command`` runs Python, and so opens its own deck.

    It does when its program (found on ``PATH``, links followed) is named ``python``,
    ``python3``, ``python3.11``…, or is this interpreter (``sys.executable``); or is a script
    whose ``#!`` line does (``#!/usr/bin/env python3``); or is ``env``, ``uv run`` or
    ``poetry run`` followed (past options and ``NAME=value``) by such a program, or for the
    last two by a ``.py`` file; or is ``pipx run``, which runs nothing but Python packages.
    Anything else (``node``, ``npx``, a binary, ``bash run.sh``) is served through the proxy.
    """
    return _is_python(command, follow=True)


def _is_python(command: Sequence[str], *, follow: bool) -> bool:
    """``is_python``; ``follow``: a script's ``#!`` line is read (not that of the program
    it names: two scripts that name each other would go round forever)."""
    if not command:
        return False
    program, rest = os.path.basename(command[0]), list(command[1:])
    if program == "pipx":
        return rest[:1] == ["run"]
    if program in _RUNNERS:
        return rest[:1] == [_RUNNERS[program]] and _runs_python(rest[1:], True, follow)
    if program == "env":
        return _runs_python(rest, False, follow)
    found = shutil.which(command[0])
    real = os.path.realpath(found) if found else ""
    if real and real == os.path.realpath(sys.executable):
        return True
    if any(_PYTHON.fullmatch(os.path.basename(p).removesuffix(".exe")) for p in (program, real)):
        return True
    if not (follow and real):
        return False
    try:
        with open(real, "rb") as fh:
            first = fh.readline(512)
    except OSError:
        return False
    shebang = first[2:].decode("utf-8", "replace").split() if first[:2] == b"#!" else []
    return _is_python(shebang, follow=False)


def _runs_python(words: Sequence[str], scripts: bool, follow: bool) -> bool:
    """Whether the command in ``words``, past a runner's options and ``env``'s
    ``NAME=value``, is Python (with ``scripts``, a ``.py`` file counts). A word right after
    an option may be the option's value (``--with httpx``): then the next word decides."""
    after_option = False
    for word in words:
        if word.startswith("-"):
            after_option = "=" not in word
        elif _ASSIGNMENT.match(word):
            after_option = False
        elif _is_python([word], follow=follow) or (scripts and word.endswith(".py")):
            return True
        elif after_option:
            after_option = False
        else:
            return False
    return False
