"""httpbin, the HTTP zoo from PyPI, served by waitress on 127.0.0.1 in a process of its own
(``make test`` installs both into the venv the suite runs in)."""

from __future__ import annotations

import contextlib
import importlib.util
import re
import subprocess
import sys
import time
from collections.abc import Iterator

import httpx
import pytest


@contextlib.contextmanager
def httpbin() -> Iterator[str]:
    """httpbin on a free port of 127.0.0.1 until the block ends; yields its base URL."""
    if importlib.util.find_spec("httpbin") is None:
        pytest.fail("httpbin is not installed in this venv: run `make test`, which installs it")
    process = subprocess.Popen(
        [
            sys.executable,
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
