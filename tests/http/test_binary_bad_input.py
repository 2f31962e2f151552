"""A stored binary body that does not decode is bad input: one line naming the file, the
line and the seq, exit 2 from the CLI and a clear failure in pytest; the cassette is left as
it was."""

from __future__ import annotations

import random
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

import faultdeck as fd
from faultdeck.http import Transport

BODY = random.Random(1).randbytes(40)  # a short line: checked as it is read
LONG = random.Random(2).randbytes(4000)  # a long line: decoded once, where its bytes are kept


def upstream(request: httpx.Request) -> httpx.Response:
    body = LONG if request.url.path == "/long" else BODY
    return httpx.Response(200, content=body, headers={"content-type": "application/octet-stream"})


def record(path: Path) -> None:
    with fd.Deck(path, mode="record") as deck:
        with httpx.Client(transport=Transport(deck, transport=httpx.MockTransport(upstream))) as c:
            assert c.get("http://files.test/short").content == BODY
            assert c.get("http://files.test/long").content == LONG


SPOILS: dict[str, Callable[[dict[str, Any]], None]] = {
    "size": lambda out: out["binary"].update(size=out["binary"]["size"] + 1),
    "digest": lambda out: out["binary"].update(sha256="0" * 64),
    "base64": lambda out: out.update(body="%%%" + out["body"][3:]),
    "encoding": lambda out: out["binary"].update(encoding="hex"),
}


def spoiled(tmp_path: Path, how: str, line: int) -> tuple[Path, int]:
    path = tmp_path / "files.jsonl"
    record(path)
    lines = path.read_bytes().splitlines()
    call = orjson.loads(lines[line - 1])
    SPOILS[how](call["out"])
    lines[line - 1] = orjson.dumps(call)
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path, call["seq"]


@pytest.mark.parametrize("line", [2, 3], ids=["short", "long"])
@pytest.mark.parametrize("how", sorted(SPOILS))
def test_the_cli_says_where_and_exits_2(tmp_path: Path, how: str, line: int) -> None:
    path, seq = spoiled(tmp_path, how, line)
    before = path.read_bytes()
    done = subprocess.run(
        [sys.executable, "-m", "faultdeck", "show", str(path)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    message = done.stderr.strip()
    assert len(message.splitlines()) == 1, message
    assert f"{path}:{line}" in message
    assert f"seq {seq}" in message
    assert path.read_bytes() == before


def test_pytest_fails_the_test_naming_the_line(pytester: pytest.Pytester, tmp_path: Path) -> None:
    path, seq = spoiled(tmp_path, "digest", 3)
    pytester.makepyfile(
        test_files=f"""
        import httpx
        import pytest
        from faultdeck.http import Transport

        @pytest.mark.faultdeck(cassette={str(path)!r})
        def test_download(deck):
            with httpx.Client(transport=Transport(deck)) as client:
                client.get("http://files.test/short")
                client.get("http://files.test/long")
        """
    )
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([f"*faultdeck: {path}:3: seq {seq}: *sha256*"])
    assert "Traceback" not in result.stdout.str()
    assert "reader.py" not in result.stdout.str()  # one line, no traceback through faultdeck
