"""A long string's edit stays in view: a window around the first differing character on both
sides, the change marked, at any width, in text (terminal or pipe) and in HTML."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

import faultdeck as fd
from faultdeck.cli import main
from tests.support.calls import returns

FILLER = "You are a careful agent that fixes one bug at a time. " * 12
RULE = "Respect the retry budget.\nDo not retry after a 429 without waiting."
TAIL = "Keep every answer short. " * 12 + "Answer in English."

# Where the edit is → (the prompt in A, the prompt in B, A's marked middle, B's).
EDITS = {
    "start": (
        "You are a careful agent. " + FILLER + RULE,
        "You are a reckless agent. " + FILLER + RULE,
        "[-careful-]",
        "{+reckless+}",
    ),
    "middle": (
        FILLER + RULE + " " + TAIL,
        FILLER + RULE.replace("budget.\nDo", "budget and do") + " " + TAIL,
        "[-.\\nDo-]",
        "{+ and do+}",
    ),
    "end": (
        FILLER + RULE + " " + TAIL,
        FILLER + RULE + " " + TAIL.replace("English", "French"),
        "[-English-]",
        "{+French+}",
    ),
}


def record(path: Path, prompt: str) -> Path:
    """A three-call run whose model call carries ``prompt`` as its system message."""
    messages = [{"role": "system", "content": prompt}, {"role": "user", "content": "fix it"}]
    with fd.Deck(path, mode="record") as deck:
        deck.call("tool", "read_file", {"path": "docs/retry.md"}, returns({"bytes": 812}))
        deck.call("model", "chat", {"messages": messages}, returns({"text": "done"}))
        deck.call("tool", "run_tests", {"target": "tests/"}, returns({"passed": 12}))
    return path


def pair(tmp_path: Path, where: str) -> tuple[Path, Path]:
    a, b, _, _ = EDITS[where]
    return record(tmp_path / "a.jsonl", a), record(tmp_path / "b.jsonl", b)


def cli_diff(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    *args: str,
    columns: int,
    terminal: bool,
) -> str:
    monkeypatch.setenv("COLUMNS", str(columns))
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    # rich decides terminal or pipe from this, whatever pytest did to stdout.
    monkeypatch.setenv("TTY_COMPATIBLE", "1" if terminal else "0")
    assert main(["diff", *args]) == 1
    return capsys.readouterr().out


def side_lines(text: str) -> tuple[str, str]:
    """The ``A: …`` and ``B: …`` lines under the changed field."""
    a = [line.strip() for line in text.splitlines() if line.strip().startswith("A: ")]
    b = [line.strip() for line in text.splitlines() if line.strip().startswith("B: ")]
    paths = [line for line in a + b if line.endswith(".jsonl")]
    a = [line for line in a if line not in paths]
    b = [line for line in b if line not in paths]
    assert len(a) == 1, text
    assert len(b) == 1, text
    return a[0][3:], b[0][3:]


@pytest.mark.parametrize("where", EDITS)
@pytest.mark.parametrize(
    ("columns", "terminal"), [(80, True), (100, True), (200, True), (80, False)]
)
def test_cli_text_shows_the_edit_of_a_long_prompt(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    where: str,
    columns: int,
    terminal: bool,
) -> None:
    a, b = pair(tmp_path, where)
    text = cli_diff(monkeypatch, capsys, str(a), str(b), columns=columns, terminal=terminal)
    if terminal:
        assert max(len(line) for line in text.splitlines()) <= columns
    assert "args.messages[0].content:" in text
    shown_a, shown_b = side_lines(text)
    _, _, marked_a, marked_b = EDITS[where]
    assert marked_a in shown_a
    assert marked_b in shown_b
    assert "{+" not in shown_a
    assert "[-" not in shown_b
    # Both windows open on the same shared text, so the marks stand in one column.
    assert shown_a.index("[-") == shown_b.index("{+")
    assert shown_a[: shown_a.index("[-")] == shown_b[: shown_b.index("{+")]
    if where == "end":
        assert shown_a.endswith('-]."')  # the string's own end, not a cut
        assert shown_b.endswith('+}."')
    if where == "start":
        assert shown_a.startswith('"You are a [-')


def test_the_character_where_the_strings_part_is_named(tmp_path: Path) -> None:
    a, b = pair(tmp_path, "middle")
    prompt_a, prompt_b, _, _ = EDITS["middle"]
    at = prompt_a.index("budget.") + len("budget") + 1
    text = fd.render.diff_text(fd.diff_recordings(fd.load(a), fd.load(b)), width=120)
    assert (
        f"args.messages[0].content: differs at character {at:,} "
        f"({len(prompt_a):,} characters in A, {len(prompt_b):,} in B)"
    ) in text
    narrow = fd.render.diff_text(fd.diff_recordings(fd.load(a), fd.load(b)), width=80)
    assert f"args.messages[0].content: differs at character {at:,}\n" in narrow


@pytest.mark.parametrize("width", [40, 60, 80, 100, 200])
def test_api_text_marks_the_edit_at_every_width(tmp_path: Path, width: int) -> None:
    a, b = pair(tmp_path, "middle")
    text = fd.render.diff_text(fd.diff_recordings(fd.load(a), fd.load(b)), width=width)
    assert max(len(line) for line in text.splitlines()) <= width
    shown_a, shown_b = side_lines(text)
    assert "[-.\\nDo-]" in shown_a
    assert "{+ and do+}" in shown_b
    # No raw newline from the prompt ever breaks a line of the diff.
    assert all(not line.startswith("Do not") for line in text.splitlines())


def test_the_first_divergence_line_fits_and_names_the_field(tmp_path: Path) -> None:
    a, b = pair(tmp_path, "end")
    diff = fd.diff_recordings(fd.load(a), fd.load(b))
    wide = fd.render.diff_text(diff, width=200).splitlines()
    first = next(line for line in wide if line.startswith("first divergence"))
    assert "model chat: args.messages[0].content" in first
    assert "[-English-]" in first
    assert "{+French+}" in first
    narrow = fd.render.diff_text(diff, width=80).splitlines()
    at = next(i for i, line in enumerate(narrow) if line.startswith("first divergence"))
    assert narrow[at] == "first divergence at seq 2 (after 1 agreeing call):"
    assert narrow[at + 1] == "  model chat: args.messages[0].content"


def test_short_values_stay_on_one_line(tmp_path: Path) -> None:
    def run(path: Path, q: str, top_k: int) -> Path:
        with fd.Deck(path, mode="record") as deck:
            deck.call("tool", "search", {"q": q, "top_k": top_k}, returns([]))
        return path

    a = run(tmp_path / "a.jsonl", "retry budget", 5)
    b = run(tmp_path / "b.jsonl", "retry limit", 10)
    text = fd.render.diff_text(fd.diff_recordings(fd.load(a), fd.load(b)), width=80)
    assert '              args.q: "retry budget" → "retry limit"\n' in text
    assert "              args.top_k: 5 → 10\n" in text


def cells(page: str, tag: str) -> list[str]:
    return re.findall(rf"<{tag}>(.*?)</{tag}>", page, flags=re.DOTALL)


@pytest.mark.parametrize("where", EDITS)
def test_html_marks_the_differing_middle_and_escapes_everything(tmp_path: Path, where: str) -> None:
    prompt_a, prompt_b, marked_a, marked_b = EDITS[where]
    dangerous = ' <script>alert("x")</script> & <b>'
    a = record(tmp_path / "a.jsonl", prompt_a + dangerous)
    b = record(tmp_path / "b.jsonl", prompt_b + dangerous)
    page = fd.render.diff_html(fd.diff_recordings(fd.load(a), fd.load(b)))

    assert cells(page, "del") == [html.escape(marked_a[2:-2])]
    assert cells(page, "ins") == [html.escape(marked_b[2:-2])]
    assert "<script" not in page
    assert "<b>" not in page
    assert "&lt;script&gt;alert(\\&quot;x\\&quot;)&lt;/script&gt; &amp; &lt;b&gt;" in page
    # The shared text around the change is plain, on both sides alike.
    field = re.search(r'<table class="fields">.*?</table>', page, flags=re.DOTALL)
    assert field is not None
    a_cell, b_cell = re.findall(r"<td>([^<]*<(?:del|ins)>.*?)</td>", field.group(0))
    before_a, _, rest_a = a_cell.partition("<del>")
    before_b, _, rest_b = b_cell.partition("<ins>")
    assert before_a == before_b
    assert rest_a.partition("</del>")[2] == rest_b.partition("</ins>")[2]
    if where == "start":
        assert before_a == html.escape('"You are a ')
    else:
        assert before_a.startswith("…")


def test_html_names_where_the_strings_part(tmp_path: Path) -> None:
    a, b = pair(tmp_path, "end")
    prompt_a, prompt_b, _, _ = EDITS["end"]
    page = fd.render.diff_html(fd.diff_recordings(fd.load(a), fd.load(b)))
    at = prompt_a.index("English") + 1
    assert (
        f"<small>differs at character {at:,} ({len(prompt_a):,} characters in A, "
        f"{len(prompt_b):,} in B)</small>"
    ) in page


def test_an_insertion_marks_only_the_side_that_has_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # B adds words where A has none: A's window shows nothing marked, not an empty [--].
    a = record(tmp_path / "a.jsonl", FILLER + "Answer in one short sentence.")
    b = record(tmp_path / "b.jsonl", FILLER + "Answer in one short sentence, in French.")
    text = cli_diff(monkeypatch, capsys, str(a), str(b), columns=100, terminal=False)
    shown_a, shown_b = side_lines(text)
    assert "[-" not in shown_a
    assert shown_a.endswith('short sentence."')
    assert shown_b.endswith('short sentence{+, in French+}."')
