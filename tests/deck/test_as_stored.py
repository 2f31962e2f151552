"""The as-stored route (``_keys/asis.py``, ``_deck/clean.py``): a call whose args are the
stored args of the line an in-order replay expects keys as that line, without normalizing
or hashing them. Whatever a replay sends, it must give what the keyed route gives, call for
call: answers, errors, misses, the call log and the report.

The keyed route is the same deck with the route off: one whose rules name a call the
program never makes, so its fingerprint differs from the cassette's (``rules`` in the
header) while every key stays the same.
"""

from __future__ import annotations

import collections
import copy
import copyreg
import enum
import functools
import math
import uuid
from collections.abc import Callable
from contextlib import nullcontext as _nothing
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import faultdeck as fd
from faultdeck._cassette import reader
from faultdeck._keys.normalize import Normalizer

Call = tuple[str, str, Any, Any]  # kind, name, args, the answer it records
UUID = "0b8e3b5c-6f7e-4d2a-9c1b-3e5f7a9b1c2d"


def config(root: Path, **changes: Any) -> fd.NormalizeConfig:
    return replace(fd.NormalizeConfig(root=str(root)), **changes)


def _same(args: Any) -> Any:
    return args


def route_off(base: fd.NormalizeConfig) -> fd.NormalizeConfig:
    """``base`` with a rule for a call no program here makes: another fingerprint, the same
    keys for every other call."""
    return replace(base, rules={**base.rules, "tool:never_called": _same})


class Lang(enum.StrEnum):
    EN = "en"


_FRAGMENTS: dict[int, orjson.Fragment] = {}


def fragment(value: Any) -> orjson.Fragment:
    """``value``'s JSON as an ``orjson.Fragment``, which a deep copy gives as it is (it
    cannot be pickled: ``both_routes`` copies the calls it replays)."""
    made = orjson.Fragment(orjson.dumps(value))
    _FRAGMENTS[id(made)] = made
    return made


copyreg.pickle(orjson.Fragment, lambda f: (_FRAGMENTS.__getitem__, (id(f),)))


class Repo(enum.StrEnum):
    FAULTDECK = "faultdeck"


class Level(enum.IntEnum):
    FIVE = 5


class Text(str):
    pass


def record(path: Path, calls: list[Call], normalize: fd.NormalizeConfig) -> None:
    with fd.Deck(path, mode="record", normalize=normalize, clock=fd.VirtualClock()) as deck:
        for kind, name, args, answer in calls:
            deck.call(kind, name, args, functools.partial(copy.deepcopy, answer))


def play(
    path: Path, calls: list[tuple[str, str, Any]], normalize: fd.NormalizeConfig, **options: Any
) -> tuple[list[Any], fd.Deck]:
    """Replay ``calls``: what each gave (an answer, or its error's type and text)."""
    got: list[Any] = []
    deck = fd.Deck(path, mode="replay", normalize=normalize, clock=fd.VirtualClock(), **options)
    with deck:
        for kind, name, args in calls:
            try:
                got.append(("ok", deck.call(kind, name, args, _never)))
            except (Exception, fd.ReplayMiss) as exc:
                got.append((type(exc).__name__, str(exc)))
    return got, deck


def _never() -> Any:
    raise AssertionError("a replay ran a call live")


def both_routes(
    path: Path, calls: list[tuple[str, str, Any]], normalize: fd.NormalizeConfig, **options: Any
) -> tuple[list[Any], fd.Deck]:
    """Replay ``calls`` both ways; they must agree in everything. The as-stored deck."""
    fast, deck = play(path, calls, normalize, **options)
    slow, keyed = play(path, copy.deepcopy(calls), route_off(normalize), **options)
    assert fast == slow
    assert deck.calls == keyed.calls
    assert deck.report() == keyed.report()
    assert keyed._run.as_stored == 0
    return fast, deck


SEARCH = {"q": "retry budget", "top_k": 5, "fuzzy": False, "filters": {"repo": "faultdeck"}}


def agent_calls() -> list[Call]:
    search = {**SEARCH, "filters": {"repo": "faultdeck", "tags": ["a", "b"]}}
    chat = {"model": "gpt-4o-mini", "q": "plan", "temperature": 0}
    return [
        ("model", "chat", chat, {"id": "chatcmpl-AbC12345xyz", "tool": {"id": "call_Zx81Kq0pLm"}}),
        ("tool", "search", search, {"hits": ["docs/a.md"]}),
        ("tool", "read", {"tool_call_id": "call_Zx81Kq0pLm", "when": "2024-05-01T10:00:00Z"}, "hi"),
        ("tool", "lookup", {"ref": UUID, "ratio": 0.5, "none": None}, {"n": 1}),
        ("tool", "search", copy.deepcopy(search), {"hits": ["docs/b.md"]}),
        ("env", "HOME", {"name": "HOME"}, "home"),
    ]


def end_rules(path: Path) -> Any:
    """The rules the cassette's last line, its end line, names."""
    return orjson.loads(path.read_bytes().splitlines()[-1])["end"].get("rules")


def sent(calls: list[Call]) -> list[tuple[str, str, Any]]:
    return [(kind, name, copy.deepcopy(args)) for kind, name, args, _ in calls]


@pytest.fixture
def recorded(tmp_path: Path) -> tuple[Path, fd.NormalizeConfig, list[Call]]:
    normalize = config(tmp_path)
    calls = agent_calls()
    path = tmp_path / "run.jsonl"
    record(path, calls, normalize)
    return path, normalize, calls


def test_an_in_order_replay_answers_the_calls_whose_args_are_stored_as_they_are(
    recorded: tuple[Path, fd.NormalizeConfig, list[Call]],
) -> None:
    path, normalize, calls = recorded
    assert fd.load(path).rules == Normalizer(normalize).fingerprint
    got, deck = both_routes(path, sent(calls), normalize)
    assert [g[1] for g in got] == [answer for *_, answer in calls]
    # Ids the recording renamed and date-times it replaced are stored as placeholders, so
    # those calls (the tool call id sent back, the UUID the args bring) key the long way.
    assert deck._run.as_stored == 4


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda a: {**a, "top_k": 5.0}, id="an int sent as a float"),
        pytest.param(lambda a: {**a, "top_k": True}, id="a bool for an int"),
        pytest.param(lambda a: {**a, "fuzzy": 0}, id="an int for a bool"),
        pytest.param(lambda a: {**a, "top_k": math.nan}, id="NaN"),
        pytest.param(lambda a: {**a, "top_k": math.inf}, id="infinity"),
        pytest.param(lambda a: {**a, "top_k": Level.FIVE}, id="an IntEnum"),
        pytest.param(lambda a: {**a, "q": Text(a["q"])}, id="a str subclass"),
        pytest.param(lambda a: {**a, "filters": {**a["filters"], "repo": Lang.EN}}, id="str enum"),
        pytest.param(
            lambda a: {**a, "filters": {**a["filters"], "repo": Repo.FAULTDECK}},
            id="a str enum of the stored value",
        ),
        pytest.param(lambda a: {**a, "q": fragment(a["q"])}, id="a Fragment"),
        pytest.param(
            lambda a: {**a, "filters": collections.OrderedDict(a["filters"])}, id="a dict subclass"
        ),
        pytest.param(
            lambda a: {**a, "filters": {**a["filters"], "tags": ("a", "b")}}, id="a tuple"
        ),
        pytest.param(lambda a: dict(reversed(a.items())), id="the fields in another order"),
        pytest.param(lambda a: {**a, "extra": 1}, id="a field more"),
        pytest.param(lambda a: {k: v for k, v in a.items() if k != "fuzzy"}, id="a field less"),
        pytest.param(lambda a: {**a, "q": "other"}, id="another value"),
        pytest.param(lambda a: {**a, "authorization": "Bearer sk-abc"}, id="a credential field"),
        pytest.param(lambda a: {**a, "q": 2**64 - 1}, id="an integer past 64 bits signed"),
    ],
)
@pytest.mark.parametrize("held", [False, True], ids=["parsed", "held"])
def test_each_change_to_the_stored_args_gives_what_the_keyed_route_gives(
    recorded: tuple[Path, fd.NormalizeConfig, list[Call]],
    change: Callable[[Any], Any],
    held: bool,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path, normalize, calls = recorded
    if held:  # read as a large cassette is: entries that hold their lines
        monkeypatch.setattr(reader, "HOLD_LINES_FROM", 0)
    replay = sent(calls)
    kind, name, args = replay[1]
    replay[1] = (kind, name, change(args))
    got, deck = both_routes(path, replay, normalize, repeats="last")
    assert got[0] == ("ok", calls[0][3])
    assert deck._run.as_stored >= 1


def test_a_path_under_the_project_root_in_args_keys_the_whole_file_again(tmp_path: Path) -> None:
    normalize = config(tmp_path)
    calls: list[Call] = [
        ("tool", "read", {"path": str(tmp_path / "call_abc12345")}, {"text": "a"}),
        ("tool", "read", {"path": "docs/b.md"}, {"text": "b"}),
    ]
    path = tmp_path / "paths.jsonl"
    record(path, calls, normalize)
    assert orjson.loads(path.read_bytes().splitlines()[1])["args"] == {"path": "call_abc12345"}
    assert end_rules(path) is None
    assert fd.load(path).rules is None
    # Sent as stored, the relative path would read as a provider id: renamed, another key.
    replay = [("tool", "read", {"path": "call_abc12345"}), ("tool", "read", {"path": "docs/b.md"})]
    got, deck = both_routes(path, replay, normalize)
    assert got[0][0] == "ReplayMiss"
    assert deck._run.as_stored == 0


def test_a_path_under_the_replaying_root_goes_the_keyed_route(tmp_path: Path) -> None:
    recorded_at, replayed_at = tmp_path / "a", tmp_path / "b"
    calls: list[Call] = [("tool", "read", {"path": f"{replayed_at}/x.md"}, {"text": "x"})]
    path = tmp_path / "moved.jsonl"
    record(path, calls, config(recorded_at))
    assert fd.load(path).rules is not None  # not under the recording's root: kept as sent
    got, deck = both_routes(path, sent(calls), config(replayed_at))
    assert got[0][0] == "ReplayMiss"  # under the new root it keys as "x.md"
    assert deck._run.as_stored == 0


def test_an_id_learned_since_the_line_was_recorded_sends_its_call_the_keyed_route(
    tmp_path: Path,
) -> None:
    normalize = config(tmp_path)
    calls: list[Call] = [
        ("tool", "start", {"q": 1}, {"ok": True}),
        ("tool", "plan", {"model": "gpt-4o-mini"}, {"ok": True}),
    ]
    path = tmp_path / "ids.jsonl"
    record(path, calls, normalize)
    # A call the recording never made names the string an id (generated-looking, under an
    # id field): the next line's stored args hold it, and a walk would rename it now.
    replay = [
        ("tool", "start", {"q": 1}),
        ("tool", "other", {"user_id": "gpt-4o-mini"}),
        ("tool", "plan", {"model": "gpt-4o-mini"}),
    ]
    got, deck = both_routes(path, replay, normalize)
    assert [g[0] for g in got] == ["ok", "ReplayMiss", "ReplayMiss"]
    assert deck._run.as_stored == 1
    _, deck = both_routes(path, sent(calls), normalize)
    assert deck._run.as_stored == 2


def test_a_project_rule_keys_the_whole_file_again(tmp_path: Path) -> None:
    normalize = config(tmp_path, rules={"tool:plan": lambda args: {**args, "model": "any"}})
    calls: list[Call] = [
        ("tool", "start", {"q": 1}, {"ok": True}),
        ("tool", "plan", {"model": "gpt-4o-mini"}, {"ok": True}),
    ]
    path = tmp_path / "ruled.jsonl"
    record(path, calls, normalize)
    assert end_rules(path) is None
    replay = [("tool", "start", {"q": 1}), ("tool", "plan", {"model": "any"})]
    got, deck = play(path, replay, normalize)
    assert got == [("ok", {"ok": True}), ("ok", {"ok": True})]  # "any" keys through the rule
    assert deck._run.as_stored == 0


def test_rules_changed_since_the_recording_key_every_call_again(
    recorded: tuple[Path, fd.NormalizeConfig, list[Call]],
) -> None:
    path, normalize, calls = recorded
    volatile = replace(normalize, volatile=frozenset({"q"}))
    got, deck = both_routes(path, sent(calls), volatile)
    assert deck._run.as_stored == 0
    assert got[1][0] == "ReplayMiss"  # "q" is now hashed as «volatile»


@pytest.mark.parametrize("ending", ["no rules", "no end line"])
def test_a_cassette_whose_end_names_no_rules_is_keyed_as_before(
    recorded: tuple[Path, fd.NormalizeConfig, list[Call]], ending: str
) -> None:
    path, normalize, calls = recorded
    lines = path.read_bytes().splitlines()
    assert orjson.loads(lines[-1])["end"]["rules"] == Normalizer(normalize).fingerprint
    end = orjson.loads(lines[-1])
    del end["end"]["rules"]
    kept = [*lines[:-1], orjson.dumps(end)] if ending == "no rules" else lines[:-1]
    path.write_bytes(b"\n".join(kept) + b"\n")
    assert fd.load(path).rules is None
    with pytest.warns(fd.CassetteWarning) if ending == "no end line" else _nothing():
        got, deck = play(path, sent(calls), normalize)
    assert [g[1] for g in got] == [answer for *_, answer in calls]
    assert deck._run.as_stored == 0


def test_calls_appended_under_other_rules_leave_the_file_without_rules(
    recorded: tuple[Path, fd.NormalizeConfig, list[Call]],
) -> None:
    path, normalize, calls = recorded
    rules = Normalizer(normalize).fingerprint
    with fd.Deck(path, mode="append", normalize=normalize) as deck:
        deck.call("tool", "new", {"q": "later"}, lambda: 1)
    assert end_rules(path) == rules
    _, deck = both_routes(path, [*sent(calls), ("tool", "new", {"q": "later"})], normalize)
    assert deck._run.as_stored == 5
    other = replace(normalize, volatile=frozenset({"note"}))
    with fd.Deck(path, mode="append", normalize=other) as deck:
        deck.call("tool", "newer", {"q": "later"}, lambda: 2)
    assert end_rules(path) is None
    with fd.Deck(path, mode="append", normalize=normalize) as deck:
        deck.call("tool", "newest", {"q": "later"}, lambda: 3)
    assert end_rules(path) is None  # the file holds a call keyed under other rules


def test_a_fork_names_the_rules_only_when_its_parent_was_keyed_under_its_own(
    recorded: tuple[Path, fd.NormalizeConfig, list[Call]], tmp_path: Path
) -> None:
    path, normalize, calls = recorded
    ends = {}
    for label, rules in (("same", normalize), ("other", route_off(normalize))):
        fork = tmp_path / f"fork-{label}.jsonl"
        with fd.Deck(fork, mode="fork", parent=path, at=2, normalize=rules) as deck:
            for kind, name, args in sent(calls)[:2]:
                deck.call(kind, name, args, _never)
            deck.call("tool", "new", {"q": "after"}, lambda: 3)
        ends[label] = end_rules(fork)
    assert ends == {"same": Normalizer(normalize).fingerprint, "other": None}


def test_a_call_extracted_keeps_the_rules_it_was_keyed_under(
    recorded: tuple[Path, fd.NormalizeConfig, list[Call]], tmp_path: Path
) -> None:
    path, normalize, calls = recorded
    one = tmp_path / "one.jsonl"
    one.write_bytes(fd.extract(path, 2))
    assert fd.load(one).rules == Normalizer(normalize).fingerprint
    got, deck = play(one, sent(calls)[1:2], normalize)
    assert got == [("ok", calls[1][3])]
    assert deck._run.as_stored == 1


def test_an_id_list_written_by_hand_turns_the_route_off(tmp_path: Path) -> None:
    normalize = config(tmp_path)
    calls: list[Call] = [
        ("tool", "a", {"q": 1}, {"x": 1}),
        ("tool", "b", {"q": "docs/readme.md"}, {"x": 2}),
    ]
    path = tmp_path / "odd.jsonl"
    record(path, calls, normalize)
    lines = path.read_bytes().splitlines()
    first = orjson.loads(lines[1])
    first["ids"] = ["docs/readme.md"]  # no id's shape: learned, renamed in later args
    path.write_bytes(b"\n".join([lines[0], orjson.dumps(first), *lines[2:]]) + b"\n")
    got, deck = both_routes(path, sent(calls), normalize)
    assert got[1][0] == "ReplayMiss"
    assert deck._run.as_stored == 1


def test_strict_matching_takes_the_route_only_at_the_recorded_seq(
    recorded: tuple[Path, fd.NormalizeConfig, list[Call]],
) -> None:
    path, normalize, calls = recorded
    _, deck = both_routes(path, sent(calls), normalize, match="strict")
    assert deck._run.as_stored == 4
    shifted = [("tool", "extra", {"q": 0}), *sent(calls)]
    _, deck = both_routes(path, shifted, normalize, match="strict")
    assert deck._run.as_stored == 0


def test_a_large_cassette_of_held_lines_takes_the_route_with_one_parse(tmp_path: Path) -> None:
    normalize = config(tmp_path)
    calls: list[Call] = [
        ("tool", "search", {"q": f"query {i} " + "x" * 120, "top_k": i}, {"hits": [i]})
        for i in range(24_000)
    ]
    path = tmp_path / "large.jsonl"
    record(path, calls, normalize)
    assert path.stat().st_size >= 4 << 20  # read into entries that hold their lines
    got, deck = play(path, sent(calls), normalize)
    assert [g[1] for g in got[:3]] == [{"hits": [0]}, {"hits": [1]}, {"hits": [2]}]
    assert all(g == ("ok", {"hits": [i]}) for i, g in enumerate(got))
    assert deck._run.as_stored == len(calls)


# Strings each rule looks for: a model name (an id's shape), a UUID, a provider id, a
# date-time, a placeholder, a path, a secret.
STRINGS = ["gpt-4o-mini", UUID, "call_Zx81Kq0pLm", "2024-05-01T10:00:00Z", "«id:1»", "faultdeck"]
STRINGS += ["plain words here", "", "docs/a.md", "sk-proj-" + "Zq7" * 12]
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
ANSWER = st.one_of(
    JSON, st.fixed_dictionaries({"id": st.sampled_from(["gpt-4o-mini", "call_Zx81Kq0pLm", UUID])})
)
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
    lambda a: {**a, "n": math.inf},
    lambda a: {**a, "ref": uuid.UUID(UUID)},
    lambda a: {k: fragment(v) for k, v in a.items()},
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
    held=st.booleans(),
)
def test_any_replay_of_any_recording_gives_what_the_keyed_route_gives(
    tmp_path_factory: pytest.TempPathFactory,
    calls: list[Call],
    changes: list[int],
    order: list[int],
    held: bool,
) -> None:
    folder = tmp_path_factory.mktemp("any")
    normalize = config(folder)
    path = folder / "any.jsonl"
    record(path, calls, normalize)
    replay = [
        (kind, name, CHANGES[change](copy.deepcopy(args)))
        for (kind, name, args, _), change in zip(calls, changes, strict=False)
    ]
    with pytest.MonkeyPatch.context() as patch:
        if held:  # read as a large cassette is: entries that hold their lines
            patch.setattr(reader, "HOLD_LINES_FROM", 0)
        both_routes(path, replay, normalize, repeats="last")
        shuffled = [replay[i] for i in order if i < len(replay)]
        both_routes(path, shuffled, normalize, repeats="last")


@pytest.mark.parametrize("held", [False, True], ids=["parsed", "held"])
def test_args_holding_a_null_are_as_stored_and_nan_in_its_place_is_not(
    tmp_path: Path, held: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    normalize = config(tmp_path)
    calls: list[Call] = [
        ("model", "chat", {"text": "hi", "seed": None, "top_p": 0.5}, {"n": 1}),
        ("model", "chat", {"text": "hi", "seed": None, "top_p": 0.25}, {"n": 2}),
    ]
    path = tmp_path / "nulls.jsonl"
    record(path, calls, normalize)
    if held:
        monkeypatch.setattr(reader, "HOLD_LINES_FROM", 0)
    got, deck = both_routes(path, sent(calls), normalize)
    assert [g[1] for g in got] == [{"n": 1}, {"n": 2}]
    assert deck._run.as_stored == 2
    for nan in (math.nan, math.inf, -math.inf):  # each written null
        changed = [("model", "chat", {**args, "seed": nan}) for _, _, args in sent(calls)]
        got, deck = both_routes(path, changed, normalize)
        assert got[0][0] == "ArgumentError"
        assert deck._run.as_stored == 0


@pytest.mark.parametrize("held", [False, True], ids=["parsed", "held"])
def test_a_line_written_in_another_field_order_answers_as_recorded(
    tmp_path: Path, held: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    normalize = config(tmp_path)
    args = {"q": "retry", "n": 1}
    key = fd.make_key("tool", "search", args)
    header = {"faultdeck": 1, "match": "keyed", "harness": {}, "env": {}, "volatile": []}
    lines = [
        header,
        {
            "out": "a",
            "seq": 1,
            "kind": "tool",
            "name": "search",
            "key": key,
            "args": args,
            "ms": 1,
        },
        {
            "seq": 2,
            "args": args,
            "kind": "tool",
            "name": "search",
            "key": key,
            "ms": 1,
            "out": "b",
        },
        {"end": {"calls": 2, "status": "ok", "rules": Normalizer(normalize).fingerprint}},
    ]
    path = tmp_path / "reordered.jsonl"
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    if held:
        monkeypatch.setattr(reader, "HOLD_LINES_FROM", 0)
    got, deck = both_routes(path, [("tool", "search", dict(args))] * 2, normalize)
    assert got == [("ok", "a"), ("ok", "b")]
    assert deck._run.as_stored == 2


# Numbers at the edges of what msgspec and orjson read alike: past 64 bits orjson reads an
# integer as a float (msgspec as an integer), and floats of every size and precision.
EDGE_NUMBERS = [
    b"9223372036854775807",
    b"18446744073709551615",
    b"18446744073709551616",
    b"-9223372036854775808",
    b"-9223372036854775809",
    b"1000000000000000000",
    b"123456789012345678901234567890",
    b"0.1",
    b"1e-7",
    b"1E2",
    b"-0.0",
    b"1.7976931348623157e308",
    b"5e-324",
    b"0.12345678901234567890123",
]


def test_a_held_line_answers_each_number_as_orjson_reads_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    normalize = config(tmp_path)
    header = {"faultdeck": 1, "match": "keyed", "harness": {}, "env": {}, "volatile": []}
    lines = [orjson.dumps(header)]
    answers = []
    for seq, number in enumerate(EDGE_NUMBERS, start=1):
        args = {"n": seq}
        key = fd.make_key("tool", "search", args)
        answer = b'{"v":[%s,{"w":%s}],"s":"x"}' % (number, number)
        answers.append(orjson.loads(answer))
        lines.append(
            b'{"seq":%d,"kind":"tool","name":"search","key":"%s","args":%s,"out":%s,"ms":1}'
            % (seq, key.encode(), orjson.dumps(args), answer)
        )
    rules = Normalizer(normalize).fingerprint
    lines.append(orjson.dumps({"end": {"calls": len(answers), "status": "ok", "rules": rules}}))
    path = tmp_path / "numbers.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    monkeypatch.setattr(reader, "HOLD_LINES_FROM", 0)  # read as a large cassette is
    calls = [("tool", "search", {"n": seq}) for seq in range(1, len(answers) + 1)]
    got, deck = both_routes(path, calls, normalize)
    assert deck._run.as_stored == len(answers)
    # repr tells 18446744073709551616 from 1.8446744073709552e+19, which compare equal
    assert repr(got) == repr([("ok", answer) for answer in answers])
