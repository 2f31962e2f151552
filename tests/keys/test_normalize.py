"""Normalization: what changes a key and what never does."""

from __future__ import annotations

import functools
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

import faultdeck as fd
from faultdeck._keys.ids import IdMap
from faultdeck._keys.normalize import NormalizeConfig, Normalizer
from tests.support.calls import never, returns


def norm(args: Any, config: NormalizeConfig | None = None, ids: IdMap | None = None) -> Any:
    return Normalizer(config).args("tool", "t", args, ids or IdMap())


def test_transport_fields_are_stripped_at_any_depth() -> None:
    args = {
        "headers": {"Authorization": "Bearer x", "Idempotency-Key": "k1", "Accept": "json"},
        "request_id": "r-1",
        "q": "retry",
    }
    assert norm(args) == {"headers": {"Accept": "json"}, "q": "retry"}


def test_semantic_arguments_are_never_touched() -> None:
    args = {
        "q": "retry budget since 2024-05-01",
        "since": "2024-05-01",
        "top_k": 5,
        "limit": 1732873000,
        "filters": {"lang": "en", "score": 0.5, "tags": ["a", "b"]},
        "name": "alice",
        "user_id": "alice",
    }
    assert norm(args) == args


def test_volatile_ids_are_renamed_in_order_of_first_appearance() -> None:
    first, second = str(uuid.uuid4()), str(uuid.uuid4())
    ids = IdMap()
    args = {"run": first, "items": [{"id": "call_8sd7f6g5h4j3"}, {"ref": first}], "other": second}
    assert norm(args, ids=ids) == {
        "run": "«id:1»",
        "items": [{"id": "«id:2»"}, {"ref": "«id:1»"}],
        "other": "«id:3»",
    }


def test_timestamps_and_declared_volatile_fields_become_same_type_placeholders() -> None:
    config = NormalizeConfig(volatile=frozenset({"trace", "nonce"}))
    args = {
        "at": "2026-11-29T10:25:48.123Z",
        "created_at": 1732873000,
        "timestamp": 1732873000.25,
        "trace": "abc",
        "nonce": 17,
    }
    assert norm(args, config) == {
        "at": "«ts»",
        "created_at": 0,
        "timestamp": 0.0,
        "trace": "«volatile»",
        "nonce": 0,
    }


def test_absolute_paths_under_the_root_become_relative(tmp_path: Path) -> None:
    config = NormalizeConfig(root=str(tmp_path))
    args = {"path": f"{tmp_path}/docs/a.md", "other": "/etc/hosts"}
    assert norm(args, config) == {"path": "docs/a.md", "other": "/etc/hosts"}


def test_each_rule_can_be_switched_off(tmp_path: Path) -> None:
    raw = {"id": "call_8sd7f6g5h4j3", "at": "2026-11-29T10:25:48Z", "p": f"{tmp_path}/x"}
    off = NormalizeConfig(ids=False, timestamps=False, root=None, strip_fields=frozenset())
    assert norm(dict(raw, authorization="x"), off) == dict(raw, authorization="x")


def test_user_rules_run_last_by_name_or_kind_and_name() -> None:
    def drop_page(args: Any) -> Any:
        return {k: v for k, v in args.items() if k != "page_token"}

    config = NormalizeConfig(rules={"tool:t": drop_page})
    assert norm({"q": 1, "page_token": "zz"}, config) == {"q": 1}
    assert (
        Normalizer(replace(config, rules={"t": drop_page})).args(
            "model", "t", {"page_token": 1}, IdMap()
        )
        == {}
    )


def test_provider_times_become_placeholders_by_seq_and_content_stays() -> None:
    normalizer = Normalizer()
    content = {
        "datetime": "2026-11-29T10:25:48+09:00",
        "time": 1732873000,
        "updated_at": "2026-11-29T10:25:48Z",
        "date": "2026-11-29",
    }
    out = {
        "created": 1732873000,
        "created_at": "2026-11-29T10:25:48.123456+00:00",
        "choices": [{"text": "at 2026-11-29 noon", "tool_result": content}],
        "usage": {"total_tokens": 1732873000},
    }
    scrubbed = normalizer.scrub_output(out, seq=3)
    assert scrubbed == {
        "created": 946684803,
        "created_at": "2000-01-01T00:00:03.000000+00:00",
        "choices": [{"text": "at 2026-11-29 noon", "tool_result": content}],
        "usage": {"total_tokens": 1732873000},
    }
    assert scrubbed["choices"] is out["choices"]  # content is not even copied
    untouched = {"text": "no times here", "at": "2026-11-29T10:25:48Z", "n": [1, 2]}
    assert normalizer.scrub_output(untouched, seq=1) is untouched


def test_the_volatile_names_are_the_provider_times_and_the_declared_ones() -> None:
    declared = frozenset({"trace_id"})
    assert Normalizer(NormalizeConfig(volatile=declared)).output_volatile == {
        "created",
        "created_at",
        "completed_at",
        "createTime",
        "trace_id",
    }
    off = Normalizer(NormalizeConfig(volatile=declared, output_times=False))
    assert off.output_volatile == declared
    out = {"created": 1732873000, "trace_id": "t-1", "at": "2026-11-29T10:25:48Z"}
    assert off.scrub_output(out, seq=2) == {**out, "trace_id": "«volatile»"}


class RandomIdProvider:
    """A fake model whose every response carries fresh random ids and a fresh timestamp."""

    def __init__(self) -> None:
        self.calls = 0

    def chat(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        self.calls += 1
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex}",
            "created": 1732873000 + self.calls,
            "tool_call": {"id": f"call_{uuid.uuid4().hex[:24]}", "name": "read"},
        }


def run_agent(deck: fd.Deck, provider: RandomIdProvider) -> list[str]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    keys = []
    for _ in range(3):
        reply: dict[str, Any] = deck.call(
            "model", "chat", {"messages": messages}, functools.partial(provider.chat, messages)
        )
        call_id = reply["tool_call"]["id"]
        # The ids flow back into the next request, as tool-call ids do.
        messages = [
            *messages,
            {"role": "assistant", "id": reply["id"], "tool_call_id": call_id},
            {"role": "tool", "tool_call_id": call_id, "content": "ok"},
        ]
        keys.append(deck.calls[-1].key)
    return keys


def test_random_provider_ids_give_the_same_keys_across_recordings(tmp_path: Path) -> None:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    with fd.Deck(a, mode="record") as deck:
        keys_a = run_agent(deck, RandomIdProvider())
    with fd.Deck(b, mode="record") as deck:
        keys_b = run_agent(deck, RandomIdProvider())
    assert keys_a == keys_b
    assert len(set(keys_a)) == 3
    ea, eb = fd.load(a).entries, fd.load(b).entries
    assert [e.args for e in ea] == [e.args for e in eb]
    assert "«id:1»" in str(ea[1].args)
    # Stored outputs keep the ids the caller saw.
    assert str(ea[0].value["id"]).startswith("chatcmpl-")
    assert ea[0].value["id"] != eb[0].value["id"]


def test_replay_computes_the_recorded_keys(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    with fd.Deck(path, mode="record") as deck:
        recorded = run_agent(deck, RandomIdProvider())
    with fd.Deck(path, mode="replay") as deck:
        replayed = run_agent(deck, RandomIdProvider())
    assert replayed == recorded
    assert deck.report().ok


def test_append_after_a_replayed_prefix_keeps_ids_consistent(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    with fd.Deck(path, mode="record") as deck:
        run_agent(deck, RandomIdProvider())
    provider = RandomIdProvider()
    with fd.Deck(path, mode="append") as deck:
        run_agent(deck, provider)
    assert provider.calls == 0


@pytest.mark.parametrize(
    "value",
    [{1: "int key"}, {"x": {1, 2}}, {"x": b"bytes"}, {"x": 2**70}, {"x": float("inf")}],
)
def test_non_json_values_raise_argument_error(value: Any) -> None:
    with pytest.raises(fd.ArgumentError, match=r"^args"):
        norm(value)


def test_ids_learned_late_keep_the_order_the_outputs_came_in(tmp_path: Path) -> None:
    # Outputs' ids are learned only when a later call could send one back; the numbering
    # must still follow the outputs' order, not the order the ids are first needed.
    path = tmp_path / "ids.jsonl"
    outputs = [{"id": "call_aaaaaaaa1"}, {"id": "call_bbbbbbbb2"}, {"id": "call_cccccccc3"}]
    with fd.Deck(path, mode="record") as deck:
        for i, out in enumerate(outputs):
            deck.call("tool", "make", {"n": i}, returns(out))
        deck.call("tool", "use", {"ref": "call_cccccccc3"}, lambda: 1)
        deck.call("tool", "use", {"ref": "call_aaaaaaaa1"}, lambda: 1)
    args = [e.args for e in fd.load(path).entries[3:]]
    assert args == [{"ref": "«id:3»"}, {"ref": "«id:1»"}]
    # Strict: keyed matching would let the two `use` calls answer each other.
    with fd.Deck(path, mode="replay", match="strict") as deck:
        for i in range(3):
            deck.call("tool", "make", {"n": i}, never)
        deck.call("tool", "use", {"ref": "call_cccccccc3"}, never)
        deck.call("tool", "use", {"ref": "call_aaaaaaaa1"}, never)
    assert deck.report().ok
