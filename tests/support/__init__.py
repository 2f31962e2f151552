"""What the tests share: the repository's places, children to run and kill, planted secrets
(``plants``) and a fake LLM provider on loopback (``fake_upstream``)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
"""The repository's root folder."""

SRC = str(ROOT / "src")
"""The folder a child Python needs on PYTHONPATH to import this checkout's faultdeck."""

GOLDEN = ROOT / "examples" / "workshop" / "cassettes" / "golden.jsonl"
"""The workshop's golden cassette."""
