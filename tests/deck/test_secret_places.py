"""Every place a value travels in-process keeps no secret: names, step labels, meta, error
messages, public environment values, the report and the replay-miss message."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest

import faultdeck as fd
from tests.support.calls import never
from tests.support.plants import Plant, all_plants


def forbidden(plant: Plant) -> list[bytes]:
    return [plant.secret.encode(), json.dumps(plant.secret)[1:-1].encode()]


@pytest.mark.parametrize("plant", all_plants(), ids=lambda p: p.pattern)
def test_no_secret_in_any_place_of_a_call(tmp_path: Path, plant: Plant) -> None:
    path = tmp_path / "places.jsonl"
    name = f"fetch {plant.text}"
    step = f"step holding {plant.text}"

    def fail() -> Any:
        raise RuntimeError(f"upstream refused {plant.text}")

    environ = {"DATABASE_NOTE": plant.text}
    with fd.Deck(path, mode="record", environ=environ, public_env=("DATABASE_NOTE",)) as deck:
        assert deck.call("tool", name, {"q": 1}, lambda: 1, step=step, meta={"m": plant.text})
        with pytest.raises(RuntimeError):
            deck.call("tool", "upstream", {"q": 2}, fail)
        assert deck.env("DATABASE_NOTE") == plant.text  # the program sees the live value
        report = deck.report()
    data = path.read_bytes()
    dumped_report = orjson.dumps(report.to_dict())
    text_report = str(report).encode()
    for bad in forbidden(plant):
        assert bad not in data, f"{plant.pattern} reached the cassette"
        assert bad not in dumped_report, f"{plant.pattern} reached the report"
        assert bad not in text_report
    entries = fd.load(path).entries
    assert entries[0].name != name
    assert entries[0].step != step

    with fd.Deck(path, mode="replay", environ=environ, public_env=("DATABASE_NOTE",)) as deck:
        assert deck.call("tool", name, {"q": 1}, never, step=step) == 1
        with pytest.raises(RuntimeError) as info:
            deck.call("tool", "upstream", {"q": 2}, never)
        assert plant.secret not in str(info.value)
        deck.env("DATABASE_NOTE")
        with pytest.raises(fd.ReplayMiss) as miss:
            deck.call("tool", name, {"q": plant.text}, never)
        report = deck.report()
    assert plant.secret not in str(miss.value)
    assert report.misses
    assert plant.secret.encode() not in orjson.dumps(report.to_dict())


def test_a_random_number_under_a_secret_name_is_masked_in_args_and_answers(
    tmp_path: Path,
) -> None:
    # A numeric password or account secret is as much a secret as a string one: `faultdeck scan`
    # flags it, so the cassette must not hold it.
    secret = 928374650192837465
    path = tmp_path / "numbers.jsonl"
    args = {"user": "ana", "password": secret, "max_tokens": 512}
    answer = {"account": {"secret": secret, "id": 7}, "count": 3}
    with fd.Deck(path, mode="record") as deck:
        assert deck.call("tool", "login", args, lambda: answer) == answer
    data = path.read_bytes()
    assert str(secret).encode() not in data
    assert b'"max_tokens":512' in data  # plain numbers stay
    assert b'"count":3' in data
    entry = fd.load(path).entries[0]
    assert entry.args["password"].startswith("«redacted:")
    assert entry.value["account"]["secret"].startswith("«redacted:")
    assert fd.Redactor().findings(orjson.loads(data.splitlines()[1])) == []
    with fd.Deck(path, mode="replay") as deck:
        assert deck.call("tool", "login", args, never)["count"] == 3
