"""Child Pythons: run a script against this checkout's faultdeck, or kill one mid-run."""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from . import SRC

READY_TIMEOUT = 30.0
"""How long a child may take to print ``READY``."""


def child_env(**extra: str) -> dict[str, str]:
    """This environment, with this checkout's faultdeck importable, no mode or kill point
    inherited from the caller, and ``extra`` on top."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (SRC, env.get("PYTHONPATH")) if p)
    for name in ("FAULTDECK_MODE", "FAULTDECK_CASSETTE", "FAULTDECK_FAULTS", "KILL_AT_STEP"):
        env.pop(name, None)
    env.update(extra)
    return env


def script(path: Path, text: str) -> list[str]:
    """Write ``text`` to ``path`` and return the command that runs it with this Python."""
    path.write_text(text, "utf-8")
    return [sys.executable, str(path)]


def run(
    command: Sequence[str],
    *,
    env: dict[str, str] | None = None,
    cwd: str | Path | None = None,
    timeout: float = 60,
) -> subprocess.CompletedProcess[str]:
    """Run ``command`` to its end (at most ``timeout`` seconds), capturing its output."""
    return subprocess.run(
        list(command),
        env=child_env() if env is None else env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@contextlib.contextmanager
def until_ready(
    command: Sequence[str], *, env: dict[str, str] | None = None, cwd: str | Path | None = None
) -> Iterator[subprocess.Popen[str]]:
    """Start ``command``; once it prints ``READY``, hand it over; SIGKILL it when the block
    ends, as a crash would."""
    proc = subprocess.Popen(
        list(command),
        env=child_env() if env is None else env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], READY_TIMEOUT)
        line = proc.stdout.readline() if ready else ""
        if line.strip() != "READY":
            proc.kill()
            _, err = proc.communicate(timeout=10)
            pytest.fail(f"the child never got ready: stdout {line!r}, stderr:\n{err}")
        yield proc
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
    assert proc.returncode == -signal.SIGKILL


def kill_when_ready(
    command: Sequence[str], *, env: dict[str, str] | None = None, cwd: str | Path | None = None
) -> None:
    """Run ``command`` until it prints ``READY``, then SIGKILL it."""
    with until_ready(command, env=env, cwd=cwd):
        pass
