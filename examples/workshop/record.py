"""Re-record the golden cassette: ``python -m examples.workshop.record``."""

from __future__ import annotations

from pathlib import Path

from faultdeck.workshop import record_golden

if __name__ == "__main__":
    path = Path(__file__).parent / "cassettes" / "golden.jsonl"
    record_golden(path)
    print(f"recorded {path}")
