"""The pieces of the as-stored comparison (``_keys/asis.py``), which tells a call whose args
are the args the next line stores from one whose args only look like them, and the facts
the recorder writes for it: the rules' fingerprint, the exact comparison of args, the
strings an id can be, and whether args may hold a path under the project root."""

from __future__ import annotations

import collections
import enum
import math
import uuid
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import orjson
import pytest

import faultdeck as fd
from faultdeck._keys.asis import args_form, id_candidates
from faultdeck._keys.ids import IdMap
from faultdeck._keys.normalize import Normalizer

BASE = fd.NormalizeConfig(root="/proj")


def test_the_fingerprint_names_every_rule_a_key_depends_on_but_the_root() -> None:
    fingerprint = Normalizer(BASE).fingerprint
    assert len(fingerprint) == 16
    assert Normalizer(replace(BASE)).fingerprint == fingerprint
    assert Normalizer(replace(BASE, root="/elsewhere")).fingerprint == fingerprint
    changed = [
        replace(BASE, strip_fields=BASE.strip_fields | {"x-trace"}),
        replace(BASE, volatile=frozenset({"nonce"})),
        replace(BASE, ids=False),
        replace(BASE, timestamps=False),
        replace(BASE, rules={"tool:search": lambda args: args}),
    ]
    prints = {Normalizer(c).fingerprint for c in changed}
    assert len(prints) == len(changed)
    assert fingerprint not in prints


class Mode(enum.StrEnum):
    FAST = "fast"


class Count(enum.IntEnum):
    FIVE = 5


class Plain(enum.Enum):
    FAST = "fast"


class Word(str):
    pass


STORED = {"q": "fast", "n": 5, "x": 1.5, "on": True, "tags": ["a"], "none": None}
REF = "0b8e3b5c-6f7e-4d2a-9c1b-3e5f7a9b1c2d"


def same(args: Any, stored: Any, root: bytes | None) -> bool:
    """Whether ``args`` are ``stored`` (args parsed from a line) as the comparison tells
    them: their form is the line's args as orjson writes them."""
    form = args_form(args, root)
    return form is not None and form == orjson.dumps(stored)


@pytest.mark.parametrize(
    ("args", "same_args"),
    [
        (dict(STORED), True),
        ({**STORED, "tags": ("a",)}, False),  # the keyed route makes it the list stored
        ({**STORED, "n": 5.0}, False),
        ({**STORED, "n": True}, False),
        ({**STORED, "on": 1}, False),
        ({**STORED, "x": -1.5}, False),
        ({**STORED, "x": math.nan}, False),
        ({**STORED, "none": math.nan}, False),  # NaN is written null
        ({**STORED, "none": math.inf}, False),
        ({**STORED, "none": -math.inf}, False),
        ({**STORED, "q": Mode.FAST}, False),  # an enum is written as its value
        ({**STORED, "n": Count.FIVE}, False),
        ({**STORED, "q": Plain.FAST}, False),
        ({**STORED, "q": Word("fast")}, False),
        ({**STORED, "q": orjson.Fragment(b'"fast"')}, False),
        ({(Word(k) if k == "q" else k): v for k, v in STORED.items()}, False),
        (collections.OrderedDict(STORED), False),
        (dict(reversed(STORED.items())), False),
        ({**STORED, "extra": 0}, False),
        ({k: v for k, v in STORED.items() if k != "none"}, False),
        ({**STORED, "q": "/proj/fast"}, False),
        ({**STORED, "q": {"deep": ["/proj/fast"]}}, False),
    ],
)
def test_args_are_the_stored_args_only_value_for_value_and_type_for_type(
    args: Any, same_args: bool
) -> None:
    assert same(args, STORED, b"/proj/") is same_args


def test_a_uuid_is_not_the_string_stored_for_it() -> None:
    stored = {"ref": REF}
    assert same({"ref": REF}, stored, None)
    assert not same({"ref": uuid.UUID(REF)}, stored, None)


_PLACES: dict[str, Callable[[Any], Any]] = {
    "field": lambda v: {"v": v},
    "list": lambda v: {"v": ["a", v]},
    "deep": lambda v: {"a": {"b": [1, {"v": v}]}},
    "top": lambda v: v,
}


@pytest.mark.parametrize("place", list(_PLACES))
@pytest.mark.parametrize(
    "value",
    [
        Mode.FAST,
        Count.FIVE,
        Plain.FAST,
        uuid.UUID(REF),
        orjson.Fragment(b'"fast"'),
        math.nan,
        math.inf,
        -math.inf,
        2**63,  # orjson writes it (to 2**64 - 1); the keys hold 63 bits
        2**64 - 1,
    ],
    ids=lambda v: f"{type(v).__name__}:{v}" if type(v) is not orjson.Fragment else "Fragment",
)
def test_a_value_the_keyed_route_refuses_is_never_as_stored_wherever_it_stands(
    value: Any, place: str
) -> None:
    args = _PLACES[place](value)
    with pytest.raises(fd.ArgumentError):
        Normalizer(BASE).args("tool", "t", args, IdMap())
    stored = orjson.loads(orjson.dumps(args))  # what a line would hold, were they written
    assert not same(args, stored, None)


@pytest.mark.parametrize("place", list(_PLACES))
def test_json_values_of_their_own_types_are_as_stored_wherever_they_stand(place: str) -> None:
    value: list[Any] = [1, -(2**63), 2**63 - 1, 2.5, -0.0, 1e300, None, True, "x", {"c": []}]
    args = _PLACES[place](value)
    assert same(args, orjson.loads(orjson.dumps(args)), None)
    tupled = _PLACES[place](tuple(value))  # keyed as the list stored, but not compared so
    assert not same(tupled, orjson.loads(orjson.dumps(tupled)), None)


def test_args_holding_a_path_under_the_root_are_never_as_stored() -> None:
    stored = {"path": "/proj/docs/a.md"}
    assert same(dict(stored), stored, None)
    assert not same(dict(stored), stored, b"/proj/")
    quoted = {"path": '/pr"oj/a.md'}  # the root as JSON writes it (Normalizer.root_json)
    assert same(dict(quoted), quoted, b"/proj/")
    assert not same(dict(quoted), quoted, Normalizer(replace(BASE, root='/pr"oj')).root_json)


def test_args_json_cannot_hold_are_never_as_stored() -> None:
    deep: Any = "x"
    for _ in range(300):
        deep = [deep]
    for args in ({"n": 2**64}, {1: "a"}, {"s": {1, 2}}, {"b": b"x"}, deep):
        assert args_form(args, None) is None


def test_the_strings_an_id_can_be_are_the_long_ones_made_of_id_characters() -> None:
    stored = {
        "model": "gpt-4o-mini",
        "ref": "0b8e3b5c-6f7e-4d2a-9c1b-3e5f7a9b1c2d",
        "short": "abc1",
        "prose": "call_12345678 is here",
        "path": "docs/readme.md",
        "quoted": 'say "call_12345678"',
        "list": ["call_Zx81Kq0pLm"],
    }
    found = id_candidates(orjson.dumps(stored))
    assert "gpt-4o-mini" in found
    assert "0b8e3b5c-6f7e-4d2a-9c1b-3e5f7a9b1c2d" in found
    assert "call_Zx81Kq0pLm" in found
    assert "abc1" not in found
    assert "docs/readme.md" not in found
    assert "call_12345678 is here" not in found
    assert "call_12345678" not in found  # in prose, and quoted inside a string


def test_an_id_map_knows_none_of_the_strings_until_it_learns_one() -> None:
    ids = IdMap()
    stored = orjson.dumps({"model": "gpt-4o-mini"})
    assert ids.none_in(stored, Normalizer().output_ids)
    ids.defer({"id": "gpt-4o-mini"})  # learned only when looked for
    assert not ids.none_in(stored, Normalizer().output_ids)
    assert not ids.pending
    assert not ids.odd
    ids.learn(["docs/readme.md"])
    assert ids.odd


@pytest.mark.parametrize(
    ("root", "args", "moves"),
    [
        (None, {"p": "/proj/a"}, False),
        ("/proj", {"p": "/proj/a"}, True),
        ("/proj", {"p": "/project/a"}, False),
        ("/proj", {"/proj/a": 1}, True),  # a field name: a superset is fine
        ('/pr"oj', {"p": '/pr"oj/a'}, True),  # the prefix as JSON escapes it
        ("/proj", {"p": ["x", "/proj/b"]}, True),
    ],
)
def test_args_may_move_when_the_roots_prefix_stands_in_them(
    root: str | None, args: Any, moves: bool
) -> None:
    assert Normalizer(replace(BASE, root=root)).may_move(args) is moves


def test_a_rule_is_found_by_kind_and_name_or_by_name() -> None:
    normalizer = Normalizer(replace(BASE, rules={"tool:a": lambda x: x, "b": lambda x: x}))
    assert normalizer.has_rule("tool", "a")
    assert not normalizer.has_rule("model", "a")
    assert normalizer.has_rule("model", "b")
    assert not Normalizer(BASE).has_rule("tool", "a")
