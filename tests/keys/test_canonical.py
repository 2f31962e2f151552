"""Key test vectors: if the key scheme drifts, these fail."""

from __future__ import annotations

import hashlib
import json

import pytest

from faultdeck._keys.canonical import canonical, make_key

# Fixed input -> fixed key, frozen here so the scheme can never drift silently.
VECTORS = [
    ("tool", "search_docs", {"q": "retry budget", "top_k": 5}, "v1", "tool:d1bdf98bf4be2ced"),
    (
        "model",
        "chat",
        {"messages": [{"role": "user", "content": "héllo"}]},
        "v1",
        "model:9926982163e6e2fb",
    ),
    ("tool", "read_file", {"path": "docs/retry-budget.md"}, "v2", "tool:0a87b4917b947e54"),
    ("env", "HOME", {}, "v1", "env:09ec06b7618b9158"),
]


def reference_key(kind: str, name: str, args: object, schema: str) -> str:
    """The scheme of docs/format.md, written with the standard library only."""
    payload = json.dumps(
        {"v": schema, "kind": kind, "name": name, "args": args},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    ).encode("utf-8")
    return f"{kind}:{hashlib.sha256(payload).hexdigest()[:16]}"


@pytest.mark.parametrize(("kind", "name", "args", "schema", "expected"), VECTORS)
def test_key_vectors(kind: str, name: str, args: object, schema: str, expected: str) -> None:
    assert make_key(kind, name, args, schema) == expected
    assert reference_key(kind, name, args, schema) == expected


def test_canonical_json_is_sorted_compact_utf8() -> None:
    assert canonical({"b": 1, "a": {"z": "é", "y": [1, 2.5]}}) == (
        '{"a":{"y":[1,2.5],"z":"é"},"b":1}'.encode()
    )


def test_schema_version_changes_the_key() -> None:
    args = {"path": "a.md"}
    assert make_key("tool", "read", args, "v1") != make_key("tool", "read", args, "v2")


def test_key_ignores_dict_order() -> None:
    assert make_key("tool", "t", {"a": 1, "b": 2}) == make_key("tool", "t", {"b": 2, "a": 1})
