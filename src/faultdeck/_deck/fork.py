"""Mode ``fork``: a new cassette that replays another's first calls, then records live.

``Deck(NEW, mode="fork", parent=OLD, at=N)`` answers the calls with seq 1 to N from OLD,
matched as a replay matches them (a miss is a ``ReplayMiss``), and runs every later call
live, recording it into NEW. Without ``at``, the fork point is found as the run goes: the
calls replay from OLD until the first one OLD has no answer for, which runs live with every
call after it, so ``at`` is the seq before it; NEW is written only then (a run that never
leaves OLD's path writes nothing). A rehearsal's branch, and a test's under the pytest
plugin, is recorded so. NEW starts with OLD's calls up to seq N, copied as they were
recorded, so it replays on its own; its header names OLD (``parent``: the path, ``at`` and
the sha256 of OLD's bytes), which ``faultdeck diff`` and ``faultdeck show`` read. OLD is
never written: an exploration gets a cassette of its own instead of a looser key.

With ``model=``, the calls after the fork point are sent to another model, and NEW's
header says so (``retarget.py``). The decision per call stays in ``Run.begin``; this module
checks the options, reads the parent and says what the new cassette starts with.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from .._base.errors import ConfigError
from .._cassette import store
from .._cassette.format import Recording
from .._cassette.session import load_hashed
from .retarget import MODEL_ENV, check_model, fork_retarget, retarget_of

PARENT_ENV = "FAULTDECK_FORK_PARENT"
"""The variable ``faultdeck fork`` names the parent cassette in, for ``Deck.from_env``."""
AT_ENV = "FAULTDECK_FORK_AT"
"""The variable ``faultdeck fork`` puts the fork point in, for ``Deck.from_env``."""
BRANCH_ENV = "FAULTDECK_FORK_BRANCH"
"""The variable a rehearsal puts a branch's cell, plan and seq in (JSON), for the header."""


@dataclass(frozen=True, slots=True)
class ForkPoint:
    """Where a fork starts: the cassette it replays from and up to which seq.

    Attributes:
        parent: the parent cassette, as given.
        at: the calls with seq 1 to ``at`` replay from it; later ones run live. ``None``:
            the fork point is the call before the first one the parent lacks.
        model: the model the live calls are sent to, if not the one they ask for.
        branch: a rehearsal's branch (its cell, plan and where it left the recorded
            path), put in the header's ``parent`` as ``branch``.
    """

    parent: str
    at: int | None
    model: str | None = None
    branch: Mapping[str, Any] | None = None


def check_fork(
    cassette: str,
    mode: str,
    parent: str | os.PathLike[str] | None,
    at: int | None,
    model: str | None = None,
    branch: Mapping[str, Any] | None = None,
) -> ForkPoint | None:
    """The fork point of a deck's options, or ``None`` for a deck that does not fork.

    Raises:
        ConfigError: ``fork`` without ``parent``, ``parent``, ``at`` or ``model`` without
            ``fork``, ``model`` without ``at``, ``at`` not a whole number from 0, ``model``
            empty, or the parent is the cassette itself.
    """
    check_model(mode, model)
    if mode != "fork":
        if parent is not None or at is not None:
            given = "parent=" if parent is not None else "at="
            raise ConfigError(
                f"{given} is for mode 'fork', not {mode!r}; pass mode='fork' to replay the "
                "parent's first calls and record the rest into a new cassette"
            )
        return None
    if parent is None:
        raise ConfigError(
            f"mode 'fork' of {cassette} needs parent= (the cassette to replay from), e.g. "
            "Deck(new, mode='fork', parent=old, at=3)"
        )
    if at is None and model is not None:
        raise ConfigError(
            f"model={model!r} needs at=: the fork sends the calls after it to that model"
        )
    if at is not None and (type(at) is not int or at < 0):
        raise ConfigError(f"at={at!r} is not a whole number from 0: the seq to fork after")
    parent = os.fspath(parent)
    if _same(parent, cassette):
        raise ConfigError(
            f"fork of {parent} into itself: a fork records into a new cassette and leaves "
            "its parent as it was; name another file"
        )
    return ForkPoint(parent, at, model, branch)


def _same(a: str, b: str) -> bool:
    if store.is_url(a) or store.is_url(b):
        return a == b
    return os.path.realpath(a) == os.path.realpath(b)


def fork_from_env(env: Mapping[str, str], kwargs: dict[str, Any]) -> None:
    """Put the fork point ``faultdeck fork`` set in ``env`` (and the model its live calls
    are sent to, ``FAULTDECK_FORK_MODEL``) into a deck's ``kwargs``.

    Raises:
        ConfigError: ``FAULTDECK_FORK_AT`` is not a whole number.
    """
    parent = env.get(PARENT_ENV)
    if not parent or "parent" in kwargs:
        return
    kwargs["parent"] = parent
    at = env.get(AT_ENV, "")
    if not at:
        kwargs.setdefault("at", None)  # at the first call the parent lacks
    elif not at.isdigit():
        raise ConfigError(f"{AT_ENV}={at!r} is not a whole number from 0: the seq to fork after")
    else:
        kwargs.setdefault("at", int(at))
    if env.get(MODEL_ENV):
        kwargs.setdefault("model", env[MODEL_ENV])
    if env.get(BRANCH_ENV):
        try:
            kwargs.setdefault("branch", json.loads(env[BRANCH_ENV]))
        except ValueError:
            raise ConfigError(f"{BRANCH_ENV} is not JSON: a rehearsal's branch") from None


def start_fork(
    fork: ForkPoint, *, root: str, option: str = "at="
) -> tuple[Recording, dict[str, Any]]:
    """Read the parent: the recording the fork replays (the parent's calls with seq up to
    ``at``, in file order) and the header's ``parent`` field; ``option`` is how a message
    names ``at`` (``--at `` on the command line). The ``parent`` field names the model the
    live calls are sent to, when they are (``Retarget.header``).

    Raises:
        CassetteNotFound, CassetteCorrupt: the parent cannot be read.
        ConfigError: ``at`` is beyond the parent's calls, or the fork has a ``model`` and
            the parent's call after ``at`` names none in its request.
    """
    recording, sha = load_hashed(fork.parent)
    parent: dict[str, Any] = {"path": shown_path(fork.parent, root), "at": fork.at}
    parent["sha256"] = sha
    if fork.branch is not None:
        parent["branch"] = dict(fork.branch)
    if fork.at is None:  # every call replays until the first the parent lacks: ``left``
        return recording, parent
    highest = max((e.seq for e in recording.entries), default=0)
    if fork.at > highest:
        raise ConfigError(
            f"{option}{fork.at} is beyond the calls of {fork.parent} (seq 1 to {highest}); "
            f"fork at 0 to {highest}"
        )
    # File order, as the parent has them: calls a later append run added (their seqs start
    # again) keep their place after the calls that run replayed.
    shared = [e for e in recording.entries if e.seq <= fork.at]
    first_live = next((e for e in recording.entries if e.seq == fork.at + 1), None)
    inherited = retarget_of(recording.header.extra.get("parent"), fork.parent)
    retarget = fork_retarget(inherited, fork.at, fork.model, first_live, fork.parent)
    if retarget is not None:
        parent.update(retarget.header(fork.at))
    return replace(recording, entries=tuple(shared)), parent


def left(
    recording: Recording, parent: Mapping[str, Any], at: int
) -> tuple[Recording, dict[str, Any]]:
    """A fork without ``at`` that leaves its parent's path after seq ``at``: the calls its
    cassette starts with (the parent's up to ``at``, in file order) and its header's
    ``parent`` (a branch's ``left_at`` is the seq it left at)."""
    told = {**parent, "at": at}
    if isinstance(parent.get("branch"), Mapping):
        told["branch"] = dict(parent["branch"], left_at=at + 1)
    shared = tuple(e for e in recording.entries if e.seq <= at)
    return replace(recording, entries=shared), told


def shown_path(path: str, root: str) -> str:
    """``path`` as a fork's header names it: relative to the project root (with ``/``)
    when it is under it, so the link holds in another checkout; else as given."""
    if store.is_url(path) or not root:
        return path
    full = os.path.abspath(path)
    real_root = os.path.abspath(root)
    if os.path.commonpath([full, real_root]) != real_root:
        return path
    return os.path.relpath(full, real_root).replace(os.sep, "/")
