"""Today's normalization, id renaming, redaction and keys against a frozen copy of them.

tests/keys/reference holds these stages as they were before the hot path was made faster,
and every result must stay the same: random args and outputs, stepped through both
normalizers (ids learned now or later, walks kept or dropped), give the same args, keys and
ids; every planted credential and random value is redacted alike; random runs recorded
through a real ``Deck`` store the keys, args and outputs the reference computes, and replay
with no miss, also from a cassette written the older way; and a table of keys, frozen
here, covers each rule once.
"""

from __future__ import annotations

import itertools
import string
import tempfile
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import faultdeck as fd
from faultdeck._keys.ids import IdMap
from faultdeck._keys.names import SECRET
from faultdeck._keys.normalize import Normalizer
from faultdeck._keys.redact import Redactor
from faultdeck._keys.redact import secret_number as _secret_number
from tests.keys.reference.canonical import make_key as reference_key
from tests.keys.reference.ids import _PROVIDER_NAMES, collect_ids
from tests.keys.reference.ids import IdMap as ReferenceIds
from tests.keys.reference.normalize import NormalizeConfig as ReferenceConfig
from tests.keys.reference.normalize import Normalizer as ReferenceNormalizer
from tests.keys.reference.redact import Redactor as ReferenceRedactor
from tests.support.calls import never, returns
from tests.support.plants import all_near_misses, all_plants

ROOT = "/srv/app"
VOLATILE = frozenset({"nonce", "trace"})
EXTRA = (("ticket", r"TICKET-\d{4,}"),)
"""A project pattern: with one, the normalizer redacts strings of any length."""


def _ruled(args: Any) -> Any:
    # A user rule whose output holds a secret: what a rule adds is redacted and keyed too.
    return {"ruled": args, "note": "Bearer " + "tok" + "en." + "Zq7" * 12}


RULES = {"tool:ruled": _ruled}
SETTINGS: list[dict[str, Any]] = [
    {"root": ROOT, "volatile": VOLATILE, "rules": RULES},
    {"ids": False, "timestamps": False, "output_times": False, "strip_fields": frozenset()},
]
"""Normalization as a project configures it, and with every rule that can be switched off."""


def both(config: dict[str, Any], extra: Any = ()) -> tuple[ReferenceNormalizer, Normalizer]:
    """The reference normalizer and today's, with the same rules and redaction."""
    reference = ReferenceNormalizer(
        ReferenceConfig(**config), ReferenceRedactor(extra_patterns=extra)
    )
    return reference, Normalizer(fd.NormalizeConfig(**config), fd.Redactor(extra_patterns=extra))


def dumped(value: Any) -> bytes:
    """JSON bytes in the value's own order: equal only for equal types, order and text."""
    return orjson.dumps(value)


# -- what calls are made of -----------------------------------------------------------------

ALNUM = string.ascii_letters + string.digits
ID_CHARS = ALNUM + "_-"
SEEN = (
    "3f2b8c1e-9a4d-4e7f-8b6a-1c2d3e4f5a6b",
    "chatcmpl-8Zq1xY2wV3uT",
    "call_4kJ9mN2pQ7rS",
    "toolu_01AbCdEfGh",
    "resp_77aa88bb99",
    "ord_83hf82k1",
    "run-2024x7q",
    "A1B2C3D4-0000-4E7F-8B6A-FFFFFFFFFFFF",
)
"""Ids that outputs hand out and later args send back."""
PLANTS = tuple(p.text for p in all_plants())
"""A credential of every shape the table knows, as it is written (tests/support/plants.py)."""
MASKS = (
    "«redacted:sha256:0123abcd»",
    "\\u00abredacted:sha256:0123abcd\\u00bb",
    "«id:3»",
    "«ts»",
    "«volatile»",
)
FIELDS = (
    *("id", "user_id", "runId", "trace-id", "tool_call_id", "previous_response_id"),
    *("created", "created_at", "completed_at", "createTime", "updatedAt", "ts", "start_time"),
    *("date", "time", "datetime"),
    *("idempotency_key", "Idempotency-Key", "x-request-id", "request_id", "Authorization"),
    *("cookie", "X-Api-Key", "openai-organization", "dd-api-key"),
    *("password", "client_secret", "apiKey", "api_key", "token", "auth", "privateKey"),
    *("secrets", "next_page_token", "cursor", "max_tokens", "total_tokens"),
    *("nonce", "trace", "q", "path", "messages", "content", "role", "query", "filters"),
)
KINDS = st.sampled_from(("tool", "model"))
NAMES = st.sampled_from(
    ("search_docs", "read_file", "ruled", "chat", "openai.chat.completions", "get " + PLANTS[0])
)
SCHEMAS = st.sampled_from(("v1", "v1", "v2"))

PROVIDER_ID = st.builds(
    "".join,
    st.tuples(
        st.sampled_from(_PROVIDER_NAMES),
        st.sampled_from("-_"),
        st.text(ID_CHARS, min_size=3, max_size=24),
    ),
)


@st.composite
def date_times(draw: st.DrawFn) -> str:
    """A date-time as APIs write it: ``T`` or a space, seconds or not, a fraction, a zone."""
    when = draw(st.datetimes(min_value=datetime(1990, 1, 1), max_value=datetime(2099, 1, 1)))
    sep = draw(st.sampled_from("T "))
    clock = when.strftime("%H:%M:%S" if draw(st.booleans()) else "%H:%M")
    fraction = draw(st.sampled_from(("", ".1", ".123", ".123456")))
    zone = draw(st.sampled_from(("", "Z", "+02:00", "-0530")))
    return f"{when:%Y-%m-%d}{sep}{clock}{fraction}{zone}"


TEXT = st.one_of(
    st.uuids().map(str),
    st.uuids().map(lambda u: str(u).upper()),
    PROVIDER_ID,
    st.text(ID_CHARS + ".:", min_size=6, max_size=20),  # generated ids, and near misses
    st.sampled_from(SEEN),
    date_times(),
    st.dates().map(str),
    st.text(ID_CHARS + "/. ", max_size=20).map(lambda p: f"{ROOT}/{p}"),
    st.sampled_from((ROOT, ROOT + "/", ROOT + "lication/x", "/etc/hosts")),
    st.sampled_from(PLANTS),
    st.sampled_from(all_near_misses()),
    st.builds("{} {} {}".format, st.text(max_size=8), st.sampled_from(PLANTS), st.text(max_size=8)),
    st.text(ALNUM, min_size=12, max_size=40),  # random enough under a secret-like field
    st.sampled_from(MASKS),
    st.sampled_from(("TICKET-20931", "retry budget since 2024-05-01", "héllo wörld ✓ 日本")),
    st.text(max_size=30),
)
NUMBER = st.one_of(
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.integers(min_value=10**9, max_value=4 * 10**9),
    st.integers(min_value=10**12, max_value=4 * 10**12),
    st.floats(allow_nan=False, allow_infinity=False),
    st.floats(min_value=1e9, max_value=4e9),
)
LEAF = st.none() | st.booleans() | NUMBER | TEXT
KEY = st.sampled_from(FIELDS) | st.text(max_size=10)


def values(*, tuples: bool) -> st.SearchStrategy[Any]:
    """Nested JSON values; with ``tuples``, some lists come as tuples (as Python passes them)."""

    def nest(kids: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        lists = st.lists(kids, max_size=3)
        arrays = (lists | lists.map(tuple)) if tuples else lists
        return arrays | st.dictionaries(KEY, kids, max_size=4)

    return st.recursive(LEAF, nest, max_leaves=8)


_FIELDS = Redactor()


def secret_number(value: Any, secret: bool = False) -> bool:
    """Whether ``value`` holds a random number under a secret-like name: masked since the
    reference was frozen (a deliberate change, tested in tests/deck/test_secret_places.py),
    so such values are left out of the comparison."""
    if type(value) is int:
        return secret and _secret_number(value)
    if isinstance(value, dict):
        return any(
            secret_number(v, isinstance(k, str) and _FIELDS.field_kind(k) == SECRET)
            for k, v in value.items()
        )
    if isinstance(value, (list, tuple)):
        return any(secret_number(v, secret) for v in value)
    return False


def no_secret_numbers(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return strategy.filter(lambda v: not secret_number(v))


JSON = no_secret_numbers(values(tuples=True))
HANDED_OUT = st.sampled_from(SEEN) | st.sampled_from(SEEN) | st.uuids().map(str) | PROVIDER_ID
PLAIN_JSON = no_secret_numbers(values(tuples=False))
OUTPUT = no_secret_numbers(
    st.fixed_dictionaries(
        {"id": HANDED_OUT},
        optional={
            "created": st.integers(min_value=10**9, max_value=4 * 10**9),
            "created_at": date_times(),
            "content": TEXT,
            "tool_calls": st.lists(st.fixed_dictionaries({"id": HANDED_OUT}), max_size=2),
            "data": PLAIN_JSON,
        },
    )
    | PLAIN_JSON
)
"""What a call returns: ids handed out, wall-clock values, secrets (JSON the cassette keeps:
a tuple comes back from it a list)."""
ARGS = no_secret_numbers(
    st.one_of(
        st.dictionaries(KEY, JSON, max_size=6),
        JSON,
        st.fixed_dictionaries({"ref": st.sampled_from(SEEN)}, optional={"q": TEXT}),
        st.fixed_dictionaries({"q": st.sampled_from(("retry budget", "what next?", ""))}),
    )
)
"""What a call asks: anything, an id handed out before, or nothing id-like (so that outputs
wait to have their ids learned)."""


# -- 1. the normalizer, step by step --------------------------------------------------------


@dataclass(frozen=True)
class Step:
    """One thing a run does to its normalizer: normalize args (``args``; ``try``: on trial,
    unredacted, then kept or dropped as replay does), or learn an output's ids now
    (``learn``) or when a later string could be one of them (``defer``)."""

    op: str
    kind: str
    name: str
    value: Any
    flag: bool
    schema: str


STEP = st.builds(
    Step,
    op=st.sampled_from(("args", "args", "try", "learn", "defer", "defer")),
    kind=KINDS,
    name=NAMES,
    value=st.none(),
    flag=st.booleans(),
    schema=SCHEMAS,
)


def sent_back(draw: st.DrawFn, args: Any, handed: list[str]) -> Any:
    """``args``, or (often, once ids were handed out) args that send one of them back."""
    if not handed or not draw(st.booleans()):
        return args
    field = draw(st.sampled_from(("tool_call_id", "ref", "previous_response_id")))
    return {field: draw(st.sampled_from(handed)), "rest": args}


def handed_out(out: Any, handed: list[str]) -> None:
    """Add the ids ``out`` hands out to ``handed``."""
    collect_ids(out, None, handed)


@st.composite
def steps(draw: st.DrawFn) -> list[Step]:
    """Steps whose args often send back an id an earlier output handed out."""
    found: list[Step] = []
    handed: list[str] = []
    for _ in range(draw(st.integers(min_value=1, max_value=8))):
        step = draw(STEP)
        if step.op in ("args", "try"):
            value = sent_back(draw, draw(ARGS), handed)
        else:
            value = draw(OUTPUT)
            handed_out(value, handed)
        found.append(Step(step.op, step.kind, step.name, value, step.flag, step.schema))
    return found


SETUPS = [(SETTINGS[0], ()), (SETTINGS[0], EXTRA), (SETTINGS[1], ())]
"""A project's normalization, the same with a project pattern, every rule off."""


@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(setup=st.sampled_from(SETUPS), steps=steps())
def test_args_keys_ids_and_outputs_are_the_references(
    setup: tuple[dict[str, Any], Any], steps: list[Step]
) -> None:
    config, extra = setup
    reference, today = both(config, extra)
    old_ids, new_ids = ReferenceIds(), IdMap()
    for seq, s in enumerate(steps, 1):
        if s.op in ("args", "try"):
            redact = s.flag and s.op == "args"
            if s.op == "try":
                old_ids.tentative()
                new_ids.tentative()
            want = reference.args(s.kind, s.name, s.value, old_ids, redact=redact)
            got = today.args(s.kind, s.name, s.value, new_ids, redact=redact)
            assert dumped(got) == dumped(want)
            key = reference_key(s.kind, s.name, want, s.schema)
            assert fd.make_key(s.kind, s.name, got, s.schema) == key
            if s.op == "try":
                for ids in (old_ids, new_ids):
                    ids.commit() if s.flag else ids.rollback()
        else:
            found = reference.output_ids(s.value)
            assert today.output_ids(s.value) == found
            assert dumped(today.scrub_output(s.value, seq)) == dumped(
                reference.scrub_output(s.value, seq)
            )
            if s.op == "learn":
                old_ids.learn(found)
                new_ids.learn(today.output_ids(s.value))
            else:
                old_ids.defer(s.value)
                new_ids.defer(s.value)
        assert (len(new_ids), new_ids.waiting) == (len(old_ids), old_ids.waiting)


def test_every_plant_and_near_miss_is_treated_as_the_reference_treats_it() -> None:
    reference, today = both(SETTINGS[0])
    old, new = ReferenceRedactor(), fd.Redactor()
    for text in (*PLANTS, *all_near_misses()):
        assert new.scan_text(text) == old.scan_text(text)
        for value in (text, f"note: {text} (rotate it)", [text], {"password": text, "id": text}):
            assert dumped(new.redact(value)) == dumped(old.redact(value))
            want = reference.args("tool", "t", value, ReferenceIds())
            assert dumped(today.args("tool", "t", value, IdMap())) == dumped(want)


@st.composite
def pieces(draw: st.DrawFn) -> list[str]:
    """A text cut into a stream's deltas, so that a secret may be split across events."""
    text = draw(TEXT)
    cuts = sorted(draw(st.lists(st.integers(min_value=0, max_value=len(text)), max_size=4)))
    bounds = [0, *cuts, len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=JSON, name=NAMES, deltas=pieces())
def test_redaction_is_the_references(value: Any, name: str, deltas: list[str]) -> None:
    old, new = ReferenceRedactor(), fd.Redactor()
    assert dumped(new.redact(value)) == dumped(old.redact(value))
    assert new.redact_text(name) == old.redact_text(name)
    assert [(f.pattern, f.path) for f in new.findings(value)] == [
        (f.pattern, f.path) for f in old.findings(value)
    ]
    events = [{"event": "delta", "data": {"type": "text", "delta": t}} for t in deltas]
    stream = {"status": 200, "headers": {}, "events": events}
    assert dumped(new.redact_stream(stream)) == dumped(old.redact_stream(stream))


# -- 2. a deck records what the reference computes, and replays it --------------------------


@dataclass(frozen=True)
class Planned:
    """One call of a run: what the program asks, and what the world answers."""

    kind: str
    name: str
    args: Any
    out: Any
    schema: str


@dataclass(frozen=True)
class Expected:
    """A call as the reference would store it."""

    kind: str
    name: str
    key: str
    args: Any
    value: Any
    schema: str


PLANNED = st.builds(Planned, kind=KINDS, name=NAMES, args=ARGS, out=OUTPUT, schema=SCHEMAS)


@st.composite
def runs(draw: st.DrawFn) -> list[Planned]:
    """Calls whose later args often send back an id an earlier output handed out."""
    calls: list[Planned] = []
    handed: list[str] = []
    for _ in range(draw(st.integers(min_value=1, max_value=6))):
        call = draw(PLANNED)
        args = sent_back(draw, call.args, handed)
        handed_out(call.out, handed)
        calls.append(Planned(call.kind, call.name, args, call.out, call.schema))
    return calls


def reference_run(calls: list[Planned]) -> list[Expected]:
    """The run as the deck recorded it before the hot path changed: the name redacted, the
    args normalized and redacted, then keyed; the output scrubbed by seq and redacted; then
    the stored output's ids learned."""
    redactor = ReferenceRedactor()
    normalizer = ReferenceNormalizer(ReferenceConfig(**SETTINGS[0]), redactor)
    ids = ReferenceIds()
    expected = []
    for seq, call in enumerate(calls, 1):
        name = redactor.redact_text(call.name)
        args = normalizer.args(call.kind, name, call.args, ids)
        key = reference_key(call.kind, name, args, call.schema)
        stored = redactor.redact(normalizer.scrub_output(call.out, seq))
        ids.learn(normalizer.output_ids(stored))
        expected.append(Expected(call.kind, name, key, args, stored, call.schema))
    return expected


def deck(path: Path, mode: fd.Mode) -> fd.Deck:
    """A deck on ``path`` with the project's normalization (``SETTINGS[0]``), its own
    settings (nothing read from this repository) and a clock that never waits. Its project
    root does not exist, so no git runs to find a commit for the header."""
    return fd.Deck(
        path,
        mode=mode,
        normalize=fd.NormalizeConfig(**SETTINGS[0]),
        redactor=fd.Redactor(),
        settings=fd.Settings(root=str(path.parent / "no-project")),
        environ={},
        clock=fd.VirtualClock(),
    )


@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(calls=runs())
def test_a_deck_records_what_the_reference_computes_and_replays_it(
    tmp_path_factory: pytest.TempPathFactory, calls: list[Planned]
) -> None:
    expected = reference_run(calls)
    with tempfile.TemporaryDirectory(dir=tmp_path_factory.getbasetemp()) as folder:
        path = Path(folder) / "run.jsonl"
        with deck(path, "record") as recorder:
            for c in calls:
                assert (
                    recorder.call(c.kind, c.name, c.args, returns(c.out), schema_version=c.schema)
                    is c.out
                )
        entries = fd.load(path).entries
        assert [(e.seq, e.result) for e in entries] == [
            (i, "out") for i in range(1, len(calls) + 1)
        ]
        for e, x in zip(entries, expected, strict=True):
            assert (e.kind, e.name, e.key, e.schema) == (x.kind, x.name, x.key, x.schema)
            assert dumped(e.args) == dumped(x.args)
            assert dumped(e.value) == dumped(x.value)
        replays_all(path, calls, [e.value for e in entries])
        replays_all(as_older(path), calls, [e.value for e in entries])


def replays_all(path: Path, calls: list[Planned], values: list[Any]) -> None:
    """Replay ``calls`` from ``path``: each answered with its recorded value, none missed,
    none left over."""
    with deck(path, "replay") as replayer:
        for c, value in zip(calls, values, strict=True):
            got = replayer.call(c.kind, c.name, c.args, never, schema_version=c.schema)
            assert dumped(got) == dumped(value)
        report = replayer.report()
    assert (report.misses, report.unused, report.repeats) == ((), (), ())
    assert report.used == len(calls)


def as_older(path: Path) -> Path:
    """A copy of the cassette as the deck wrote it before the hot path changed: without the
    ids a line may list (a replay then finds them in the answers, as it did)."""
    lines = [orjson.loads(line) for line in path.read_bytes().splitlines()]
    for line in lines:
        if "seq" in line:
            line.pop("ids", None)
    older = path.with_name("older.jsonl")
    older.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    return older


# -- 3. keys frozen as the reference made them ---------------------------------------------

_BODY = "Zq7Xb2Lm9Pw4Tr8Kd3Hs6Vn1"  # credentials below are built from pieces, never written
OPENAI = "sk-" + "proj-" + _BODY * 2
GITHUB = "gh" + "p_" + _BODY + "Aa1Bb2Cc3Dd4"
AWS_ID = "AK" + "IA" + "Q7X2L9P4T8K3H6V1"
DB_URL = "postgres://app:" + "Pw4Tr8" + "Kd3Hs6@db:5432/orders"
JWT = "ey" + "JhbGciOiJIUzI1NiJ9.ey" + "JzdWIiOiIxMjM0NTY3ODkwIn0." + _BODY
UUID1, UUID2 = "3f2b8c1e-9a4d-4e7f-8b6a-1c2d3e4f5a6b", "0c9d8e7f-6a5b-4c3d-9e2f-1a0b9c8d7e6f"
CALL_ID = "call_4kJ9mN2pQ7rS"


@dataclass(frozen=True)
class Vector:
    """A call and its key (``kind:hex``), as a deck keys it: ``learned``'s ids learned first,
    the name redacted, the args normalized and redacted."""

    key: str
    name: str
    args: Any
    schema: str = "v1"
    learned: Any = None


VECTORS = [
    Vector(
        "tool:4a7864c88492be1d", "lookup", {"order": UUID1, "again": UUID1, "other": UUID2.upper()}
    ),
    Vector(
        "model:4d3a1dd8be3588b2",
        "chat",
        {
            "messages": [
                {"role": "assistant", "tool_calls": [{"id": CALL_ID}]},
                {"role": "tool", "tool_call_id": CALL_ID, "content": "ok"},
            ],
            "previous_response_id": "resp_77aa88bb99",
        },
    ),
    Vector("tool:cfa8f64e1e040dbc", "account", {"user_id": "u8f3k2m9q1", "label": "v2.3.4-rc1"}),
    Vector(
        "tool:46e08bc5a76fbbf8",
        "events",
        {"since": "2026-11-29T10:25:48.123Z", "at": "2026-11-29 10:25", "day": "2026-11-29"},
    ),
    Vector(
        "tool:e6f3fcf0dde0c948",
        "events",
        {"created_at": 1732873000, "updatedAt": 1732873000123, "ts": 1.7e9, "limit": 1732873000},
    ),
    Vector(
        "tool:3e204eb6013e9675",
        "read_file",
        {"path": f"{ROOT}/docs/retry.md", "other": "/etc/hosts", "near": f"{ROOT}lication/x"},
    ),
    Vector(
        "tool:9ae141a38d78185d",
        "fetch",
        {
            "headers": {"Authorization": "Bearer x", "Idempotency-Key": "k1", "Accept": "json"},
            "idempotency_key": "k2",
            "request_id": "r-1",
            "q": "retry",
        },
    ),
    Vector(
        "tool:b24e34b19e712654",
        "search_docs",
        {"q": f"use {OPENAI} here", "keys": [GITHUB, AWS_ID]},
    ),
    Vector("tool:2d3d98bd17baca13", "connect", {"dsn": DB_URL, "session": JWT}),
    Vector(
        "tool:b107816901dea507",
        "login",
        {"password": _BODY, "client_secret": "abc", "next_page_token": _BODY, "max_tokens": 512},
    ),
    Vector("tool:d6c978e7aa340443", "trace", {"nonce": "n-123", "trace": ["t-1", 7], "q": "x"}),
    Vector("model:a0b78229f0db754f", "chat", {"q": f"héllo wörld ✓ 日本, {CALL_ID} in prose"}),
    Vector("tool:91158681e86bba81", "ruled", {"q": "x"}),
    Vector("tool:58bf1b941e953893", "read_file", {"path": ("a", "b")}, schema="v2"),
    Vector(
        "model:f0d0dd40cd39864d",
        "chat",
        {"ref": UUID2, "new": UUID1, "call": CALL_ID},
        learned={"id": "chatcmpl-8Zq1xY2wV3uT", "items": [{"id": UUID2}], "created": 1732873000},
    ),
    Vector(
        "tool:f98cbf33482ae1b7", f"get {DB_URL}", {"note": "\\u00abredacted:sha256:0123abcd\\u00bb"}
    ),
]


def keyed(normalizer: Any, redactor: Any, ids: Any, vector: Vector, make: Any) -> str:
    """A vector's key as a deck makes it, through either side's parts."""
    kind = vector.key.partition(":")[0]
    if vector.learned is not None:
        ids.learn(normalizer.output_ids(vector.learned))
    name = redactor.redact_text(vector.name)
    return str(make(kind, name, normalizer.args(kind, name, vector.args, ids), vector.schema))


@pytest.mark.parametrize(
    "vector", VECTORS, ids=[f"{i}-{v.name[:12]}" for i, v in enumerate(VECTORS)]
)
def test_frozen_keys(vector: Vector) -> None:
    reference, today = both(SETTINGS[0])
    old = keyed(reference, ReferenceRedactor(), ReferenceIds(), vector, reference_key)
    new = keyed(today, fd.Redactor(), IdMap(), vector, fd.make_key)
    assert (old, new) == (vector.key, vector.key)
