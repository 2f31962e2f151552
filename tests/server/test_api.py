"""The JSON API and the pages in-process: what each route answers for real cassettes,
corrupt ones, unknown names and names that try to leave the folder."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from starlette.testclient import TestClient

import faultdeck as fd
from faultdeck.cli import cli
from faultdeck.server._config import ServerConfig
from tests.server.runs import app, record_folder, record_run


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "cassettes"
    record_folder(root)
    return root


@pytest.fixture
def client(folder: Path) -> TestClient:
    return TestClient(app(ServerConfig(cassettes=folder)))


def cli_json(*args: str) -> Any:
    done = CliRunner().invoke(cli, list(args))
    assert done.exit_code in (0, 1), done.output
    return json.loads(done.output)


def test_the_list_names_every_cassette_under_the_folder(client: TestClient, folder: Path) -> None:
    answer = client.get("/api/cassettes")
    assert answer.status_code == 200
    rows = {row["name"]: row for row in answer.json()["cassettes"]}
    assert sorted(rows) == ["base", "broken", "runs/french", "runs/quota"]
    base = rows["base"]
    assert base["calls"] == 3
    assert base["status"] == "ok"
    assert base["size"] == (folder / "base.jsonl").stat().st_size
    assert base["git_sha"] == fd.load(folder / "base.jsonl").header.harness.get("git_sha")
    assert rows["runs/quota"]["calls"] == 4
    assert rows["runs/quota"]["status"] == "failed"
    broken = rows["broken"]
    assert (broken["status"], broken["calls"]) == ("corrupt", None)
    assert "broken.jsonl:2: not JSON" in broken["error"]


def test_an_interrupted_run_is_listed_as_interrupted(tmp_path: Path) -> None:
    with fd.Deck(tmp_path / "cut.jsonl", mode="record") as deck:
        deck.call("tool", "step", {"n": 1}, lambda: {"ok": True})
        deck.abandon()
    rows = TestClient(app(ServerConfig(cassettes=tmp_path))).get("/api/cassettes").json()
    assert [(r["name"], r["status"]) for r in rows["cassettes"]] == [("cut", "interrupted")]


def test_a_symlink_to_a_file_outside_the_folder_is_neither_listed_nor_read(
    client: TestClient, tmp_path: Path, folder: Path
) -> None:
    outside = record_run(tmp_path / "elsewhere" / "secret.jsonl", "English")
    os.symlink(outside, folder / "link.jsonl")
    rows = client.get("/api/cassettes").json()["cassettes"]
    assert "link" not in [row["name"] for row in rows]
    assert client.get("/api/cassettes/link").status_code == 404


def test_a_cassette_is_the_json_of_show(client: TestClient, folder: Path) -> None:
    for name in ("base", "runs/quota"):
        answer = client.get(f"/api/cassettes/{name}")
        assert answer.status_code == 200
        shown = cli_json("show", str(folder / f"{name}.jsonl"), "--format", "json")
        assert answer.json() == dict(shown, cassette=name)
    quota = client.get("/api/cassettes/runs/quota").json()
    assert quota["calls"][3]["fault"]["fault"] == "quota"
    assert quota["status"] == "failed"


def test_a_name_may_end_in_jsonl(client: TestClient) -> None:
    assert client.get("/api/cassettes/base.jsonl").json()["cassette"] == "base.jsonl"


def test_the_diff_is_the_json_of_diff_with_names_for_paths(
    client: TestClient, folder: Path
) -> None:
    answer = client.get("/api/diff", params={"a": "base", "b": "runs/french"})
    assert answer.status_code == 200
    expected = cli_json(
        "diff", str(folder / "base.jsonl"), str(folder / "runs/french.jsonl"), "--format", "json"
    )
    assert answer.json() == dict(expected, a="base", b="runs/french")
    first = answer.json()["first"]
    assert (first["seq_a"], first["name"]) == (2, "chat")
    assert first["changes"][0]["path"] == "args.messages[0].content"


def test_an_identical_diff_is_200_too(client: TestClient) -> None:
    answer = client.get("/api/diff", params={"a": "base", "b": "base"})
    assert answer.status_code == 200
    assert answer.json()["identical"] is True
    assert answer.json()["first"] is None


def test_the_diff_takes_responses_and_ignore(client: TestClient) -> None:
    plain = client.get("/api/diff", params={"a": "base", "b": "runs/french"}).json()
    assert plain["responses"] is False
    ignoring = client.get(
        "/api/diff?a=base&b=runs/french&responses=1&ignore=content&ignore=trace"
    ).json()
    assert ignoring["responses"] is True
    assert ignoring["ignored"] == [
        "completed_at",
        "content",
        "createTime",
        "created",
        "created_at",
        "trace",
    ]
    assert ignoring["identical"] is True


@pytest.mark.parametrize(
    ("url", "status", "says"),
    [
        ("/api/diff?a=base", 400, "missing b"),
        ("/api/diff", 400, "missing a, b"),
        ("/api/diff?a=base&b=nowhere", 404, "no cassette named 'nowhere'"),
        ("/api/diff?a=broken&b=base", 422, "broken.jsonl:2: not JSON"),
        ("/api/cassettes/nowhere", 404, "no cassette named 'nowhere'"),
        ("/api/cassettes/runs/nowhere", 404, "no cassette named 'runs/nowhere'"),
        ("/api/cassettes/broken", 422, "broken.jsonl:2: not JSON"),
        ("/api/cassettes/runs", 404, "no cassette named 'runs'"),
    ],
)
def test_bad_requests_say_why_in_one_line(
    client: TestClient, url: str, status: int, says: str
) -> None:
    answer = client.get(url)
    assert answer.status_code == status
    error = answer.json()["error"]
    assert error["type"].startswith("faultdeck_")
    assert says in error["message"]
    assert "\n" not in error["message"]


@pytest.mark.parametrize(
    "name",
    [
        "%2e%2e/%2e%2e/etc/passwd",
        "..%2f..%2fetc%2fpasswd",
        "runs/%2e%2e/%2e%2e/outside",
        "%2fetc%2fpasswd",
        "runs%5c..%5coutside",
        ".hidden",
        "runs//french",
        "base%00",
        "%252e%252e/outside",
    ],
)
def test_names_that_try_to_leave_the_folder_are_refused(
    client: TestClient, tmp_path: Path, name: str
) -> None:
    record_run(tmp_path / "outside.jsonl", "English")
    for url in (f"/api/cassettes/{name}", f"/api/diff?a=base&b={name}"):
        answer = client.get(url)
        assert answer.status_code in (400, 404), url
        assert answer.json()["error"]["type"] in ("faultdeck_bad_request", "faultdeck_not_found")
        assert "outside" not in json.dumps(answer.json().get("calls", "")), url


def test_the_same_names_are_refused_by_the_pages(client: TestClient) -> None:
    for url in ("/ui/cassettes/%2e%2e/outside", "/ui/diff?a=base&b=..%2foutside"):
        answer = client.get(url)
        assert answer.status_code == 400
        assert "each part is letters" in answer.text
    missing = client.get("/ui/diff?a=base")
    assert missing.status_code == 400
    assert "missing b" in missing.text
    assert client.get("/ui/cassettes/broken").status_code == 422


def test_the_list_page_sorts_by_each_column(client: TestClient) -> None:
    def order(sort: str) -> list[str]:
        text = client.get(f"/ui/?sort={sort}").text
        rows = [line for line in text.splitlines() if line.startswith('<tr data-name="')]
        return [line.split('"')[1] for line in rows]

    assert order("name") == ["base", "broken", "runs/french", "runs/quota"]
    assert order("calls") == ["base", "runs/french", "runs/quota", "broken"]
    assert order("status") == ["broken", "runs/quota", "base", "runs/french"]
    assert order("size")[0] == "broken"
    assert order("size")[-1] == "runs/quota"
    assert order("nonsense") == order("name")


@pytest.mark.parametrize("picks", [["base"], ["base", "runs/french", "runs/quota"]])
def test_the_list_pages_ticks_are_two_or_a_400(client: TestClient, picks: list[str]) -> None:
    answer = client.get("/ui/diff", params={"pick": picks})
    assert answer.status_code == 400
    assert f"tick two cassettes to diff, not {len(picks)}" in answer.text


def test_two_ticks_diff_the_upper_one_as_a(client: TestClient) -> None:
    ticked = client.get("/api/diff", params={"pick": ["base", "runs/french"]}).json()
    named = client.get("/api/diff", params={"a": "base", "b": "runs/french"}).json()
    assert ticked == named
    assert (ticked["a"], ticked["b"]) == ("base", "runs/french")
