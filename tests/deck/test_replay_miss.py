"""A replay miss says which call diverged, after how many agreeing calls, and what changed."""

from __future__ import annotations

from pathlib import Path

import pytest

import faultdeck as fd
from faultdeck._keys.canonical import make_key
from tests.support.calls import never


@pytest.fixture
def cassette(tmp_path: Path) -> Path:
    path = tmp_path / "base.jsonl"
    with fd.Deck(path, mode="record") as deck:
        deck.call("tool", "plan", {"goal": "fix retry"}, lambda: {"steps": 2})
        for i in range(3):
            deck.call("tool", "read_file", {"path": f"docs/{i}.md"}, lambda: {"bytes": 1})
        deck.call(
            "tool",
            "search_docs",
            {"q": "retry budget", "top_k": 5, "filters": {"lang": "en"}},
            lambda: {"hits": []},
        )
    return path


def test_every_field_of_a_miss(cassette: Path) -> None:
    with fd.Deck(cassette, mode="replay") as deck:
        deck.call("tool", "plan", {"goal": "fix retry"}, never)
        for i in range(3):
            deck.call("tool", "read_file", {"path": f"docs/{i}.md"}, never)
        with pytest.raises(fd.ReplayMiss) as info:
            deck.call(
                "tool",
                "search_docs",
                {"q": "retry budget", "top_k": 10, "filters": {"lang": "en", "year": 2024}},
                never,
            )
    miss = info.value
    assert miss.seq == 5
    assert miss.kind == "tool"
    assert miss.name == "search_docs"
    assert miss.key == make_key(
        "tool",
        "search_docs",
        {"q": "retry budget", "top_k": 10, "filters": {"lang": "en", "year": 2024}},
    )
    assert miss.agreed == 4
    assert miss.nearest is not None
    assert miss.nearest["seq"] == 5
    assert miss.nearest["line"] == 6
    assert miss.diff == (
        ("args.top_k", 5, 10),
        ("args.filters.year", "<absent>", 2024),
    )
    message = str(miss)
    assert "replay miss at seq 5: tool search_docs" in message
    assert miss.key in message
    assert "4 calls agreed with the recording before it" in message
    assert f"{cassette}:6" in message
    assert "args.top_k: recorded 5, now 10" in message
    assert "args.filters.year: recorded <absent>, now 2024" in message
    assert 'mode="record"' in message
    assert 'mode="append"' in message


def test_a_miss_on_an_unknown_name_lists_what_was_recorded(cassette: Path) -> None:
    with fd.Deck(cassette, mode="replay") as deck, pytest.raises(fd.ReplayMiss) as info:
        deck.call("tool", "write_file", {"path": "x"}, never)
    assert info.value.nearest is None
    assert info.value.agreed == 0
    assert "nothing named write_file was recorded" in str(info.value)
    assert "plan, read_file, search_docs" in str(info.value)


def test_nearest_prefers_the_unused_call_with_fewest_changes(cassette: Path) -> None:
    with fd.Deck(cassette, mode="replay") as deck:
        deck.call("tool", "read_file", {"path": "docs/0.md"}, never)
        with pytest.raises(fd.ReplayMiss) as info:
            deck.call("tool", "read_file", {"path": "docs/2.mdx"}, never)
    assert info.value.nearest is not None
    assert info.value.nearest["args"] == {"path": "docs/1.md"} or info.value.nearest["args"] == {
        "path": "docs/2.md"
    }
    assert "(already used)" not in str(info.value)


def test_a_changed_schema_version_is_explained(tmp_path: Path) -> None:
    path = tmp_path / "schema.jsonl"
    with fd.Deck(path, mode="record") as deck:
        deck.call("tool", "t", {"a": 1}, lambda: 1, schema_version="v1")
    with fd.Deck(path, mode="replay") as deck, pytest.raises(fd.ReplayMiss) as info:
        deck.call("tool", "t", {"a": 1}, never, schema_version="v2")
    assert info.value.diff == ()
    assert "args are equal; the schema version differs: recorded 'v1', now 'v2'" in str(info.value)


def test_misses_are_in_the_report(cassette: Path) -> None:
    with fd.Deck(cassette, mode="replay") as deck, pytest.raises(fd.ReplayMiss):
        deck.call("tool", "plan", {"goal": "other"}, never)
    report = deck.report()
    assert [(m.seq, m.name, m.source) for m in report.misses] == [(1, "plan", "miss")]
    assert "miss: seq 1 tool plan" in str(report)


def test_a_miss_is_not_swallowed_by_except_exception(cassette: Path) -> None:
    # SDK retry loops catch Exception; a miss must get through them untouched.
    assert not issubclass(fd.ReplayMiss, Exception)

    def loop(deck: fd.Deck) -> None:
        try:
            deck.call("tool", "plan", {"goal": "other"}, never)
        except Exception:  # the point of the test: a loop that catches everything
            pytest.fail("except Exception caught a ReplayMiss")

    with fd.Deck(cassette, mode="replay") as deck, pytest.raises(fd.ReplayMiss):
        loop(deck)


def test_a_miss_in_a_long_string_shows_the_change(tmp_path: Path) -> None:
    prompt = "You are a careful agent. " * 20 + "Respect the retry budget. Do not retry."
    path = tmp_path / "long.jsonl"
    with fd.Deck(path, mode="record") as deck:
        deck.call("model", "chat", {"system": prompt}, lambda: "ok")
    edited = prompt.replace("budget. Do", "budget and do")
    with fd.Deck(path, mode="replay") as deck, pytest.raises(fd.ReplayMiss) as caught:
        deck.call("model", "chat", {"system": edited}, lambda: "ok")
    line = next(x for x in str(caught.value).splitlines() if "args.system" in x)
    assert "[-" in line
    assert "{+" in line
    assert "budget" in line
