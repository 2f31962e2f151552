"""Previews of two differing values: long strings as windows around where they part, the
differing middle marked, whole words, escaped as JSON, never wider than asked."""

from __future__ import annotations

import pytest

from faultdeck._keys.fields import common_ends, cut_pair, marked_pair, preview, preview_pair

PROMPT = "You are a careful agent. " * 40


def test_common_ends_never_overlap() -> None:
    assert common_ends("retry budget", "retry limit") == (6, 1)
    assert common_ends("abc", "abXc") == (2, 1)
    assert common_ends("aaa", "aa") == (2, 0)
    assert common_ends("", "x") == (0, 0)
    assert common_ends("same", "same") == (4, 0)
    a, b = PROMPT + "once." + PROMPT, PROMPT + "twice." + PROMPT
    assert common_ends(a, b) == (len(PROMPT), len(PROMPT) + 3)  # "ce." is shared too


@pytest.mark.parametrize("width", [8, 12, 20, 40, 72, 200, 1200])
@pytest.mark.parametrize(
    ("a", "b"),
    [
        (PROMPT + "Answer in English.", PROMPT + "Answer in French."),
        ("Answer in English. " + PROMPT, "Answer in French. " + PROMPT),
        (PROMPT + "stop.\nThen" + PROMPT, PROMPT + "stop and then" + PROMPT),
        (PROMPT, PROMPT + "!"),
        ("x" * 5000, "z" * 5000),
    ],
)
def test_marked_windows_fit_the_width_and_open_alike(a: str, b: str, width: int) -> None:
    shown_a, shown_b = marked_pair(a, b, width)
    assert len(shown_a) <= max(width, 12)
    assert len(shown_b) <= max(width, 12)
    assert "\n" not in shown_a + shown_b
    inserted = b.startswith(a)  # A has no middle: nothing marked on its side
    assert shown_a.count("[-") == (0 if inserted else 1)
    assert shown_b.count("{+") == 1
    at = shown_b.index("{+")
    assert shown_a[:at] == shown_b[:at]


def test_the_middle_holds_whole_words() -> None:
    a = PROMPT + "Respect the retry budget.\nDo not retry." + PROMPT
    b = PROMPT + "Respect the retry budget and do not retry." + PROMPT
    shown_a, shown_b = marked_pair(a, b, 60)
    assert "budget[-.\\nDo-] not" in shown_a
    assert "budget{+ and do+} not" in shown_b
    assert marked_pair(PROMPT + "three tries", PROMPT + "thirty tries", 40) == (
        '…eful agent. [-three-] tries"',
        '…eful agent. {+thirty+} tries"',
    )


def test_a_long_token_is_cut_where_it_parts_not_at_its_start() -> None:
    a, b = "x" * 3000 + "END", "x" * 3000 + "FIN"
    shown_a, shown_b = marked_pair(a, b, 30)
    assert shown_a.endswith('x[-END-]"')
    assert shown_b.endswith('x{+FIN+}"')


def test_an_insertion_marks_only_the_side_that_has_it() -> None:
    shown_a, shown_b = marked_pair(PROMPT, PROMPT + "!", 40)
    assert shown_a.endswith('agent. "')  # no empty [--]
    assert shown_b.endswith('agent. {+!+}"')


def test_a_long_middle_is_cut_with_its_start_in_view() -> None:
    a, b = PROMPT + "A" * 500, PROMPT + "B" * 500
    shown_a, shown_b = marked_pair(a, b, 40)
    assert shown_a.endswith("AAAA…-]")
    assert shown_b.endswith("BBBB…+}")
    assert "agent. [-A" in shown_a


def test_cut_pair_gives_the_pieces_and_where_they_part() -> None:
    cut_a, cut_b = cut_pair("the retry budget is 3", "the retry budget is 35", 100)
    # They part at index 21 (b goes on); the middles hold the whole number.
    assert cut_a == ('"the retry budget is ', "3", '"', 21, 21)
    assert cut_b == ('"the retry budget is ', "35", '"', 21, 22)
    cut_a, _ = cut_pair(PROMPT + 'say "hi"', PROMPT + 'say "yo"', 30)
    assert cut_a.before.startswith("…")
    assert cut_a.middle == "hi"
    assert cut_a.after == '\\""'


def test_preview_pair_shows_fitting_values_whole() -> None:
    assert preview_pair("retry budget", "retry limit") == ('"retry budget"', '"retry limit"')
    assert preview_pair(5, 10) == ("5", "10")
    assert preview_pair({"a": 1}, "x") == ('{"a":1}', '"x"')
    mask = "«redacted:sha256:56026ee8»"
    assert preview_pair(mask, "«redacted:sha256:0123abcd»")[0] == f'"{mask}"'


def test_preview_pair_marks_long_strings_at_every_width() -> None:
    a, b = PROMPT + "Answer in English.", PROMPT + "Answer in French."
    for width in (20, 40, 72, 200):
        shown_a, shown_b = preview_pair(a, b, width)
        assert "[-English-]" in shown_a
        assert "{+French+}" in shown_b
        assert len(shown_a) <= width
        assert len(shown_b) <= width
    # A single value is only cut at the end: the change there is lost, hence the pair.
    assert "English" not in preview(a, 40)
