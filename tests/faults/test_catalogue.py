"""The catalogue of fault kinds: every kind has its words for each surface it reaches, the
docs' table is the one the catalogue makes, and ``faultdeck faults`` lists every kind."""

from __future__ import annotations

import importlib
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from faultdeck.faults import BAD_TOOL_CALL_HOWS, KINDS
from faultdeck.faults._catalogue import (
    MARKERS,
    catalogue,
    catalogue_markdown,
    main,
    reaches,
    shows,
    with_table,
)
from faultdeck.faults._kinds import SURFACES
from faultdeck.faults._shows import PARAMS, SHOWS
from tests.support import ROOT
from tests.support.children import child_env

DOCS = ROOT / "docs" / "rehearsal.md"
WORDS = "src/faultdeck/faults/_shows.py"


def test_every_kind_has_words_for_each_surface_it_reaches_and_no_other() -> None:
    problems = []
    for name, kind in KINDS.items():
        said = set(kind.shows)
        if not said:
            problems.append(f"kind {name!r} has no entry in SHOWS ({WORDS})")
            continue
        wanted = set(reaches(kind))
        missing = sorted(wanted - said - {"tool"})  # tool: read off the error when unsaid
        extra = sorted(said - wanted)
        unknown = sorted(said - set(SURFACES))
        if missing:
            problems.append(f"kind {name!r}: no words for {missing} in SHOWS ({WORDS})")
        if unknown:
            problems.append(f"kind {name!r}: {unknown} not in SURFACES {SURFACES}")
        elif extra:
            problems.append(f"kind {name!r}: words for {extra}, which it does not reach")
        if any(not text.strip() or "\n" in text for text in kind.shows.values()):
            problems.append(f"kind {name!r}: words that are empty or on several lines")
    assert problems == [], "\n".join(problems)


def test_every_entry_of_the_words_is_a_kind_that_uses_it() -> None:
    for table in (SHOWS, PARAMS):
        unknown = sorted(set(table) - set(KINDS))
        assert unknown == [], f"{unknown}: no such kind in KINDS ({WORDS})"
    for name, words in SHOWS.items():
        # A kind that brings its own words (FaultKind.shows) has no entry here too.
        assert KINDS[name].shows == words, f"kind {name!r} has its own shows and SHOWS'"
    for name, about in PARAMS.items():
        unknown = sorted(set(about) - set(KINDS[name].params))
        assert unknown == [], f"kind {name!r} has no parameter {unknown} ({WORDS})"


def test_the_sdk_classes_the_words_name_are_the_installed_sdks() -> None:
    named = {
        (m.group(1), m.group(2))
        for words in SHOWS.values()
        for text in words.values()
        for m in re.finditer(r"\b(openai|anthropic)\.([A-Z]\w+)", text)
    }
    assert named
    missing = [
        f"{sdk}.{cls}"
        for sdk, cls in sorted(named)
        if not hasattr(importlib.import_module(sdk), cls)
    ]
    assert missing == []


def test_what_an_in_process_call_raises_is_read_off_each_kind() -> None:
    entries = {item["name"]: item for item in catalogue()}
    for name, kind in KINDS.items():
        raised = entries[name]["raises"]
        if kind.error is None:
            assert raised is None, name
            assert entries[name]["in_process"].startswith("no error"), name
        else:
            assert raised is not None, f"kind {name!r}: its error cannot be made from defaults"
            assert raised["error"].startswith("fd."), name
    assert entries["timeout"]["raises"] == {"error": "fd.TransientError", "code": "timeout"}
    assert entries["bad_tool_call"]["raises"]["code_from"] == "how"
    assert entries["bad_tool_call"]["in_process"] == "fd.BadToolCall (code: the how)"
    assert entries["crash"]["in_process"] == "fd.ProcessKilled"
    # tool: the kind's own words when it has them, else what is read off its error.
    assert shows(KINDS["tool_error"])["tool"] == "fd.TransientError (code tool_error)"
    assert shows(KINDS["quota"])["tool"] == SHOWS["quota"]["tool"]


def test_parameters_say_what_they_take_from_their_checkers() -> None:
    params = {item["name"]: {p["name"]: p for p in item["params"]} for item in catalogue()}
    assert params["bad_tool_call"]["how"]["choices"] == list(BAD_TOOL_CALL_HOWS)
    assert params["bad_tool_call"]["how"]["default"] == "missing_required"
    assert params["stream_cut"]["how"]["choices"] == ["cut", "error_event"]
    assert params["stream_cut"]["after"] == {
        "name": "after",
        "required": False,
        "default": 1,
        "takes": "an integer >= 0",
        "about": PARAMS["stream_cut"]["after"],
    }
    assert params["latency"]["ms"]["required"] is True
    assert "default" not in params["latency"]["ms"]
    assert params["quota"]["retry_after"]["default"] is None
    assert params["transient"]["status"]["takes"].startswith("an HTTP status of 408")


def test_the_docs_hold_the_table_the_catalogue_makes() -> None:
    text = DOCS.read_text("utf-8")
    begin, end = text.find(MARKERS[0]), text.find(MARKERS[1])
    assert 0 <= begin < end, f"docs/rehearsal.md lacks {MARKERS[0]} … {MARKERS[1]}"
    held = text[begin : end + len(MARKERS[1])] + "\n"
    assert held == catalogue_markdown(), (
        "docs/rehearsal.md's fault table is out of date; run: "
        "python -m faultdeck.faults._catalogue --write docs/rehearsal.md"
    )


def test_the_table_names_every_kind_and_every_surface() -> None:
    table = catalogue_markdown()
    for name in KINDS:
        assert table.count(f"| `{name}` |") == 2, name
    for surface in SURFACES:
        assert f"`{surface}`" in table or surface == "tool"


def test_write_puts_the_table_between_the_markers(tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text(f"# Faults\n\nbefore\n\n{MARKERS[0]}\nold\n{MARKERS[1]}\n\nafter\n", "utf-8")
    assert main(["--write", str(doc)]) == 0
    assert doc.read_text("utf-8") == f"# Faults\n\nbefore\n\n{catalogue_markdown()}\nafter\n"
    assert main(["--write", str(doc)]) == 0  # a second run changes nothing
    assert doc.read_text("utf-8") == f"# Faults\n\nbefore\n\n{catalogue_markdown()}\nafter\n"
    with pytest.raises(ValueError, match="faults: begin"):
        with_table("no markers here", catalogue_markdown())


def faultdeck(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "faultdeck", *args],
        capture_output=True,
        text=True,
        env=child_env(COLUMNS="120"),
        timeout=120,
        check=False,
    )


def test_faults_json_lists_every_kind_with_where_it_applies_and_its_parameters() -> None:
    done = faultdeck("faults", "--format", "json")
    assert done.returncode == 0, done.stderr
    listed = json.loads(done.stdout)
    assert [item["name"] for item in listed] == list(KINDS)
    for item in listed:
        kind = KINDS[item["name"]]
        assert item["applies_to"] == sorted(kind.applies_to)
        assert [p["name"] for p in item["params"]] == list(kind.params)
        assert list(item["shows"]) == list(reaches(kind))
    assert listed == json.loads(json.dumps(catalogue()))


def test_faults_text_names_each_kind_its_choices_and_the_surfaces() -> None:
    done = faultdeck("faults")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    starts = [line.split()[0] for line in lines if line and not line.startswith(" ")]
    assert starts == list(KINDS)
    assert "one of: missing_required, wrong_type, extra_property, enum_mismatch" in done.stdout
    for surface in ("openai.chat", "openai.responses", "anthropic.messages", "http", "mcp"):
        assert f"  {surface}  " in done.stdout, surface
    assert "openai.RateLimitError" in done.stdout
    assert all(line == line.rstrip() for line in lines)


def test_faults_markdown_prints_the_docs_tables() -> None:
    done = faultdeck("faults", "--format", "markdown")
    assert done.returncode == 0, done.stderr
    assert done.stdout == catalogue_markdown()
