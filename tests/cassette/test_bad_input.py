"""Bad input, everywhere: one documented error that names the file and the line or field.

The reader checks what replay relies on; a call kind a cassette cannot hold is refused when
the call is made; fault plans refuse numbers and nesting no plan needs. Hypothesis drives the
reader, the plan loader and ``show``/``diff`` with arbitrary input.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import faultdeck as fd
from faultdeck import cli

FIXTURE = HealthCheck.function_scoped_fixture  # tmp_path is reused; each example rewrites it
HEADER = {"faultdeck": 1, "match": "keyed", "harness": {}, "env": {}, "volatile": []}


def attempt(run: Any, documented: type[Exception]) -> tuple[Any, str | None]:
    """``run()``'s result, or the message of the documented error it raised; any other
    exception fails the test."""
    try:
        return run(), None
    except documented as exc:
        return None, str(exc)


def cassette_bytes(*lines: Any) -> bytes:
    # The standard library writes what orjson would refuse to (ints past 64 bits, NaN).
    return "".join(json.dumps(obj) + "\n" for obj in (HEADER, *lines)).encode()


def call(**fields: Any) -> dict[str, Any]:
    line: dict[str, Any] = {"seq": 1, "kind": "tool", "name": "t", "key": "tool:0", "args": {}}
    line.update(fields)
    return line


HTTP = {"kind": "http", "name": "GET /x", "key": "http:0"}


@pytest.mark.parametrize(
    ("line", "says"),
    [
        (call(**HTTP, out={"headers": {}, "body": {}}), "an HTTP answer needs an integer 'status'"),
        (call(**HTTP, out={"status": 200, "body": {}}), "needs 'headers'"),
        (call(**HTTP, out={"status": 200, "headers": {}}), "needs a 'body'"),
        (call(**HTTP, out={"status": 200, "headers": {"a": 1}, "body": {}}), "needs 'headers'"),
        (call(**HTTP, out="not an answer"), "an HTTP answer is an object"),
        (call(out=1, fault="quota"), "fault must be an object"),
        (call(out=1, fault={"kind": "quota"}), "fault must be an object"),
        (call(stream={"status": 200, "headers": {}}), "stream needs 'events'"),
        (call(stream={"status": 200, "headers": {}, "events": [1]}), "events[0] is not an object"),
        (call(stream={"headers": {}, "events": []}), "integer 'status'"),
        (call(out=1, schema=2), "schema must be a string"),
        (call(kind="shell", key="shell:0", out=1), "kind 'shell' is not one of"),
        ({"begin": 0, "kind": "tool", "name": "t", "key": "tool:0"}, "a begin line needs"),
        ({"begin": 1, "kind": "tool", "key": "tool:0"}, "a begin line needs"),
        ({"abort": "x", "key": "tool:0"}, "an abort line needs"),
    ],
)
def test_the_reader_refuses_what_replay_would_trip_over(
    tmp_path: Path, line: dict[str, Any], says: str
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(cassette_bytes(call(out=1), line))
    with pytest.raises(fd.CassetteCorrupt) as info:
        fd.load(path)
    assert info.value.line == 3
    assert f"{path}:3:" in str(info.value)
    assert says in str(info.value)
    # show says the same in one line, exit 2, nothing else printed and the file untouched.
    before = path.read_bytes()
    assert cli.main(["show", str(path)]) == 2
    assert path.read_bytes() == before


def test_show_of_a_bad_line_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(cassette_bytes(call(out=1, fault="quota")))
    assert cli.main(["show", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith(f"faultdeck: error: {path}:2: seq 1: fault must be an object")


@pytest.mark.parametrize("kind", ["shell", "", "Tool", "http2"])
def test_a_kind_a_cassette_cannot_hold_is_refused_when_called(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "kinds.jsonl"
    with fd.Deck(path, mode="record") as deck:
        deck.call("tool", "ok", {}, lambda: 1)
        with pytest.raises(fd.ArgumentError, match="kind"):
            deck.call(kind, "x", {}, lambda: 1)
    recording = fd.load(path)  # what was written reads back
    assert [e.kind for e in recording.entries] == ["tool"]


def test_an_http_call_must_answer_as_http(tmp_path: Path) -> None:
    path = tmp_path / "http.jsonl"
    with fd.Deck(path, mode="record") as deck:
        with pytest.raises(fd.ArgumentError, match=r"kind 'http' holds what fd\.http\.Transport"):
            deck.call("http", "GET /x", {}, lambda: {"hits": 2})
        deck.call("http", "GET /y", {}, lambda: {"status": 200, "headers": {}, "body": "ok"})
    assert [e.name for e in fd.load(path).entries] == ["GET /y"]


# -- fault plans ------------------------------------------------------------------------------

BIG = "1" * 4000


@pytest.mark.parametrize(
    ("name", "text", "field"),
    [
        ("p.toml", f'[[faults]]\nfault = "timeout"\nat = {BIG}\n', "faults[0].at"),
        ("p.toml", f'[[faults]]\nfault = "latency"\nms = {BIG}\n', "faults[0].ms"),
        ("p.toml", f'[[faults]]\nfault = "quota"\nretry_after = {BIG}\n', "faults[0].retry_after"),
        ("p.toml", f'seed = {BIG}\n[[faults]]\nfault = "timeout"\n', "seed"),
        (
            "p.toml",
            '[[faults]]\nfault = "timeout"\nrandom = {p = 0.5, seed = 99999999999999999999}\n',
            "random.seed",
        ),
        ("p.toml", '[[faults]]\nfault = "latency"\nms = 1e300\n', "faults[0].ms"),
        ("p.json", '{"faults": [{"fault": "timeout", "every": 100000000000000000000}]}', "every"),
        ("p.json", '{"faults": [{"fault": "latency", "ms": 1e30}]}', "faults[0].ms"),
        ("p.json", '{"faults": [{"fault": "timeout", "at": ' + BIG + "}]}", "p.json"),
        ("p.toml", "x = " + "[" * 3000 + "]" * 3000 + "\n", "nested too deeply"),
        ("p.json", '{"faults": ' + "[" * 3000 + "]" * 3000 + "}", "p.json"),
        ("p.toml", f'[[faults]]\nfault = "timeout"\nat = 1{"0" * 5000}\n', "p.toml"),
    ],
)
def test_plans_with_numbers_or_nesting_no_plan_needs_are_config_errors(
    tmp_path: Path, name: str, text: str, field: str
) -> None:
    path = tmp_path / name
    path.write_text(text, "utf-8")
    with pytest.raises(fd.ConfigError) as info:
        fd.FaultPlan.load(path)
    message = str(info.value)
    assert message.startswith(str(path))
    assert field in message
    assert len(message) < 400  # one readable line, not a 4,000-digit echo


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=12,
)
FAULTISH = st.fixed_dictionaries(
    {"fault": st.sampled_from(["quota", "timeout", "latency", "bad_tool_call", "nope"])},
    optional={
        "at": JSON,
        "ms": JSON,
        "retry_after": JSON,
        "how": JSON,
        "on": JSON,
        "random": JSON,
        "times": JSON,
        "every": JSON,
    },
)
PLANISH = st.one_of(
    JSON,
    st.fixed_dictionaries(
        {"faults": st.lists(FAULTISH | JSON, max_size=3)}, optional={"seed": JSON}
    ),
    st.fixed_dictionaries({"sequence": st.lists(st.none() | FAULTISH, max_size=3)}),
)


@settings(max_examples=300, deadline=None)
@given(data=PLANISH)
def test_a_plan_is_built_or_refused_with_a_config_error(data: Any) -> None:
    plan, error = attempt(lambda: fd.FaultPlan.from_dict(data, source="fuzz.json"), fd.ConfigError)
    if error is not None:
        assert error.startswith("fuzz.json")
    else:
        assert fd.FaultPlan.from_dict(plan.to_json(), source="again") == plan


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(raw=st.binary(max_size=200) | st.text(max_size=200).map(str.encode))
def test_any_plan_file_is_loaded_or_refused_naming_it(tmp_path: Path, raw: bytes) -> None:
    for suffix in (".json", ".toml"):
        path = tmp_path / f"plan{suffix}"
        path.write_bytes(raw)
        _, error = attempt(lambda path=path: fd.FaultPlan.load(path), fd.ConfigError)
        assert error is None or error.startswith(str(path))


# -- the reader, show and diff under arbitrary lines -----------------------------------------

LINE = st.one_of(
    JSON,
    st.builds(
        lambda kind, fields: {
            "seq": 1,
            "kind": kind,
            "name": "n",
            "key": f"{kind}:0",
            "args": {},
            **fields,
        },
        st.sampled_from(["model", "tool", "env", "http", "bad"]),
        st.dictionaries(
            st.sampled_from(["out", "error", "stream", "ms", "fault", "schema", "step", "seq"]),
            JSON,
            max_size=3,
        ),
    ),
    st.fixed_dictionaries({"begin": JSON, "kind": JSON, "name": JSON, "key": JSON}),
    st.fixed_dictionaries({"end": JSON}),
)


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(lines=st.lists(LINE, max_size=6), cut=st.integers(min_value=0, max_value=40))
def test_the_reader_and_the_commands_give_only_documented_errors(
    tmp_path: Path, lines: list[Any], cut: int
) -> None:
    path = tmp_path / "fuzz.jsonl"
    data = cassette_bytes(*lines)
    path.write_bytes(data[: len(data) - cut] if cut % 3 == 0 else data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fd.CassetteWarning)  # a torn last line warns
        recording, error = attempt(lambda: fd.load(path), fd.CassetteError)
        if error is not None:
            assert error.startswith(f"{path}:")  # file:line, always a line here
            assert cli.main(["show", str(path)]) == 2
            return
        assert cli.main(["show", str(path)]) == 0
        assert cli.main(["show", str(path), "--format", "json"]) == 0
        _diffs(tmp_path, path)
    assert recording.path == str(path)


def _diffs(tmp_path: Path, path: Path) -> None:
    assert cli.main(["diff", str(path), str(path)]) == 0
    other = tmp_path / "other.jsonl"
    other.write_bytes(cassette_bytes(call(out=1)))
    html = str(tmp_path / "d.html")
    assert cli.main(
        ["diff", str(path), str(other), "--responses", "--format", "html", "-o", html]
    ) in (0, 1)
    assert cli.main(["diff", str(other), str(path), "--format", "json"]) in (0, 1)


def test_json_of_a_bad_line_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps(HEADER) + "\n{not json\n", "utf-8")
    with pytest.raises(fd.CassetteCorrupt, match=r"c.jsonl:2: not JSON"):
        fd.load(path)


def test_a_model_line_that_is_not_an_http_answer_is_named_when_replayed(tmp_path: Path) -> None:
    import httpx

    from faultdeck.http import Transport

    path = tmp_path / "model.jsonl"
    with (
        fd.Deck(path, mode="record") as deck,
        httpx.Client(
            transport=Transport(
                deck, transport=httpx.MockTransport(lambda r: httpx.Response(200, json={"ok": 1}))
            )
        ) as client,
    ):
        client.post("http://api.test/v1/chat/completions", json={"model": "m"})
    lines = path.read_text("utf-8").splitlines()
    call_line = json.loads(lines[1])
    del call_line["out"]["body"]  # a hand edit: a model line may hold anything, replay may not
    lines[1] = json.dumps(call_line)
    path.write_text("\n".join(lines) + "\n", "utf-8")
    with fd.Deck(path, mode="replay") as deck, httpx.Client(transport=Transport(deck)) as client:
        with pytest.raises(
            fd.CassetteCorrupt, match=r"model\.jsonl:2: seq 1: an HTTP answer needs a 'body'"
        ):
            client.post("http://api.test/v1/chat/completions", json={"model": "m"})
