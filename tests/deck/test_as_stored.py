"""A replay keys a call as a recording keys it, however closely its args resemble the args
of the line the replay expects next.

A line stores args normalized and redacted (ids renamed, date-times and secrets masked, a
path under the project root made relative), and a call sent with those very args keys as
that line. So a call whose args merely look like them must still be keyed by what they
mean: on replay each call gets the key a fresh recording of the same calls gives it, for
values of another type (1, 1.0, True), an id learned since the line was written, a path
under the project root, a secret.
"""

from __future__ import annotations

import collections
import contextlib
import enum
import functools
import math
import uuid
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import faultdeck as fd
from faultdeck._keys.canonical import make_key
from tests.support.calls import never

Call = tuple[str, str, Any, Any]  # kind, name, args, the answer it records
Sent = tuple[str, str, Any]
UUID = "0b8e3b5c-6f7e-4d2a-9c1b-3e5f7a9b1c2d"
SECRET = "sk-proj-" + "Zq7" * 12
HEADER = {"faultdeck": 1, "match": "keyed", "harness": {}, "env": {}, "volatile": []}


class Lang(enum.StrEnum):
    EN = "en"


class Level(enum.IntEnum):
    FIVE = 5


class Text(str):
    pass


class Missed(Exception):
    """What a call the replay did not answer does in the fresh recording."""


def config(root: Path, **changes: Any) -> fd.NormalizeConfig:
    return replace(fd.NormalizeConfig(root=str(root)), **changes)


def _answer(answer: Any) -> Any:
    if answer is Missed:
        raise Missed
    return orjson.loads(orjson.dumps(answer))  # the caller's own copy


def record(path: Path, calls: list[Call], normalize: fd.NormalizeConfig) -> fd.Deck:
    """Record ``calls``; one whose answer is ``Missed`` raises it, one JSON cannot hold is
    refused (and logged by neither deck)."""
    with fd.Deck(path, mode="record", normalize=normalize, clock=fd.VirtualClock()) as deck:
        for kind, name, args, answer in calls:
            with contextlib.suppress(Missed, fd.ArgumentError):
                deck.call(kind, name, args, functools.partial(_answer, answer))
    return deck


def replay(
    path: Path,
    calls: list[Sent],
    normalize: fd.NormalizeConfig,
    *,
    fresh: bool = True,
    **options: Any,
) -> Any:
    """Replay ``calls``: what each got (``("ok", answer)``, or its error's type). ``fresh``:
    check that each was keyed as a fresh recording of the same calls keys it (a cassette
    written by hand is not one a recording writes)."""
    got: list[Any] = []
    deck = fd.Deck(path, mode="replay", normalize=normalize, clock=fd.VirtualClock(), **options)
    with deck:
        for kind, name, args in calls:
            try:
                got.append(("ok", deck.call(kind, name, args, never)))
            except (fd.ArgumentError, fd.ReplayMiss) as exc:
                got.append((type(exc).__name__, Missed))
    if fresh:
        again = [(*call, answer) for call, (_, answer) in zip(calls, got, strict=True)]
        recorded = record(path.with_name("fresh.jsonl"), again, normalize)
        assert [c.key for c in deck.calls] == [c.key for c in recorded.calls]
    return got


def sent(calls: list[Call]) -> list[Sent]:
    return [(kind, name, args) for kind, name, args, _ in calls]


SEARCH = {"q": "retry budget", "top_k": 5, "fuzzy": False, "seed": None, "filters": {"repo": "x"}}
CALLS: list[Call] = [
    ("model", "chat", {"q": "plan"}, {"id": "chatcmpl-AbC12345xyz", "tool": "call_Zx81Kq0pLm"}),
    ("tool", "search", SEARCH, {"hits": ["docs/a.md"]}),
    ("tool", "read", {"tool_call_id": "call_Zx81Kq0pLm", "when": "2024-05-01T10:00:00Z"}, "hi"),
    ("tool", "lookup", {"ref": UUID, "ratio": 0.5, "none": None}, {"n": 1}),
    ("tool", "login", {"token": SECRET}, {"ok": True}),
]


@pytest.fixture
def cassette(tmp_path: Path) -> Path:
    path = tmp_path / "run.jsonl"
    record(path, CALLS, config(tmp_path))
    assert SECRET.encode() not in path.read_bytes()
    return path


def test_an_in_order_replay_answers_every_call_as_recorded(cassette: Path) -> None:
    got = replay(cassette, sent(CALLS), config(cassette.parent))
    assert got == [("ok", answer) for *_, answer in CALLS]


def test_args_sent_as_the_line_stores_them_are_keyed_by_what_they_mean(cassette: Path) -> None:
    stored = [(e.kind, e.name, e.args) for e in fd.load(cassette).entries]
    assert stored[2][2] == {"tool_call_id": "«id:2»", "when": "«ts»"}
    assert stored[4][2]["token"].startswith("«redacted:")
    # Normalizing leaves a placeholder as it is, and masks a mask to itself.
    assert replay(cassette, stored, config(cassette.parent)) == [
        ("ok", answer) for *_, answer in CALLS
    ]


@pytest.mark.parametrize(
    ("change", "outcome"),
    [
        pytest.param(lambda a: {**a, "top_k": 5.0}, "ReplayMiss", id="an int sent as a float"),
        pytest.param(lambda a: {**a, "top_k": True}, "ReplayMiss", id="a bool for an int"),
        pytest.param(lambda a: {**a, "fuzzy": 0}, "ReplayMiss", id="an int for a bool"),
        pytest.param(lambda a: {**a, "seed": math.nan}, "ArgumentError", id="NaN for a null"),
        pytest.param(lambda a: {**a, "seed": -math.inf}, "ArgumentError", id="inf for a null"),
        pytest.param(lambda a: {**a, "top_k": Level.FIVE}, "ArgumentError", id="an IntEnum"),
        pytest.param(lambda a: {**a, "q": Text(a["q"])}, "ArgumentError", id="a str subclass"),
        pytest.param(lambda a: {**a, "filters": {"repo": Lang.EN}}, "ArgumentError", id="str enum"),
        pytest.param(
            lambda a: {**a, "q": orjson.Fragment(orjson.dumps(a["q"]))},
            "ArgumentError",
            id="a Fragment",
        ),
        pytest.param(
            lambda a: {**a, "filters": collections.OrderedDict(a["filters"])},
            "ArgumentError",
            id="dict",
        ),
        pytest.param(lambda a: dict(reversed(a.items())), "ok", id="another field order"),
        pytest.param(lambda a: {**a, "extra": 1}, "ReplayMiss", id="a field more"),
        pytest.param(lambda a: {**a, "authorization": "Bearer sk-abc"}, "ok", id="a credential"),
        pytest.param(lambda a: {**a, "q": 2**64 - 1}, "ArgumentError", id="past 64 bits"),
    ],
)
def test_args_that_look_like_the_stored_ones_key_by_what_they_mean(
    cassette: Path, change: Callable[[Any], Any], outcome: str
) -> None:
    calls = sent(CALLS)
    kind, name, args = calls[1]
    calls[1] = (kind, name, change(dict(args)))
    got = replay(cassette, calls, config(cassette.parent))
    assert got[1][0] == outcome
    assert got[4] == ("ok", {"ok": True})


def test_a_path_under_the_project_root_keys_by_the_path_it_names(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    record(
        path, [("tool", "read", {"path": str(tmp_path / "call_abc12345")}, "a")], config(tmp_path)
    )
    recording = fd.load(path)
    assert recording.entries[0].args == {"path": "call_abc12345"}
    assert recording.rules is None  # a replay must key such args again
    absolute = [("tool", "read", {"path": str(tmp_path / "call_abc12345")})]
    assert replay(path, absolute, config(tmp_path)) == [("ok", "a")]
    # Sent as stored, the relative path reads as a provider id: renamed, another key.
    relative = [("tool", "read", {"path": "call_abc12345"})]
    assert replay(path, relative, config(tmp_path))[0][0] == "ReplayMiss"
    # Replayed from another root, the path keys as an absolute one.
    assert replay(path, absolute, config(tmp_path / "moved"))[0][0] == "ReplayMiss"


def test_an_id_learned_since_the_line_was_recorded_renames_what_the_line_holds(
    tmp_path: Path,
) -> None:
    path = tmp_path / "ids.jsonl"
    record(
        path,
        [("tool", "start", {"q": 1}, 1), ("tool", "plan", {"model": "gpt-4o-mini"}, 2)],
        config(tmp_path),
    )
    # A call the recording never made names the string an id (generated-looking, under an
    # id field): the next line's stored args hold it, and they key otherwise now.
    calls = [
        ("tool", "start", {"q": 1}),
        ("tool", "other", {"user_id": "gpt-4o-mini"}),
        ("tool", "plan", {"model": "gpt-4o-mini"}),
    ]
    got = replay(path, calls, config(tmp_path))
    assert [g[0] for g in got] == ["ok", "ReplayMiss", "ReplayMiss"]


def test_an_id_list_written_by_hand_is_learned(tmp_path: Path) -> None:
    path = tmp_path / "odd.jsonl"
    calls: list[Call] = [
        ("tool", "a", {"q": 1}, {"x": 1}),
        ("tool", "b", {"q": "docs/readme.md"}, 2),
    ]
    record(path, calls, config(tmp_path))
    lines = path.read_bytes().splitlines()
    first = orjson.loads(lines[1])
    first["ids"] = ["docs/readme.md"]  # no id's shape: learned all the same, renamed in args
    path.write_bytes(b"\n".join([lines[0], orjson.dumps(first), *lines[2:]]) + b"\n")
    got = replay(path, sent(calls), config(tmp_path), fresh=False)
    assert [g[0] for g in got] == ["ok", "ReplayMiss"]


def test_rules_changed_since_the_recording_key_every_call_by_the_new_rules(
    cassette: Path,
) -> None:
    volatile = config(cassette.parent, volatile=frozenset({"q"}))
    assert [g[0] for g in replay(cassette, sent(CALLS), volatile)] == ["ReplayMiss"] * 4 + ["ok"]
    ruled = config(cassette.parent, rules={"tool:search": lambda args: {**args, "top_k": 1}})
    assert replay(cassette, sent(CALLS), ruled)[1][0] == "ReplayMiss"


def written(path: Path, *lines: Any) -> Path:
    end = {"end": {"calls": len(lines), "status": "ok"}}
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in (HEADER, *lines, end)))
    return path


def test_a_line_written_in_another_field_order_answers_as_recorded(tmp_path: Path) -> None:
    args = {"q": "retry", "n": 1}
    call = {"kind": "tool", "name": "search", "key": make_key("tool", "search", args)}
    path = written(
        tmp_path / "reordered.jsonl",
        {"out": "a", "seq": 1, **call, "args": args, "ms": 1},
        {"seq": 2, "args": args, **call, "ms": 1, "out": "b"},
    )
    calls = [("tool", "search", dict(args))] * 2
    assert replay(path, calls, config(tmp_path), fresh=False) == [("ok", "a"), ("ok", "b")]


# Numbers at the edges of what JSON readers agree on: past 64 bits orjson reads an integer
# as a float, and floats of every size and precision.
EDGE_NUMBERS = [
    *(b"9223372036854775807", b"18446744073709551615", b"18446744073709551616"),
    *(b"-9223372036854775808", b"-9223372036854775809", b"123456789012345678901234567890"),
    *(b"0.1", b"1e-7", b"1E2", b"-0.0", b"1.7976931348623157e308", b"5e-324"),
    b"0.12345678901234567890123",
]


def test_a_recorded_answer_gives_each_number_as_orjson_reads_it(tmp_path: Path) -> None:
    answers = [b'{"v":[%s,{"w":%s}],"s":"x"}' % (n, n) for n in EDGE_NUMBERS]
    lines = [
        {"seq": n, "kind": "tool", "name": "search", "key": make_key("tool", "search", {"n": n})}
        | {"args": {"n": n}, "out": orjson.Fragment(answer), "ms": 1}
        for n, answer in enumerate(answers, start=1)
    ]
    path = written(tmp_path / "numbers.jsonl", *lines)
    calls = [("tool", "search", {"n": n}) for n in range(1, len(answers) + 1)]
    got = replay(path, calls, config(tmp_path), fresh=False)
    # repr tells 18446744073709551616 from 1.8446744073709552e+19, which compare equal
    assert repr(got) == repr([("ok", orjson.loads(answer)) for answer in answers])


# Strings each rule looks for: a model name (an id's shape), a UUID, a provider id, a
# date-time, a placeholder, a path, a secret.
STRINGS = ["gpt-4o-mini", UUID, "call_Zx81Kq0pLm", "2024-05-01T10:00:00Z", "«id:1»", "faultdeck"]
STRINGS += ["plain words here", "", "docs/a.md", SECRET]
JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from(STRINGS)
    | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(["q", "id", "user_id", "created_at", "model", "x-api-key", "n"]),
            inner,
            max_size=3,
        )
    ),
    max_leaves=8,
)
ARGS = st.dictionaries(st.sampled_from(["q", "id", "ref", "model", "when", "n"]), JSON, max_size=4)
ANSWER = JSON | st.fixed_dictionaries({"id": st.sampled_from(["gpt-4o-mini", UUID])})
CHANGES: list[Callable[[Any], Any]] = [
    lambda a: a,
    lambda a: a,
    lambda a: dict(reversed(a.items())),
    lambda a: {**a, "n": 1.0},
    lambda a: {**a, "n": True},
    lambda a: {**a, "n": math.nan},
    lambda a: {**a, "q": Lang.EN},
    lambda a: {**a, "q": Text("x")},
    lambda a: {k: tuple(v) if type(v) is list else v for k, v in a.items()},
    lambda a: {**a, "n": Level.FIVE},
    lambda a: {**a, "ref": uuid.UUID(UUID)},
    lambda a: {k: orjson.Fragment(orjson.dumps(v)) for k, v in a.items()},
]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    calls=st.lists(
        st.tuples(st.sampled_from(["tool", "model"]), st.sampled_from(["a", "b"]), ARGS, ANSWER),
        min_size=1,
        max_size=6,
    ),
    changes=st.lists(st.sampled_from(range(len(CHANGES))), min_size=6, max_size=6),
    order=st.permutations(range(6)),
)
def test_any_replay_of_any_recording_keys_as_a_recording_does(
    tmp_path_factory: pytest.TempPathFactory,
    calls: list[Call],
    changes: list[int],
    order: list[int],
) -> None:
    folder = tmp_path_factory.mktemp("any")
    path = folder / "any.jsonl"
    record(path, calls, config(folder))
    changed = [
        (kind, name, CHANGES[change](orjson.loads(orjson.dumps(args))))
        for (kind, name, args, _), change in zip(calls, changes, strict=False)
    ]
    replay(path, changed, config(folder), repeats="last")
    replay(path, [changed[i] for i in order if i < len(changed)], config(folder), repeats="last")


def test_a_secret_that_reads_as_an_id_does_not_take_another_calls_answer(
    tmp_path: Path,
) -> None:
    # Unredacted, the secret would be named «id:1», the placeholder the third call's own
    # argument was recorded under: the second call must still key as its redacted self.
    calls: list[Call] = [
        ("tool", "a", {}, None),
        ("tool", "a", {"id": "sk-proj-" + "Zq7" * 12}, None),
        ("tool", "a", {"id": "gpt-4o-mini"}, {"id": "gpt-4o-mini"}),
    ]
    path = tmp_path / "any.jsonl"
    record(path, calls, config(tmp_path))
    sent = [(kind, name, args) for kind, name, args, _ in calls]
    assert replay(path, sent, config(tmp_path), repeats="last") == [
        ("ok", None),
        ("ok", None),
        ("ok", {"id": "gpt-4o-mini"}),
    ]


def test_a_call_that_cannot_be_keyed_leaves_no_names_behind(tmp_path: Path) -> None:
    # The first call's args name the secret before its NaN is refused: that naming must be
    # forgotten, or the UUID in the third call is numbered one later than it was recorded.
    calls: list[Call] = [
        ("tool", "a", {"id": SECRET}, None),
        ("tool", "a", {}, None),
        ("tool", "a", {"q": [UUID]}, {"ok": True}),
    ]
    path = tmp_path / "any.jsonl"
    record(path, calls, config(tmp_path))
    changed = [("tool", "a", {"id": SECRET, "n": math.nan}), *sent(calls)[1:]]
    assert replay(path, changed, config(tmp_path), repeats="last") == [
        ("ArgumentError", Missed),
        ("ok", None),
        ("ok", {"ok": True}),
    ]
