"""Forks read back: which of two cassettes forked from the other, and a cassette's lineage.

A fork's header names its parent: ``{"parent": {"path", "at", "sha256"}}``, and ``model``
when its live calls were sent to another model (``_deck/fork.py`` writes it). ``forked``
tells ``diff`` that B (or A) forked from the other at seq N, so the diff starts there;
``lineage`` follows the parents of a cassette up to the first recording, for ``show``. A
parent is the same file only if its bytes still hash to the recorded sha256: one found at
the path but rewritten since is said to have changed, and shares no calls with its fork any
more.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Literal

from .._base.errors import FaultdeckError
from .._cassette import store
from .._cassette.format import Recording
from .._cassette.reader import load
from .._cassette.session import file_sha256

State = Literal["found", "changed", "missing"]
"""Whether a lineage's cassette was found as its fork left it."""

MAX_DEPTH = 64
"""How many parents ``lineage`` follows at most (a cycle of copied files ends there too)."""


@dataclass(frozen=True, slots=True)
class Parent:
    """A fork's ``parent`` header field.

    Attributes:
        path: the parent as the header names it (relative to the project root, or as given).
        at: the fork point: the parent's calls with seq 1 to ``at`` were replayed.
        sha256: the sha256 of the parent's bytes when the fork was made.
        model: the model the fork's calls after ``at`` were sent to, if another than they
            asked for (``faultdeck fork --model``).
    """

    path: str
    at: int
    sha256: str
    model: str | None = None


def parent_of(recording: Recording) -> Parent | None:
    """The parent a cassette's header names, or ``None`` (not a fork, or a field that is
    not ``{"path": str, "at": int, "sha256": str}``)."""
    field = recording.header.extra.get("parent")
    if type(field) is not dict:
        return None
    path, at, sha = field.get("path"), field.get("at"), field.get("sha256")
    if type(path) is not str or type(at) is not int or type(sha) is not str:
        return None
    model = field.get("model")
    return Parent(path, at, sha, model if type(model) is str else None)


def locate(parent: Parent, root: str) -> str:
    """Where a parent is on this machine: its path under the project root when relative."""
    if store.is_url(parent.path) or os.path.isabs(parent.path):
        return parent.path
    return os.path.join(root, parent.path)


@dataclass(frozen=True, slots=True)
class Forked:
    """How two diffed cassettes are related: one forked from the other.

    Attributes:
        fork: which side is the fork, ``a`` or ``b``.
        at: the fork point (the parent's seq).
        intact: the other side is the very parent (its bytes hash as the fork recorded):
            their calls up to ``at`` are shared and the diff starts after them. ``False``:
            the fork names that file, but it changed since, so all of it is compared.
    """

    fork: Literal["a", "b"]
    at: int
    intact: bool


def forked(a_path: str, a: Recording, b_path: str, b: Recording, *, root: str) -> Forked | None:
    """Whether B forked from A (or A from B), by the header and the parent's bytes."""
    sides: tuple[tuple[Literal["a", "b"], Recording, str], ...] = (
        ("b", b, a_path),
        ("a", a, b_path),
    )
    for side, child, other in sides:
        parent = parent_of(child)
        if parent is None:
            continue
        if file_sha256(other) == parent.sha256:
            return Forked(side, parent.at, True)
        if _same_file(locate(parent, root), other):
            return Forked(side, parent.at, False)
    return None


def _same_file(a: str, b: str) -> bool:
    if store.is_url(a) or store.is_url(b):
        return a == b
    return os.path.realpath(a) == os.path.realpath(b)


@dataclass(frozen=True, slots=True)
class Link:
    """One cassette in a lineage.

    Attributes:
        path: the cassette, as the header of its fork names it (the last link: as given).
        forked_at: the seq it forked from the link before it; ``None`` for the first.
        model: the model its calls after ``forked_at`` were sent to, if it names one.
        state: ``found``; ``changed`` (rewritten since the next link forked from it, so it
            shares no calls with it any more); ``missing`` (not found or not readable: the
            lineage stops there).
    """

    path: str
    forked_at: int | None
    state: State = "found"
    model: str | None = None


def lineage(path: str, recording: Recording, *, root: str) -> tuple[Link, ...]:
    """The cassettes a fork descends from, oldest first, ending with ``path`` itself;
    ``()`` when ``recording`` is no fork."""
    parent = parent_of(recording)
    if parent is None:
        return ()
    found: list[tuple[str, State]] = [(path, "found")]  # newest first: (path, state)
    points: list[tuple[int, str | None]] = []  # points[i]: where found[i] forked from found[i + 1]
    seen = {path if store.is_url(path) else os.path.realpath(path)}
    while parent is not None and len(found) <= MAX_DEPTH:
        points.append((parent.at, parent.model))
        where = locate(parent, root)
        key = where if store.is_url(where) else os.path.realpath(where)
        sha = file_sha256(where)
        if sha is None:
            found.append((parent.path, "missing"))
            break
        found.append((parent.path, "found" if sha == parent.sha256 else "changed"))
        if key in seen:
            break  # a cycle of copied files: drawn once
        seen.add(key)
        try:
            parent = parent_of(load(where))
        except FaultdeckError:
            break
    links = []
    for i, (p, state) in enumerate(found):
        at, model = points[i] if i < len(points) else (None, None)
        links.append(Link(p, at, state, model))
    return tuple(reversed(links))
