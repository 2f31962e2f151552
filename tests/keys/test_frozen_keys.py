"""Keys do not move: a cassette recorded by an earlier faultdeck must keep replaying.

A table of keys, frozen here, covers each rule once: ids renamed (and ids an answer handed
out before), date-times and epochs, a path under the project root, stripped and volatile
fields, credentials in args and in the name, a project rule, a schema version, text that
only looks like a placeholder. Each call is recorded through a real deck and must be keyed
as the table says, then replay from that cassette; and a cassette whose lines list no ids,
as earlier versions wrote them, replays with the ids its answers hand out.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest

import faultdeck as fd
from tests.support.calls import never, returns

ROOT = "/srv/app"


def _ruled(args: Any) -> Any:
    # A project rule whose output holds a secret: what a rule adds is redacted and keyed too.
    return {"ruled": args, "note": "Bearer " + "tok" + "en." + "Zq7" * 12}


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
    """A call and its key (``kind:hex``); ``learned``: an earlier answer whose ids it may
    send back."""

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


def deck(path: Path, mode: fd.config.Mode) -> fd.Deck:
    """A deck on ``path`` with a project's normalization (a root, volatile fields, a rule),
    its own settings (nothing read from this repository) and a clock that never waits. Its
    project root does not exist, so no git runs to find a commit for the header."""
    return fd.Deck(
        path,
        mode=mode,
        normalize=fd.NormalizeConfig(
            root=ROOT, volatile=frozenset({"nonce", "trace"}), rules={"tool:ruled": _ruled}
        ),
        redactor=fd.Redactor(),
        settings=fd.config.Settings(root=str(path.parent / "no-project")),
        environ={},
        clock=fd.VirtualClock(),
    )


def calls(vector: Vector) -> list[tuple[str, str, Any, Any, str]]:
    """What the program asks, and what the world answers: the earlier answer first."""
    kind = vector.key.partition(":")[0]
    asked = [(kind, vector.name, vector.args, {"ok": True}, vector.schema)]
    if vector.learned is not None:
        asked.insert(0, ("tool", "earlier", {}, vector.learned, "v1"))
    return asked


@pytest.mark.parametrize(
    "vector", VECTORS, ids=[f"{i}-{v.name[:12]}" for i, v in enumerate(VECTORS)]
)
def test_a_call_is_keyed_as_it_always_was_and_replays(tmp_path: Path, vector: Vector) -> None:
    path = tmp_path / "keys.jsonl"
    with deck(path, "record") as recorder:
        for kind, name, args, out, schema in calls(vector):
            recorder.call(kind, name, args, returns(out), schema_version=schema)
    assert recorder.calls[-1].key == vector.key
    assert fd.load(path).entries[-1].key == vector.key
    with deck(path, "replay") as replayer:
        for kind, name, args, _, schema in calls(vector):
            replayer.call(kind, name, args, never, schema_version=schema)
    assert replayer.calls[-1].key == vector.key
    assert replayer.report().ok


def test_a_cassette_whose_lines_list_no_ids_replays_the_ids_sent_back(tmp_path: Path) -> None:
    program = [
        ("model", "chat", {"q": "plan"}, {"id": "chatcmpl-8Zq1xY2wV3uT", "tool": CALL_ID}),
        ("tool", "weather", {"tool_call_id": CALL_ID}, {"sky": "clear"}),
        ("model", "chat", {"previous": "chatcmpl-8Zq1xY2wV3uT"}, {"text": "done"}),
    ]
    path = tmp_path / "older.jsonl"
    with deck(path, "record") as recorder:
        for kind, name, args, out in program:
            recorder.call(kind, name, args, returns(out))
    lines = [orjson.loads(line) for line in path.read_bytes().splitlines()]
    assert lines[1]["ids"] == ["chatcmpl-8Zq1xY2wV3uT", CALL_ID]
    for line in lines:
        line.pop("ids", None)  # as a cassette recorded before lines listed them
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    with deck(path, "replay") as replayer:
        got = [replayer.call(kind, name, args, never) for kind, name, args, _ in program]
    assert got == [out for *_, out in program]
    assert [c.key for c in replayer.calls] == [c.key for c in recorder.calls]
    assert replayer.report().ok
