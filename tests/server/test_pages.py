"""The pages in a real browser: headless Chromium driven by Playwright, against the pages
served by a real uvicorn on loopback. Screenshots go to each test's ``tmp_path``."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

import faultdeck as fd
from faultdeck.server._config import ServerConfig
from tests.server.runs import record_folder, serving
from tests.support import ROOT
from tests.support.calls import returns

HOSTILE = '</pre><script>window.pwned = 1</script><img src=x onerror="window.pwned = 2">'
"""Markup a cassette may hold in its args and answers: shown as text, never run."""

SHOTS = ROOT / "test-artifacts" / "screenshots"
"""Where the browser tests leave their screenshots (kept after the run, ignored by git)."""


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.fail(
            "these tests drive a real browser and Chromium is not installed: "
            "apt-get install -y chromium (make test installs it when missing)"
        )
    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=chromium, headless=True)
        yield launched
        launched.close()


def _opened(browser: Browser, *, scripts: bool) -> Iterator[Page]:
    context = browser.new_context(java_script_enabled=scripts)
    yield context.new_page()
    context.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    """A page with JavaScript off: the pages work without it."""
    yield from _opened(browser, scripts=False)


@pytest.fixture
def scripted(browser: Browser) -> Iterator[Page]:
    """A page with JavaScript on: to see that nothing from a cassette runs."""
    yield from _opened(browser, scripts=True)


@pytest.fixture
def site(tmp_path: Path) -> Iterator[str]:
    with serving(record_folder(tmp_path / "cassettes")) as url:
        yield url


def test_pick_two_cassettes_press_diff_and_read_the_first_divergence(
    page: Page, site: str, tmp_path: Path
) -> None:
    page.goto(f"{site}/ui/")
    page.check('input[name="pick"][value="base"]')
    page.check('input[name="pick"][value="runs/french"]')
    page.screenshot(path=SHOTS / "list.png", full_page=True)
    page.get_by_role("button", name="diff").click()
    page.wait_for_url("**/ui/diff?*")

    assert "first divergence at seq 2" in page.inner_text("#first-text")
    first = page.locator("#first")
    assert "first-divergence" in (first.get_attribute("class") or "")
    assert "model chat" in first.inner_text()
    field = page.locator("tr.fields-row tr.field").first
    assert field.locator(".path").inner_text().startswith("args.messages[0].content")
    assert field.locator("del").inner_text() == "English"
    assert field.locator("ins").inner_text() == "French"
    assert "Answer in" in field.locator(".a").inner_text()
    page.get_by_role("link", name="show").click()
    assert page.url.endswith("#first")
    page.screenshot(path=SHOTS / "diff.png", full_page=True)
    page.get_by_role("link", name="swap A and B").click()
    assert field.locator("del").inner_text() == "French"
    assert page.locator("tr.fields-row tr.field").first.locator("ins").inner_text() == "English"


def test_open_a_cassette_expand_a_call_and_read_its_args(
    page: Page, site: str, tmp_path: Path
) -> None:
    page.goto(f"{site}/ui/")
    page.get_by_role("link", name="runs/quota").click()
    page.wait_for_url("**/ui/cassettes/runs/quota")
    args = page.locator('details[data-seq="1"] pre.args')
    assert not args.is_visible()
    page.locator('details[data-seq="1"] summary').click()
    assert args.is_visible()
    assert json.loads(args.inner_text()) == {"path": "docs/retry.md"}
    answer = page.locator('details[data-seq="1"] pre.answer').inner_text()
    assert json.loads(answer) == {"bytes": 812}

    faulted = page.locator("#call-4")
    assert faulted.locator(".badge").inner_text() == "quota"
    assert "QuotaExhausted" in faulted.locator(".error").inner_text()
    assert page.inner_text("#status") == "failed"
    page.screenshot(path=SHOTS / "cassette.png", full_page=True)


def test_the_list_sorts_by_a_column_link(page: Page, site: str) -> None:
    page.goto(f"{site}/ui/")
    page.get_by_role("link", name="calls", exact=True).click()
    page.wait_for_url("**/ui/?sort=calls")
    rows = page.locator("table.cassettes tbody tr")
    names = [rows.nth(i).get_attribute("data-name") for i in range(rows.count())]
    assert names == ["base", "runs/french", "runs/quota", "broken"]


def record_hostile(path: Path, tail: str) -> None:
    with fd.Deck(path, mode="record") as deck:
        deck.call("tool", "fetch", {"url": HOSTILE, "note": "x" * 40 + tail}, returns(HOSTILE))


def test_markup_in_a_cassette_is_shown_as_text_and_never_runs(page: Page, tmp_path: Path) -> None:
    root = tmp_path / "cassettes"
    root.mkdir()
    record_hostile(root / "a.jsonl", HOSTILE)
    record_hostile(root / "b.jsonl", HOSTILE + "!")
    with serving(ServerConfig(cassettes=root)) as site:
        page.goto(f"{site}/ui/cassettes/a")
        page.locator('details[data-seq="1"] summary').click()
        assert json.loads(page.inner_text('details[data-seq="1"] pre.args'))["url"] == HOSTILE
        assert json.loads(page.inner_text('details[data-seq="1"] pre.answer')) == HOSTILE
        assert page.locator("body script, body img").count() == 0
        assert page.evaluate("window.pwned") is None

        page.goto(f"{site}/ui/diff?a=a&b=b")
        # The cut is JSON-escaped text: the markup is there, its quotes escaped.
        assert "<script>window.pwned = 1</script>" in page.locator("tr.field .a").inner_text()
        assert page.locator("tr.field ins").inner_text() == "!"
        assert page.locator("body script, body img").count() == 0

        page.goto(f"{site}/ui/cassettes/%3Cscript%3Ewindow.pwned=3%3C%2Fscript%3E")
        assert "<script>window.pwned=3</script>" in page.inner_text("#reason")
        assert page.locator("body script").count() == 0
        assert page.evaluate("window.pwned") is None
        page.screenshot(path=SHOTS / "escaped.png", full_page=True)
