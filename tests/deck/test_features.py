"""Recorded errors, side effects, the tool decorator, env reads, from_env and the harness."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import faultdeck as fd
from faultdeck._base.config import harness
from faultdeck._keys.canonical import make_key
from tests.support.calls import never, rules


class UpstreamHiccup(Exception):
    """An exception type of a module the program has imported."""


class NeedsTwoArgs(Exception):
    def __init__(self, a: str, b: str) -> None:
        super().__init__(a, b)


def raiser(exc: Exception) -> Callable[[], Any]:
    def run() -> Any:
        raise exc

    return run


def test_recorded_errors_replay_as_the_same_type(tmp_path: Path) -> None:
    path = tmp_path / "errors.jsonl"
    raised = [
        fd.QuotaExhausted("slow down", status=429, retry_after=2.0, code="rate_limit_exceeded"),
        TimeoutError("read timed out"),
        UpstreamHiccup("bad gateway"),
        NeedsTwoArgs("x", "y"),
    ]
    with fd.Deck(path, mode="record") as deck:
        for i, exc in enumerate(raised):
            with pytest.raises(type(exc)):
                deck.call("tool", "t", {"i": i}, raiser(exc))
    with fd.Deck(path, mode="replay") as deck:
        with pytest.raises(fd.QuotaExhausted, match="slow down") as quota:
            deck.call("tool", "t", {"i": 0}, never)
        assert (quota.value.status, quota.value.retry_after, quota.value.code) == (
            429,
            2.0,
            "rate_limit_exceeded",
        )
        with pytest.raises(TimeoutError, match="read timed out"):
            deck.call("tool", "t", {"i": 1}, never)
        with pytest.raises(UpstreamHiccup, match="bad gateway"):
            deck.call("tool", "t", {"i": 2}, never)
        with pytest.raises(fd.RecordedError) as other:
            deck.call("tool", "t", {"i": 3}, never)
    assert other.value.type_name == f"{__name__}.NeedsTwoArgs"
    report = deck.report()
    assert [c.error for c in report.calls] == [
        "QuotaExhausted",
        "TimeoutError",
        "UpstreamHiccup",
        "NeedsTwoArgs",
    ]


def test_an_unloaded_error_type_replays_as_recorded_error(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    path.write_text(
        '{"faultdeck": 1}\n'
        '{"seq": 1, "kind": "http", "name": "get", "key": "KEY", "args": {}, '
        '"error": {"type": "APIConnectionError", "module": "not_imported_sdk", '
        '"message": "boom", "status": 503}, "ms": 1}\n'
        '{"end": {"calls": 1, "status": "ok"}}\n'.replace("KEY", make_key("http", "get", {})),
        "utf-8",
    )
    with fd.Deck(path, mode="replay") as deck, pytest.raises(fd.RecordedError) as info:
        deck.call("http", "get", {}, never)
    assert info.value.type_name == "not_imported_sdk.APIConnectionError"
    assert info.value.status == 503
    assert "not_imported_sdk" not in sys.modules


def test_side_effects_never_run_in_replay_and_need_permission_to_record(tmp_path: Path) -> None:
    path = tmp_path / "fx.jsonl"
    sent: list[str] = []

    with fd.Deck(path, mode="record") as deck:

        @deck.tool(side_effect=True)
        def send_email(to: str, body: str = "hi") -> dict[str, object]:
            sent.append(to)
            return {"sent": True}

        with pytest.raises(fd.SideEffectBlocked, match="allow_side_effects=True"):
            send_email("a@example.com")
    assert sent == []
    assert deck.report().calls[0].source == "blocked"

    with fd.Deck(path, mode="record", allow_side_effects=True) as deck:

        @deck.tool(side_effect=True)
        def send_email2(to: str, body: str = "hi") -> dict[str, object]:
            sent.append(to)
            return {"sent": True}

        assert send_email2("a@example.com") == {"sent": True}
    assert sent == ["a@example.com"]
    assert fd.load(path).entries[0].args == {"to": "a@example.com", "body": "hi"}

    with fd.Deck(path, mode="replay") as deck:

        @deck.tool(side_effect=True, name="send_email2")
        def send_again(to: str, body: str = "hi") -> dict[str, object]:
            sent.append(to)
            return {"sent": True}

        assert send_again("a@example.com") == {"sent": True}
    assert sent == ["a@example.com"], "a side effect ran during replay"


def test_a_call_inside_a_side_effect_runs_with_no_idempotency_key_of_its_own(
    tmp_path: Path,
) -> None:
    with fd.Deck(tmp_path / "keys.jsonl", mode="record", allow_side_effects=True) as deck:

        @deck.tool(side_effect=True, idempotency_key="key")
        def send(to: str, key: str | None = None) -> dict[str, object]:
            return {"outer": key is not None, **lookup(to)}

        @deck.tool(idempotency_key="key")
        def lookup(to: str, key: str | None = None) -> dict[str, object]:
            return {"inner": key}

        assert send("a") == {"outer": True, "inner": None}


def test_a_dry_run_stub_records_instead_of_the_side_effect(tmp_path: Path) -> None:
    path = tmp_path / "dry.jsonl"
    charged: list[int] = []

    with fd.Deck(path, mode="record") as deck:

        @deck.tool(side_effect=True, dry_run=lambda cents: {"charged": 0, "dry": True})
        def charge(cents: int) -> dict[str, object]:
            charged.append(cents)
            return {"charged": cents}

        assert charge(500) == {"charged": 0, "dry": True}
    assert charged == []
    assert fd.load(path).entries[0].value == {"charged": 0, "dry": True}


def test_tool_decorator_sync_and_async_and_schema_version(tmp_path: Path) -> None:
    path = tmp_path / "tools.jsonl"

    def make(deck: fd.Deck, version: str) -> tuple[object, object]:
        @deck.tool(schema_version=version)
        def add(a: int, b: int = 1) -> int:
            return a + b

        @deck.tool
        async def mul(a: int, b: int) -> int:
            await asyncio.sleep(0)
            return a * b

        return add, mul

    with fd.Deck(path, mode="record") as deck:
        add, mul = make(deck, "v2")
        assert add(2) == 3  # type: ignore[operator]
        assert asyncio.run(mul(3, 4)) == 12  # type: ignore[operator]
    entries = fd.load(path).entries
    assert [(e.name, e.args, e.schema) for e in entries] == [
        ("add", {"a": 2, "b": 1}, "v2"),
        ("mul", {"a": 3, "b": 4}, "v1"),
    ]
    assert '"schema":"v2"' in path.read_text("utf-8")
    with fd.Deck(path, mode="replay") as deck:
        add, mul = make(deck, "v2")
        assert add(2) == 3  # type: ignore[operator]
        assert asyncio.run(mul(3, 4)) == 12  # type: ignore[operator]
    with fd.Deck(path, mode="replay") as deck:
        add, _ = make(deck, "v3")
        with pytest.raises(fd.ReplayMiss, match="schema version"):
            add(2)  # type: ignore[operator]


def test_env_values_are_hashed_unless_public(tmp_path: Path) -> None:
    path = tmp_path / "env.jsonl"
    environ = {"PROJECT_ROOT": "/srv/app", "DB_PASSWORD": "hunter2-very-secret", "REGION": "eu"}
    with fd.Deck(path, mode="record", environ=environ, public_env=("REGION",)) as deck:
        assert deck.env("PROJECT_ROOT") == "/srv/app"
        assert deck.env("DB_PASSWORD", public=True) == "hunter2-very-secret"
        assert deck.env("REGION") == "eu"
        assert deck.env("UNSET", default="d") == "d"
    text = path.read_text("utf-8")
    assert "/srv/app" not in text
    assert "hunter2-very-secret" not in text
    stored = {e.name: e.value for e in fd.load(path).entries}
    assert stored["REGION"] == "eu"
    assert str(stored["PROJECT_ROOT"]).startswith("sha256:")
    assert str(stored["DB_PASSWORD"]).startswith("sha256:"), "a secret-looking name went public"
    assert stored["UNSET"] is None

    with fd.Deck(path, mode="replay", environ=environ, public_env=("REGION",)) as deck:
        assert deck.env("PROJECT_ROOT") == "/srv/app"
        assert deck.env("DB_PASSWORD", public=True) == "hunter2-very-secret"
        assert deck.env("REGION") == "eu"
        assert deck.env("UNSET", default="d") == "d"

    changed = dict(environ, PROJECT_ROOT="/elsewhere")
    with (
        fd.Deck(path, mode="replay", environ=changed) as deck,
        pytest.raises(fd.ReplayMiss, match="env PROJECT_ROOT differs from the recording"),
    ):
        deck.env("PROJECT_ROOT")


def test_from_env_drives_a_program_and_writes_its_report(tmp_path: Path) -> None:
    program = tmp_path / "prog.py"
    program.write_text(
        "import faultdeck as fd\n"
        "deck = fd.Deck.from_env()\n"
        "print(deck.call('tool', 'echo', {'x': 1}, lambda: {'y': 2}))\n",
        "utf-8",
    )
    src = str(Path(fd.__file__).parent.parent)
    cassette, report = tmp_path / "c.jsonl", tmp_path / "report.json"
    base = {"PYTHONPATH": src, "FAULTDECK_CASSETTE": str(cassette), "PATH": "/usr/bin:/bin"}
    for mode in ("record", "replay"):
        env = dict(base, FAULTDECK_MODE=mode, FAULTDECK_REPORT=str(report))
        done = subprocess.run(
            [sys.executable, str(program)], env=env, cwd=tmp_path, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == "{'y': 2}"
        data = json.loads(report.read_text("utf-8"))
        assert data["mode"] == mode
        assert data["live" if mode == "record" else "used"] == 1
    assert fd.load(cassette).end == {"calls": 1, "status": "ok", "rules": rules()}


def test_from_env_without_a_cassette_says_what_to_set() -> None:
    with pytest.raises(fd.ConfigError, match="FAULTDECK_CASSETTE is not set"):
        fd.Deck.from_env(environ={})


def test_replaying_under_another_commit_warns(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()

    def git(*args: str) -> None:
        subprocess.run(
            ["git", "-c", "user.email=t@t", "-c", "user.name=t", *args],
            cwd=repo,
            check=True,
            capture_output=True,
        )

    git("init", "-q")
    (repo / "agent.py").write_text("v1\n", "utf-8")
    git("add", ".")
    git("commit", "-qm", "one")
    settings = fd.config.Settings(root=str(repo))
    path = repo / "c.jsonl"
    with fd.Deck(path, mode="record", settings=settings) as deck:
        deck.call("tool", "t", {}, lambda: 1)
    assert fd.load(path).header.harness["git_sha"]
    (repo / "agent.py").write_text("v2\n", "utf-8")
    git("commit", "-qam", "two")
    harness.cache_clear()
    deck = fd.Deck(path, mode="replay", settings=settings)
    with pytest.warns(fd.HarnessChanged, match="was recorded at commit"):
        deck.open()
    assert deck.call("tool", "t", {}, never) == 1
    assert deck.report().harness_changed is not None
