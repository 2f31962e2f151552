"""A ``faultdeck serve`` child on 127.0.0.1: started on a free port, its URL read from the
line it prints, stopped with SIGTERM as a service manager would."""

from __future__ import annotations

import contextlib
import re
import select
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.children import child_env

START_TIMEOUT = 30.0
STOP_TIMEOUT = 20.0
_SERVING = re.compile(r"faultdeck: serving (http://127\.0\.0\.1:\d+) ")


@dataclass
class Served:
    """A running server: its URL and process."""

    url: str
    proc: subprocess.Popen[str]
    log: Path

    def base(self, name: str) -> str:
        """The Anthropic base URL of cassette ``name`` (append ``/v1`` for OpenAI)."""
        return f"{self.url}/c/{name}"

    def stop(self) -> int:
        """SIGTERM, then wait for the exit; the exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(STOP_TIMEOUT)
        return self.proc.returncode


def serve_command(*args: str) -> list[str]:
    """The command line of ``faultdeck serve`` with this checkout's faultdeck."""
    return [sys.executable, "-m", "faultdeck", "serve", *args]


@contextlib.contextmanager
def served(tmp: Path, *args: str, **env: str) -> Iterator[Served]:
    """Run ``faultdeck serve --port 0 ARGS`` (``env`` added to its environment) until the
    block ends, then SIGTERM it."""
    log = tmp / f"serve-{len(list(tmp.glob('serve-*.log')))}.log"
    environment = child_env()
    environment.pop("FAULTDECK_TOKEN", None)
    environment.update(env)
    with log.open("w") as err:
        proc = subprocess.Popen(
            serve_command("--port", "0", *args),
            env=environment,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
        )
    try:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], START_TIMEOUT)
        line = proc.stdout.readline() if ready else ""
        found = _SERVING.match(line)
        if found is None:
            proc.kill()
            proc.wait(STOP_TIMEOUT)
            pytest.fail(f"faultdeck serve did not start: {line!r}\n{log.read_text()}")
        server = Served(found.group(1), proc, log)
        yield server
        server.stop()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(STOP_TIMEOUT)
        if proc.stdout is not None:
            proc.stdout.close()
