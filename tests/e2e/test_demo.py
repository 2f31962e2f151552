"""``faultdeck demo`` shows every step and exits 0; run as a user would."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

from rich.console import Console

from faultdeck import demo


def test_demo_walks_through_every_step() -> None:
    buffer = io.StringIO()
    code = demo.main(Console(file=buffer, width=120, force_terminal=False, highlight=False))
    text = buffer.getvalue()
    assert code == 0, text
    assert "20/20 replays gave identical outcomes" in text
    assert "pass rate 1.00" in text
    for label, _ in demo.ROWS:
        assert label in text
    assert text.count("7/7 hold") == len(demo.ROWS)
    assert "stopped (quota)" in text
    assert "ok (repaired)" in text
    assert "ok (slow first token)" in text
    assert "✗ no_early_retry" in text
    assert "no end line; resume replayed 3, ran 2 live" in text
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
