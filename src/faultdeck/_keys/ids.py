"""Volatile ids: which strings are generated identifiers, and their renaming in a run.

An id a provider hands out (``chatcmpl-…``, ``call_…``, a UUID) comes back in a later
request; both are renamed ``«id:N»`` in order of first appearance in the run, so two
recordings of the same behaviour get the same keys.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

from .asis import id_candidates

_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
# Prefixes of the ids providers hand out (chatcmpl-…, call_…, toolu_…, resp_…).
_PROVIDER_NAMES = (
    "chatcmpl",
    "cmpl",
    "call",
    "toolu",
    "srvtoolu",
    "msg",
    "msgbatch",
    "resp",
    "req",
    "run",
    "fc",
    "rs",
    "ws",
    "item",
    "batch",
    "file",
    "asst",
    "thread",
    "step",
    "evt",
    "sess",
    "ctc",
    "mcp",
    "mcpr",
)
_PROVIDER_ID = re.compile(rf"(?:{'|'.join(_PROVIDER_NAMES)})[-_][A-Za-z0-9_-]{{6,}}")
_ID_CHARS = re.compile(r"[A-Za-z0-9_.:-]{8,}")
# What every id an output hands out is made of (see ``IdMap.odd``).
_ID_ONLY = re.compile(r"[A-Za-z0-9_.:-]+").fullmatch
_DIGIT = re.compile(r"\d")
_GENERATED = re.compile(r"(?=[^\d]*\d)[A-Za-z0-9_.:-]{8,}")
_PROVIDER_PREFIXES = tuple(f"{name}{sep}" for name in _PROVIDER_NAMES for sep in "-_")
# Their first two letters: a set lookup rules out most strings before 48 prefix compares.
_PROVIDER_HEADS = frozenset(name[:2] for name in _PROVIDER_NAMES)


def is_id_field(name: str) -> bool:
    """Whether a field name conventionally holds an identifier."""
    return name == "id" or name.endswith(("_id", "Id", "-id"))


def looks_like_id(value: str, field_name: str | None) -> bool:
    """Whether a string is a generated identifier: a UUID, a provider id, or a
    generated-looking value (8+ id characters with a digit) under an id-named field."""
    n = len(value)
    if n == 36 and _UUID.fullmatch(value):
        return True
    if n >= 8 and value[:2] in _PROVIDER_HEADS and _PROVIDER_ID.fullmatch(value):
        return True
    return field_name is not None and is_id_field(field_name) and bool(_GENERATED.fullmatch(value))


class IdMap:
    """Consistent renaming of volatile ids within one run, in order of first appearance.

    Attributes:
        names: the placeholder of each id learned or named so far; read it, change it only
            through the methods.
        odd: an id learned was not made of id characters only (a hand-written ``ids``
            list): a string of any shape may then be renamed, which a comparison of args
            as stored (``asis.py``) does not look for, so it steps aside.
        pending: outputs whose ids are learned only when a later call could send one back
            (``defer``, ``drain``): most answers are never looked into, and the numbering
            comes out the same. Read it (a plain list: no call on the hot path); change it
            only through those methods.
    """

    __slots__ = ("_tentative", "names", "odd", "pending")

    def __init__(self) -> None:
        self.odd = False
        self.names: dict[str, str] = {}
        self.pending: list[Any] = []
        # How many ids a walk whose key may be thrown away has named (see ``tentative``);
        # -1 outside such a walk. Named ids are the newest in ``names``, so a rollback
        # pops them.
        self._tentative = -1

    def __len__(self) -> int:
        return len(self.names)

    def get(self, raw: str) -> str | None:
        """The placeholder already given to ``raw``, if any."""
        return self.names.get(raw)

    def name(self, raw: str) -> str:
        """The placeholder of ``raw``, giving it the next one if it has none."""
        placeholder = self.names.get(raw)
        if placeholder is None:
            placeholder = f"«id:{len(self.names) + 1}»"
            self.names[raw] = placeholder
            if self._tentative >= 0:
                self._tentative += 1
        return placeholder

    def learn(self, ids: Iterable[str]) -> None:
        """Give placeholders to ids found in an output, in order."""
        names = self.names
        for raw in ids:
            if raw not in names:
                names[raw] = f"«id:{len(names) + 1}»"
                if not _ID_ONLY(raw):
                    self.odd = True

    def tentative(self) -> None:
        """From now on remember which ids ``name`` adds, until ``commit`` or ``rollback``.

        Outputs learned meanwhile are kept either way: learning comes before any naming in
        a walk, so dropping the walk's names leaves the numbering dense.
        """
        self._tentative = 0

    @property
    def named_tentatively(self) -> bool:
        """Whether the walk since ``tentative`` gave a new placeholder (to a string no
        answer taught): what it stands for, a secret among them, the key does not say."""
        return self._tentative > 0

    def commit(self) -> None:
        """Keep the ids named since ``tentative``."""
        self._tentative = -1

    def rollback(self) -> None:
        """Forget the ids named since ``tentative``."""
        names = self.names
        for _ in range(max(self._tentative, 0)):
            names.popitem()
        self._tentative = -1

    def none_in(self, form: bytes, collect: Callable[[Any], list[str]]) -> bool:
        """Whether no string in ``form`` (a JSON value's bytes) has a placeholder, once the
        outputs waiting are learned, as a walk learns them before it looks (``collect``
        finds an output's ids). Only strings an id can be are looked at (``asis.id_candidates``),
        and none while no id is known or waiting."""
        if not self.names and not self.pending:
            return True
        found = id_candidates(form)
        if not found:
            return True
        if self.pending:
            self.drain(collect)
        names = self.names
        return not any(raw in names for raw in found)

    def defer(self, output: Any) -> None:
        """Remember an output whose ids are learned when they may be needed (``drain``)."""
        self.pending.append(output)

    def learn_stored(self, ids: Iterable[str], collect: Callable[[Any], list[str]]) -> None:
        """Learn the ids a cassette line lists (found when it was recorded), after any
        outputs still waiting: the numbering comes out as if the line's output were
        deferred and drained, without walking it."""
        if self.pending:
            self.drain(collect)
        self.learn(ids)

    def drain(self, collect: Callable[[Any], list[str]]) -> None:
        """Learn the ids of every remembered output, in the order they came."""
        pending, self.pending = self.pending, []
        for output in pending:
            self.learn(collect(output))


def could_be_id(value: str) -> bool:
    """Whether ``value`` has the shape of some id an output could have handed out."""
    return bool(
        (len(value) == 36 and _UUID.fullmatch(value))
        or (value[:2] in _PROVIDER_HEADS and value.startswith(_PROVIDER_PREFIXES))
        or (_ID_CHARS.fullmatch(value) and _DIGIT.search(value))
    )


def collect_ids(value: Any, field_name: str | None, found: list[str]) -> None:
    cls = type(value)
    if cls is str:
        # Shorter than any id: most of a model's answer is words, checked for free here.
        if len(value) >= 8 and looks_like_id(value, field_name):
            found.append(value)
    elif cls is dict:
        for k, v in value.items():
            collect_ids(v, k, found)
    elif cls is list:
        for v in value:
            collect_ids(v, field_name, found)
