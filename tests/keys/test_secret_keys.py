"""A value that comes back must replay: a secret enters the key as its mask.

A tool hands the loop a credential-shaped value; the loop sends it back on the next call.
Recording keys that call with the value's mask (what the cassette stores), and so does
replay, where the loop holds the mask itself.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import faultdeck as fd
from tests.support.calls import never, returns
from tests.support.plants import ALNUM, URLSAFE, all_plants, rand


def test_a_session_token_sent_back_replays(tmp_path: Path) -> None:
    path = tmp_path / "login.jsonl"
    token = "ghp_" + rand("login", ALNUM, 36)
    with fd.Deck(path, mode="record") as deck:
        login = deck.call("tool", "login", {"user": "me"}, lambda: {"session": token})
        assert login == {"session": token}  # the caller sees the live value
        repos = deck.call("tool", "list_repos", {"session": login["session"]}, lambda: ["r1"])
    assert token.encode() not in path.read_bytes()
    with fd.Deck(path, mode="replay") as deck:
        login = deck.call("tool", "login", {"user": "me"}, never)
        assert login["session"] == fd.Redactor().mask(token)
        assert deck.call("tool", "list_repos", {"session": login["session"]}, never) == repos
        assert deck.report().ok


def test_a_page_token_fed_back_replays_and_stays_readable(tmp_path: Path) -> None:
    path = tmp_path / "pages.jsonl"
    pages = [rand(f"page-{i}", URLSAFE, 64) for i in range(3)]

    def list_items(deck: fd.Deck, live: bool) -> list[int]:
        items: list[int] = []
        token: str | None = None
        for i in range(3):
            answer = {"items": [i], "next_page_token": pages[i] if i < 2 else None}
            page = deck.call(
                "tool",
                "list_items",
                {"page_token": token, "page_size": 1},
                returns(answer) if live else never,
            )
            items += page["items"]
            token = page["next_page_token"]
        return items

    with fd.Deck(path, mode="record") as deck:
        assert list_items(deck, live=True) == [0, 1, 2]
    recording = fd.load(path)
    assert recording.entries[0].value["next_page_token"] == pages[0]  # readable, not masked
    assert recording.entries[1].args["page_token"] == pages[0]
    with fd.Deck(path, mode="replay") as deck:
        assert list_items(deck, live=False) == [0, 1, 2]
        assert deck.report().ok


@pytest.mark.parametrize("plant", all_plants(), ids=lambda p: p.pattern)
def test_every_secret_shape_round_trips_through_a_tool(tmp_path: Path, plant: Any) -> None:
    path = tmp_path / "trip.jsonl"
    with fd.Deck(path, mode="record") as deck:
        got = deck.call("tool", "fetch", {"n": 1}, lambda: {"value": plant.text})
        deck.call("tool", "use", {"value": got["value"], "again": [got["value"]]}, lambda: "ok")
    data = path.read_bytes()
    assert plant.secret.encode() not in data
    assert json.dumps(plant.secret)[1:-1].encode() not in data
    with fd.Deck(path, mode="replay") as deck:
        got = deck.call("tool", "fetch", {"n": 1}, never)
        assert plant.secret not in got["value"]
        assert deck.call("tool", "use", {"value": got["value"], "again": [got["value"]]}, never)
        assert deck.report().ok


def test_a_mask_that_went_through_json_text_keys_as_the_mask(tmp_path: Path) -> None:
    # The loop puts the tool's output into the next prompt with json.dumps (ASCII escapes):
    # recorded, the secret is masked in the text; replayed, the mask arrives escaped.
    path = tmp_path / "escaped.jsonl"
    token = "sk-" + "proj-" + rand("escaped", URLSAFE, 48)

    def run(deck: fd.Deck, live: bool) -> Any:
        out = deck.call("tool", "get_key", {}, (lambda: {"key": token}) if live else never)
        prompt = {"role": "tool", "content": json.dumps(out)}
        return deck.call(
            "model", "chat", {"messages": [prompt]}, (lambda: {"text": "done"}) if live else never
        )

    with fd.Deck(path, mode="record") as deck:
        assert run(deck, live=True) == {"text": "done"}
    with fd.Deck(path, mode="replay") as deck:
        assert run(deck, live=False) == {"text": "done"}
        assert deck.report().ok


def test_two_different_secrets_give_different_keys(tmp_path: Path) -> None:
    path = tmp_path / "two.jsonl"
    first, second = ("ghp_" + rand(seed, ALNUM, 36) for seed in ("one", "two"))
    with fd.Deck(path, mode="record") as deck:
        deck.call("tool", "auth", {"token": first}, lambda: 1)
        deck.call("tool", "auth", {"token": second}, lambda: 2)
    one, two = fd.load(path).entries
    assert one.key != two.key
    assert one.args != two.args
    with fd.Deck(path, mode="replay") as deck:
        assert deck.call("tool", "auth", {"token": second}, never) == 2
        assert deck.call("tool", "auth", {"token": first}, never) == 1


def test_a_changed_secret_is_named_in_the_miss_never_called_equal(tmp_path: Path) -> None:
    path = tmp_path / "changed.jsonl"
    first, second = ("ghp_" + rand(seed, ALNUM, 36) for seed in ("old", "new"))
    with fd.Deck(path, mode="record") as deck:
        deck.call("tool", "auth", {"token": first, "scope": "repo"}, lambda: 1)
    with fd.Deck(path, mode="replay") as deck, pytest.raises(fd.ReplayMiss) as info:
        deck.call("tool", "auth", {"token": second, "scope": "repo"}, never)
    message = str(info.value)
    assert "args are equal" not in message
    mask_first, mask_second = (fd.Redactor().mask(s) for s in (first, second))
    assert f"args.token: recorded {json.dumps(mask_first, ensure_ascii=False)}" in message
    assert mask_second in message
    assert info.value.diff == (("args.token", mask_first, mask_second),)
    assert first not in message
    assert second not in message
