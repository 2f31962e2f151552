"""``faultdeck scan`` measured on a corpus: every planted secret found (recall), no finding
on realistic clean cassettes (false positives); and the command's counts, JSON and the
project's own patterns.

The two numbers are quoted in docs/guarantees.md; a test here keeps that page true.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import subprocess
import sys
import uuid
from pathlib import Path

import faultdeck as fd
from tests.support import ROOT
from tests.support.plants import ALNUM, URLSAFE, all_near_misses, all_plants, rand

SCAN = [str(Path(sys.executable).with_name("faultdeck"))]


def positive_lines() -> list[str]:
    """Every plant as a cassette line holds it: bare, mid-sentence, and in JSON text."""
    lines = []
    for plant in all_plants():
        lines.append(json.dumps({"seq": 1, "out": {"note": plant.text}}))
        lines.append(json.dumps({"seq": 1, "args": {"q": f"we used {plant.text} yesterday"}}))
        lines.append(json.dumps({"seq": 1, "out": json.dumps({"body": plant.text})}))
    return lines


SOURCE_FILE = """
import requests

def fetch(session, url):
    token = session.headers.get("Authorization")
    api_key = os.environ["OPENAI_API_KEY"]
    password = getpass.getpass()
    secret = settings.CLIENT_SECRET
    return requests.get(url, headers={"x-token": token}, timeout=10)
"""


def clean_lines() -> list[str]:
    """Lines of realistic cassettes that hold no secret."""
    lines: list[str] = []
    for cassette in sorted((ROOT / "examples").rglob("*.jsonl")):
        lines.extend(cassette.read_text("utf-8").splitlines())
    for i in range(20):
        page = base64.urlsafe_b64encode(hashlib.sha256(f"page{i}".encode()).digest()).decode()
        lines.append(json.dumps({"args": {"page_token": page, "page_size": 50}}))
        lines.append(json.dumps({"out": {"items": [i], "next_page_token": page, "cursor": page}}))
        lines.append(json.dumps({"out": {"nextPageToken": rand(f"gp{i}", URLSAFE, 120)}}))
        usage = {"prompt_tokens": 12345 + i, "completion_tokens": 67, "total_tokens": 12412 + i}
        lines.append(json.dumps({"out": {"usage": usage, "max_tokens": 4096}}))
        lines.append(json.dumps({"out": {"id": f"chatcmpl-{rand(f'c{i}', ALNUM, 29)}"}}))
        lines.append(json.dumps({"out": {"tool_call_id": f"call_{rand(f'k{i}', ALNUM, 24)}"}}))
        lines.append(json.dumps({"out": {"request_id": str(uuid.UUID(int=i * 7919))}}))
        lines.append(json.dumps({"out": {"sha": hashlib.sha256(str(i).encode()).hexdigest()}}))
        lines.append(json.dumps({"out": {"commit": hashlib.sha1(str(i).encode()).hexdigest()}}))
    lines.append(json.dumps({"out": {"path": "src/app.py", "content": SOURCE_FILE}}))
    lines.append(json.dumps({"out": {"content": json.dumps({"file": SOURCE_FILE})}}))
    image = base64.b64encode(bytes(range(256)) * 4).decode()
    lines.append(json.dumps({"args": {"image": f"data:image/png;base64,{image}"}}))
    for text in (
        "Retry budgets bound the total wait; backoffs and Retry-After draw on them.",
        "Set the API key in your environment, never in code; rotate tokens monthly.",
        "The bearer of this note may use the cookie jar. Basic auth is disabled.",
        "Visit https://docs.example.com/guides/retries?lang=en#budgets for more.",
        "Contact ops@example.com or call +1-555-0100; ticket OPS-12345 tracks it.",
        "2026-12-01T09:15:32Z started, 2026-12-01T09:15:40.123Z finished (8.1 s)",
        "model gpt-4o-mini-2024-07-18 answered; claude-3-5-sonnet-20241022 next",
        "The token budget is fine for this run; token usage was 12345 tokens.",
        "Error 401: invalid api key provided. Check your key and try again.",
    ):
        lines.append(json.dumps({"out": {"text": text}}))
    lines.extend(json.dumps({"out": {"note": m}}) for m in all_near_misses())
    return lines


def test_recall_is_every_planted_secret_and_no_clean_line_is_flagged() -> None:
    redactor = fd.Redactor()
    positives, negatives = positive_lines(), clean_lines()
    missed = [line for line in positives if not redactor.scan_text(line)]
    flagged = [(line, redactor.scan_text(line)) for line in negatives if redactor.scan_text(line)]
    assert missed == [], f"recall {1 - len(missed) / len(positives):.3f}"
    assert flagged == [], f"{len(flagged)} false positives of {len(negatives)}"


def test_the_docs_quote_the_numbers_this_corpus_gives() -> None:
    text = (ROOT / "docs" / "guarantees.md").read_text("utf-8")
    positives, negatives = len(positive_lines()), len(clean_lines())
    assert re.search(rf"\b{positives:,} planted secrets\b", text), positives
    assert re.search(rf"\b{negatives:,} lines of clean cassettes\b", text), negatives


def scan(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*SCAN, "scan", *args], cwd=cwd, capture_output=True, text=True, check=False
    )


def test_scan_counts_the_files_that_hold_findings(tmp_path: Path) -> None:
    folder = tmp_path / "cassettes"
    (folder / "nested").mkdir(parents=True)
    plants = all_plants()
    (folder / "a.jsonl").write_text(json.dumps({"note": plants[0].text}) + "\n", "utf-8")
    (folder / "nested" / "b.jsonl").write_text(
        "".join(json.dumps({"note": p.text}) + "\n" for p in plants[1:4]), "utf-8"
    )
    (folder / "clean.jsonl").write_text("\n".join(clean_lines()[:50]) + "\n", "utf-8")
    (folder / "looks-like.jsonl").mkdir()  # a folder named like a cassette is not read
    done = scan(str(folder), cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert "4 credential-shaped strings in 2 files of 3" in done.stderr
    for plant in plants[:4]:
        assert plant.secret not in done.stdout + done.stderr

    done = scan(str(folder), "--format", "json", cwd=tmp_path)
    assert done.returncode == 1
    report = json.loads(done.stdout)
    assert report["files"] == 3
    assert report["files_with_findings"] == 2
    assert len(report["findings"]) == 4
    assert {f["line"] for f in report["findings"] if f["file"].endswith("b.jsonl")} == {1, 2, 3}


def test_scan_uses_the_project_patterns(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\n'
        '[tool.faultdeck.redact_patterns]\ninternal = "itk_[A-Za-z0-9]{24}"\n',
        "utf-8",
    )
    token = "itk_" + rand("internal", ALNUM, 24)
    (tmp_path / "c.jsonl").write_text(json.dumps({"note": token}) + "\n", "utf-8")
    done = scan("c.jsonl", cwd=tmp_path)
    assert done.returncode == 1
    assert "c.jsonl:1: internal" in done.stdout
    assert token not in done.stdout


def test_scan_of_clean_cassettes_exits_0(tmp_path: Path) -> None:
    (tmp_path / "clean.jsonl").write_text("\n".join(clean_lines()) + "\n", "utf-8")
    done = scan(str(tmp_path), cwd=tmp_path)
    assert done.returncode == 0, done.stdout
    assert "no secrets in 1 file" in done.stdout
