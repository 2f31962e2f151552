"""The ``faultdeck`` executable on cassettes in a store: ``show``, ``diff`` and ``replay``
take ``s3://`` URLs (moto's S3 server, run here on 127.0.0.1); the endpoint and fake
credentials come from the environment and never reach the output."""

from __future__ import annotations

import importlib
import subprocess
import sys
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

import faultdeck as fd
from faultdeck._cassette.store import read_bytes
from tests.support.calls import returns
from tests.support.children import child_env
from tests.support.plants import B64, rand
from tests.support.store import moto_endpoint

# fsspec has no type hints: imported by name.
fsspec: Any = importlib.import_module("fsspec")

EXE = str(Path(sys.executable).parent / "faultdeck")
BUCKET = "faultdeck-cli"
# Built at run time, in the shape of an AWS secret access key: never a literal here.
SECRET = "wJalr" + rand("store-cli-secret", B64, 35)

AGENT = """
import faultdeck as fd
deck = fd.Deck.from_env()
print(deck.call("tool", "plan", {"task": "fix"}, lambda: {"steps": 2}))
"""


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    with moto_endpoint() as url:
        yield url


@pytest.fixture
def env(endpoint: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The store's environment (endpoint, fake credentials), here and for the children."""
    values = {
        "AWS_ACCESS_KEY_ID": "AKIA" + rand("store-cli-id", "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16),
        "AWS_SECRET_ACCESS_KEY": SECRET,
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_ENDPOINT_URL_S3": endpoint,
        "FSSPEC_S3_ENDPOINT_URL": endpoint,
    }
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    fs = fsspec.filesystem("s3", endpoint_url=endpoint)
    if not fs.exists(BUCKET):
        fs.mkdir(BUCKET)
    return values


def url_for(name: str) -> str:
    return f"s3://{BUCKET}/{uuid.uuid4().hex}/{name}"


def record(url: str, calls: Mapping[str, object]) -> None:
    with fd.Deck(url, mode="record") as deck:
        for name, out in calls.items():
            deck.call("tool", name, {"q": name}, returns(out))


def run(
    *args: str, env: Mapping[str, str], prelude: str = "", cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """``faultdeck ARGS``; with a ``prelude``, run in a Python that executes it first."""
    command = [EXE, *args]
    if prelude:
        code = f"{prelude}\nimport sys\nfrom faultdeck.cli import main\nsys.exit(main())"
        command = [sys.executable, "-c", code, *args]
    done = subprocess.run(
        command,
        capture_output=True,
        text=True,
        cwd=cwd,
        env=child_env(COLUMNS="120", **env),
        timeout=120,
    )
    assert SECRET not in done.stdout
    assert SECRET not in done.stderr
    return done


def test_show_reads_a_cassette_from_the_store(env: dict[str, str]) -> None:
    url = url_for("a.jsonl")
    record(url, {"search": [1, 2], "fetch": "page"})
    done = run("show", url, env=env)
    assert done.returncode == 0, done.stderr
    assert url in done.stdout
    assert "search" in done.stdout
    assert "fetch" in done.stdout
    assert "beside it" not in done.stdout


def test_diff_takes_two_urls(env: dict[str, str]) -> None:
    a, b, c = url_for("a.jsonl"), url_for("b.jsonl"), url_for("c.jsonl")
    record(a, {"search": 1, "fetch": 2})
    record(b, {"search": 1, "fetch": 2})
    record(c, {"search": 1, "write": 3})
    same = run("diff", a, b, env=env)
    assert same.returncode == 0, same.stdout + same.stderr
    differs = run("diff", a, c, env=env)
    assert differs.returncode == 1, differs.stdout + differs.stderr
    assert "fetch" in differs.stdout
    assert "write" in differs.stdout


def test_a_corrupt_object_is_one_line_naming_its_url_and_line(env: dict[str, str]) -> None:
    url = url_for("a.jsonl")
    record(url, {"one": 1, "two": 2})
    lines = read_bytes(url).split(b"\n")
    lines[1] = b"{not json"
    fsspec.filesystem("s3").pipe_file(url, b"\n".join(lines))
    done = run("show", url, env=env)
    assert done.returncode == 2
    assert done.stderr.startswith(f"faultdeck: error: {url}:2: not JSON")
    assert done.stderr.count("\n") == 1


def test_a_missing_object_says_record_it_first(env: dict[str, str]) -> None:
    url = url_for("none.jsonl")
    done = run("show", url, env=env)
    assert done.returncode == 2
    assert done.stderr.startswith(f"faultdeck: error: {url}: no such cassette; record it first")
    assert done.stderr.count("\n") == 1


def test_replay_gives_the_program_the_url(env: dict[str, str], tmp_path: Path) -> None:
    url = url_for("run.jsonl")
    with fd.Deck(url, mode="record") as deck:
        deck.call("tool", "plan", {"task": "fix"}, returns({"steps": 2}))
    agent = tmp_path / "agent.py"
    agent.write_text(AGENT, "utf-8")
    done = run("replay", url, "--", sys.executable, str(agent), env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "{'steps': 2}" in done.stdout
    assert "1 used, 0 live, 0 unused, 0 repeated, 0 missed" in done.stdout


def test_without_fsspec_a_url_gives_the_install_hint(env: dict[str, str]) -> None:
    url = url_for("a.jsonl")
    done = run("show", url, env=env, prelude="import sys; sys.modules['fsspec'] = None")
    assert done.returncode == 2
    assert done.stderr == (f"faultdeck: error: {url} needs fsspec: pip install 'faultdeck[s3]'\n")


def test_a_program_s_deck_replays_the_url_in_its_environment(
    env: dict[str, str], tmp_path: Path
) -> None:
    url = url_for("run.jsonl")
    with fd.Deck(url, mode="record") as deck:
        deck.call("tool", "plan", {"task": "fix"}, returns({"steps": 2}))
    agent = tmp_path / "agent.py"
    agent.write_text(AGENT, "utf-8")
    done = subprocess.run(
        [sys.executable, str(agent)],
        capture_output=True,
        text=True,
        env=child_env(FAULTDECK_CASSETTE=url, FAULTDECK_MODE="replay", **env),
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "{'steps': 2}\n"
    assert SECRET not in done.stderr


FAILING_AGENT = AGENT + "raise SystemExit(3)\n"


def test_record_puts_a_finished_run_in_the_store_and_a_failed_one_never(
    env: dict[str, str], tmp_path: Path
) -> None:
    url = url_for("recorded.jsonl")
    agent = tmp_path / "agent.py"
    agent.write_text(AGENT, "utf-8")
    done = run("record", url, "--", sys.executable, str(agent), env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"recorded 1 call (1 live) into {url}" in done.stdout
    assert "warning" not in done.stderr
    first = read_bytes(url)
    assert [e.name for e in fd.load(url).entries] == ["plan"]
    assert fd.load(url).end is not None
    # A run that fails leaves the stored cassette byte for byte, and no key beside it.
    failing = tmp_path / "failing.py"
    failing.write_text(FAILING_AGENT, "utf-8")
    failed = run("record", url, "--", sys.executable, str(failing), env=env, cwd=tmp_path)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert f"{url} was left as it was" in failed.stdout
    said = " ".join(failed.stdout.split())
    assert f"cannot be resumed; record it again: faultdeck record {url} -- " in said
    assert "faultdeck resume" not in said
    assert read_bytes(url) == first
    folder = url.rsplit("/", 1)[0]
    assert fsspec.filesystem("s3").ls(folder) == [folder[len("s3://") :] + "/recorded.jsonl"]
    # Replayed from the store, the recording answers the program.
    replayed = run("replay", url, "--", sys.executable, str(agent), env=env, cwd=tmp_path)
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
