"""``faultdeck demo`` shows every step and exits 0; run as a user would."""

from __future__ import annotations

import fcntl
import io
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from pathlib import Path

from rich.console import Console

from faultdeck import demo


def test_demo_walks_through_every_step() -> None:
    buffer = io.StringIO()
    code = demo.main(Console(file=buffer, width=120, force_terminal=False, highlight=False))
    text = buffer.getvalue()
    assert code == 0, text
    assert "20/20 replays gave the same outcomes" in text
    assert "pass rate 1.00" in text
    # The miss a changed prompt meets: the call, the agreeing calls, the argument that changed.
    assert "replay miss at seq 1: model chat" in text
    assert "0 calls agreed with the recording before it." in text
    assert 'args.messages[1].content: recorded "Make the agent loop respect the retry' in text
    for label, _ in demo.ROWS:
        assert label in text
    assert text.count("7/7 hold") == len(demo.ROWS)
    assert "stopped (quota)" in text
    assert "ok (repaired)" in text
    assert "ok (slow start)" in text
    assert "✗ no_early_retry" in text
    assert "resume replayed 3, ran 2 live" in text
    assert "first divergence at seq 1" in text
    assert "and quota" in text  # the changed prompt, in the diff


def test_the_faultdeck_demo_command(tmp_path: Path) -> None:
    exe = Path(sys.executable).parent / "faultdeck"
    env = dict(os.environ, COLUMNS="100")
    done = subprocess.run(
        [str(exe), "demo"], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "done in" in done.stdout
    assert list(tmp_path.iterdir()) == [], "the demo left files behind"


ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def test_the_demo_fits_80_columns_on_a_terminal() -> None:
    exe = Path(sys.executable).parent / "faultdeck"
    main, child = pty.openpty()
    fcntl.ioctl(child, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 80, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "CI")}
    process = subprocess.Popen(
        [str(exe), "demo"], stdin=child, stdout=child, stderr=child, env={**env, "TERM": "xterm"}
    )
    os.close(child)
    chunks = []
    while True:
        try:
            data = os.read(main, 65536)
        except OSError:  # the terminal's other side closed: the demo ended
            break
        if not data:
            break
        chunks.append(data)
    os.close(main)
    assert process.wait(timeout=120) == 0
    text = ANSI.sub("", b"".join(chunks).decode("utf-8", "replace")).replace("\r", "")
    assert "done in" in text
    assert "4. Rehearse" in text
    assert "slow first token" in text
    lines = text.splitlines()
    assert [line for line in lines if len(line) > 80] == []
    # Nothing wrapped back to the margin or cut short: a step's lines keep its indent, and
    # the table's rows are whole.
    table = ("fault ", *(label for label, _ in demo.ROWS))
    loose = [
        line
        for line in lines
        if line.strip()
        and not line.startswith(("   ", "─", "done in", *table))
        and not re.match(r"\d\. ", line)
    ]
    assert loose == []
    rows = [line for line in lines if line.startswith(table)]
    assert len(rows) == len(table)
    assert not any("…" in row for row in rows)
    assert any("stopped (quota)" in row for row in rows)
