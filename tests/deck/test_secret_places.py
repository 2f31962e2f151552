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
