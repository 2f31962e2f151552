"""Cassettes in a store (fsspec URLs): on moto's S3 server, run here on 127.0.0.1, and in
fsspec's ``memory://``. A recording reaches the store whole, on a clean close only; replay
and ``load`` read from it; no credential reaches a cassette or a log."""

from __future__ import annotations

import importlib
import logging
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import faultdeck as fd
from faultdeck._cassette.reader import load
from faultdeck._cassette.store import is_url, read_bytes, upload
from tests.support.calls import never, returns, rules
from tests.support.children import child_env
from tests.support.plants import B64, rand
from tests.support.store import moto_endpoint

BUCKET = "faultdeck-runs"
# Built at run time, in the shape of an AWS secret access key: never a literal here.
# fsspec has no type hints: imported by name.
fsspec: Any = importlib.import_module("fsspec")

SECRET = "wJalr" + rand("store-secret", B64, 35)


def s3_env(endpoint: str) -> dict[str, str]:
    """What boto and s3fs need to reach the test server, with fake credentials."""
    return {
        "AWS_ACCESS_KEY_ID": "AKIA" + rand("store-key-id", "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16),
        "AWS_SECRET_ACCESS_KEY": SECRET,
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_ENDPOINT_URL_S3": endpoint,
        "FSSPEC_S3_ENDPOINT_URL": endpoint,
    }


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    with moto_endpoint() as url:
        yield url


@pytest.fixture
def s3(endpoint: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The s3 filesystem on the test server, with the bucket made."""
    for name, value in s3_env(endpoint).items():
        monkeypatch.setenv(name, value)
    fs = fsspec.filesystem("s3", endpoint_url=endpoint)
    if not fs.exists(BUCKET):
        fs.mkdir(BUCKET)
    return fs


@pytest.fixture
def url(s3: Any) -> str:
    return f"s3://{BUCKET}/runs/{uuid.uuid4().hex}/a.jsonl"


def record(where: str, calls: list[tuple[str, object]]) -> None:
    with fd.Deck(where, mode="record") as deck:
        for name, out in calls:
            deck.call("tool", name, {"q": name}, returns(out))


def keys_under(fs: Any, url: str) -> list[str]:
    """The names of the objects beside ``url`` in the store."""
    fs.invalidate_cache()
    return sorted(p.rsplit("/", 1)[-1] for p in fs.find(url.rsplit("/", 1)[0]))


def test_urls_are_told_from_paths() -> None:
    assert is_url("s3://b/a.jsonl")
    assert is_url("memory://x/a.jsonl")
    assert is_url("file:///a")
    assert not is_url("runs/a.jsonl")
    assert not is_url("/tmp/s3:/a")
    assert not is_url("C:\\a")


def test_a_recording_appears_in_the_store_only_when_it_closes_cleanly(s3: Any, url: str) -> None:
    with fd.Deck(url, mode="record") as deck:
        assert deck.call("tool", "search", {"q": "a"}, returns([1, 2])) == [1, 2]
        assert keys_under(s3, url) == []  # nothing, not even a part, while the run goes on
    assert keys_under(s3, url) == ["a.jsonl"]  # the temporary key is gone
    recording = load(url)
    assert recording.path == url
    assert [e.name for e in recording.entries] == ["search"]
    assert recording.end == {"calls": 1, "status": "ok", "rules": rules()}


def test_replay_from_the_store_answers_the_calls(url: str) -> None:
    record(url, [("search", {"hits": 3}), ("fetch", "page")])
    with fd.Deck(url) as deck:
        assert deck.call("tool", "search", {"q": "search"}, never) == {"hits": 3}
        assert deck.call("tool", "fetch", {"q": "fetch"}, never) == "page"
        with pytest.raises(fd.ReplayMiss):
            deck.call("tool", "other", {"q": "x"}, never)
    assert deck.report().used == 2


def test_a_failed_run_leaves_the_store_s_cassette_byte_for_byte(
    s3: Any, url: str, caplog: pytest.LogCaptureFixture
) -> None:
    record(url, [("search", 1)])
    before = read_bytes(url)

    def run() -> None:
        with fd.Deck(url, mode="record") as deck:
            deck.call("tool", "search", {"q": "search"}, returns(2))
            raise RuntimeError("the agent broke")

    with pytest.raises(RuntimeError):
        run()
    assert read_bytes(url) == before
    assert keys_under(s3, url) == ["a.jsonl"]
    assert any("left as it was" in r.getMessage() and url in r.getMessage() for r in caplog.records)


def test_append_continues_the_store_s_cassette(url: str) -> None:
    record(url, [("one", 1)])
    with fd.Deck(url, mode="append") as deck:
        assert deck.call("tool", "one", {"q": "one"}, never) == 1
        deck.call("tool", "two", {"q": "two"}, returns(2))
    assert [e.name for e in load(url).entries] == ["one", "two"]


def test_once_records_when_the_store_has_none_then_replays(url: str) -> None:
    with fd.Deck(url, mode="once") as deck:
        deck.call("tool", "one", {"q": 1}, returns(1))
    assert deck.report().mode == "record"
    with fd.Deck(url, mode="once") as deck:
        assert deck.call("tool", "one", {"q": 1}, never) == 1
    assert deck.report().mode == "replay"


def test_a_missing_object_says_record_it_first(url: str) -> None:
    with pytest.raises(fd.CassetteNotFound) as caught:
        fd.Deck(url).open()
    message = str(caught.value)
    assert message.startswith(f"{url}: no such cassette; record it first with")
    assert "\n" not in message


def test_a_corrupt_object_names_its_url_and_line(s3: Any, url: str) -> None:
    record(url, [("one", 1), ("two", 2)])
    lines = read_bytes(url).split(b"\n")
    lines[2] = b'{"seq": 2, broken'
    s3.pipe_file(url, b"\n".join(lines))
    with pytest.raises(fd.CassetteCorrupt) as caught:
        load(url)
    assert str(caught.value).startswith(f"{url}:3: not JSON")


def test_no_credential_reaches_the_cassette_or_the_log(
    url: str, caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    caplog.set_level(logging.DEBUG)
    with fd.Deck(url, mode="record") as deck:
        deck.call("tool", "sign", {"aws_secret_access_key": SECRET}, returns({"ok": True}))
        deck.env("AWS_SECRET_ACCESS_KEY")
    data = read_bytes(url)
    assert b"sign" in data
    assert SECRET.encode() not in data
    assert SECRET not in caplog.text
    out, err = capfd.readouterr()
    assert SECRET not in out
    assert SECRET not in err


def test_an_upload_the_store_refuses_keeps_the_recording_locally(s3: Any) -> None:
    nowhere = f"s3://no-such-bucket-{uuid.uuid4().hex[:8]}/a.jsonl"
    deck = fd.Deck(nowhere, mode="record")
    deck.call("tool", "one", {"q": 1}, returns(1))
    with pytest.raises(fd.CassetteWriteError) as caught:
        deck.close()
    assert str(caught.value).startswith(f"{nowhere}: cannot be written to the store")
    kept = deck.report().kept
    assert kept is not None
    assert load(kept).entries[0].name == "one"
    shutil.rmtree(Path(kept).parent)


def test_memory_urls_record_and_replay() -> None:
    where = f"memory://faultdeck/{uuid.uuid4().hex}/run.jsonl"
    record(where, [("one", {"a": 1})])
    memory = fsspec.filesystem("memory")
    assert [p.rsplit("/", 1)[-1] for p in memory.find(where.rsplit("/", 1)[0])] == ["run.jsonl"]
    with fd.Deck(where) as deck:
        assert deck.call("tool", "one", {"q": "one"}, never) == {"a": 1}


def test_file_urls_are_moved_into_place(tmp_path: Path) -> None:
    where = (tmp_path / "run.jsonl").as_uri()
    record(where, [("one", 1)])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.jsonl"]
    assert load(where).entries[0].name == "one"
    upload(str(tmp_path / "run.jsonl"), (tmp_path / "copy.jsonl").as_uri())
    assert (tmp_path / "copy.jsonl").read_bytes() == (tmp_path / "run.jsonl").read_bytes()


def test_without_fsspec_a_url_gives_the_install_hint() -> None:
    code = (
        "import sys; sys.modules['fsspec'] = None\n"
        "import faultdeck as fd\n"
        "try:\n"
        "    fd.Deck('s3://b/a.jsonl').open()\n"
        "except fd.ConfigError as exc:\n"
        "    print(exc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=child_env(), timeout=60
    )
    assert done.stdout == "s3://b/a.jsonl needs fsspec: pip install 'faultdeck[s3]'\n"
