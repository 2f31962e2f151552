"""httpbin, the HTTP zoo from PyPI, served by waitress on 127.0.0.1 from its own venv
(``make servers`` builds ``.venv-httpbin``: on Python 3.11 httpbin pins a greenlet that
Playwright cannot share a venv with)."""

from __future__ import annotations

import contextlib
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
PYTHON = ROOT / ".venv-httpbin" / "bin" / "python"


@contextlib.contextmanager
def httpbin() -> Iterator[str]:
    """httpbin on a free port of 127.0.0.1 until the block ends; yields its base URL."""
    assert PYTHON.exists(), f"{PYTHON} is missing: run `make servers` (make test does)"
    process = subprocess.Popen(
        [
            str(PYTHON),
            "-m",
            "waitress",
            "--host=127.0.0.1",
            "--port=0",
            "--threads=8",
            "httpbin:app",
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        url = _serving(process)
        deadline = time.monotonic() + 30
        while True:  # bounded: 30 s at most
            try:
                httpx.get(f"{url}/get", timeout=2)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "httpbin did not answer within 30 s"
                time.sleep(0.05)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)
        assert process.stdout is not None
        process.stdout.close()


def _serving(process: subprocess.Popen[str]) -> str:
    assert process.stdout is not None
    seen = []
    for line in process.stdout:  # waitress says where it serves on its first lines
        seen.append(line)
        found = re.search(r"Serving on (http://127\.0\.0\.1:\d+)", line)
        if found:
            return found.group(1)
        if len(seen) > 20:
            break
    raise AssertionError(f"httpbin did not start: {''.join(seen)}")
