"""The call-path diff: alignment, first divergence, ignored fields, responses, renderers."""

from __future__ import annotations

import html
import json
import secrets
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import faultdeck as fd
from faultdeck import CallPathDiff, diff_recordings
from faultdeck._cassette.reader import Recording, load
from faultdeck._keys.canonical import make_key
from faultdeck.render import diff_html, diff_json, diff_text
from faultdeck.types import Change

Call = dict[str, Any]


def call(
    seq: int,
    name: str,
    args: Any,
    out: Any = None,
    *,
    kind: str = "tool",
    error: Any = None,
    stream: Any = None,
    schema: str = "v1",
) -> Call:
    line: Call = {"seq": seq, "kind": kind, "name": name}
    line["key"] = make_key(kind, name, args, schema)
    if schema != "v1":
        line["schema"] = schema
    line["args"] = args
    if error is not None:
        line["error"] = error
    elif stream is not None:
        line["stream"] = stream
    else:
        line["out"] = {"ok": seq} if out is None else out
    line["ms"] = 1.5
    return line


def cassette(path: Path, calls: list[Call], *, volatile: tuple[str, ...] = ()) -> Recording:
    header = {"faultdeck": 1, "match": "keyed", "harness": {}, "env": {}}
    header["volatile"] = list(volatile)
    lines = [header, *calls, {"end": {"calls": len(calls), "status": "ok"}}]
    path.write_text("".join(json.dumps(obj) + "\n" for obj in lines), encoding="utf-8")
    return load(path)


def eight(top_k_at_5: int = 5, *, q5: str = "retry budget") -> list[Call]:
    """Eight calls; seq 5 is a search whose top_k and query can be varied."""
    calls = []
    for seq in range(1, 9):
        if seq == 5:
            calls.append(call(5, "search_docs", {"q": q5, "top_k": top_k_at_5}))
        elif seq % 2:
            calls.append(call(seq, "chat", {"turn": seq}, {"text": f"t{seq}"}, kind="model"))
        else:
            calls.append(call(seq, "read_file", {"path": f"docs/{seq}.md"}))
    return calls


def renumber(calls: list[Call]) -> list[Call]:
    """The calls with seq 1, 2, … in list order, as a run that made them would number them."""
    return [{**c, "seq": i} for i, c in enumerate(calls, 1)]


def pair(
    tmp_path: Path,
    a: list[Call],
    b: list[Call],
    *,
    volatile_a: tuple[str, ...] = (),
    volatile_b: tuple[str, ...] = (),
) -> tuple[Recording, Recording]:
    return (
        cassette(tmp_path / "a.jsonl", a, volatile=volatile_a),
        cassette(tmp_path / "b.jsonl", b, volatile=volatile_b),
    )


def ops(diff: CallPathDiff) -> list[str]:
    return [row.op for row in diff.rows]


# The first divergence


def test_changed_argument_is_the_first_divergence_everywhere(tmp_path: Path) -> None:
    a, b = pair(tmp_path, eight(5), eight(10))
    diff = diff_recordings(a, b)

    assert ops(diff) == ["same"] * 4 + ["changed"] + ["same"] * 3
    assert diff.first == 4
    row = diff.rows[4]
    assert row.a is not None
    assert row.b is not None
    assert (row.a.seq, row.b.seq, row.a.name) == (5, 5, "search_docs")
    assert row.changes == (Change("args.top_k", 5, 10),)
    assert not diff.identical
    assert diff.counts == {"same": 7, "changed": 1, "removed": 0, "added": 0}
    expected = (
        "first divergence at seq 5 (after 4 agreeing calls): tool search_docs: args.top_k 5 → 10"
    )
    assert diff.first_divergence() == expected

    text = diff_text(diff)
    assert expected in text
    assert str(a.path) in text
    assert str(b.path) in text
    assert "args.top_k: 5 → 10" in text
    assert "8 aligned calls: 7 same, 1 changed, 0 removed, 0 added" in text

    data = diff_json(diff)
    json.dumps(data)  # JSON-ready
    assert data["identical"] is False
    assert data["counts"] == diff.counts
    first = data["first"]
    assert (first["seq_a"], first["seq_b"]) == (5, 5)
    assert (first["kind"], first["name"], first["op"]) == ("tool", "search_docs", "changed")
    assert first["changes"] == [{"path": "args.top_k", "a": 5, "b": 10}]
    assert first["agreeing"] == 4
    assert first["text"] == expected
    assert first["key_a"] != first["key_b"]
    assert [r["index"] for r in data["rows"]] == [4]


def test_several_changes_are_counted_in_the_one_line(tmp_path: Path) -> None:
    a, b = pair(tmp_path, eight(5), eight(10, q5="retry"))
    line = diff_recordings(a, b).first_divergence()
    assert line.endswith('args.q "retry budget" → "retry" (+1 more field)')


def test_identical_runs_have_no_divergence(tmp_path: Path) -> None:
    a, b = pair(tmp_path, eight(), eight())
    diff = diff_recordings(a, b, responses=True)

    assert diff.identical is True
    assert diff.first is None
    assert set(ops(diff)) == {"same"}
    assert diff.first_divergence() == "no divergence: 8 calls agree"
    assert diff.counts == {"same": 8, "changed": 0, "removed": 0, "added": 0}
    text = diff_text(diff)
    assert "no divergence: 8 calls agree" in text
    assert "search_docs" not in text  # no rows listed when nothing differs
    data = diff_json(diff)
    assert (data["identical"], data["first"], data["rows"]) == (True, None, [])


def test_seq_order_not_file_order_aligns_concurrent_calls(tmp_path: Path) -> None:
    calls = eight()
    # The same run, but calls 2 and 3 finished in the other order.
    swapped = [calls[0], calls[2], calls[1], *calls[3:]]
    a, b = pair(tmp_path, calls, swapped)
    assert diff_recordings(a, b, responses=True).identical


# Ignored fields


def test_ignored_and_volatile_fields_are_never_compared(tmp_path: Path) -> None:
    def run(trace: str, session: str, created: int) -> list[Call]:
        calls = eight()
        args = {"q": "x", "trace_id": trace, "ctx": {"trace_id": trace, "session": session}}
        calls[2] = call(
            3, "search_docs", args, {"hits": [1], "created": created, "session": session}
        )
        return calls

    # B's header declares "session" volatile; the caller ignores trace_id.
    a, b = pair(tmp_path, run("t-1", "s-1", 11), run("t-2", "s-2", 22), volatile_b=("session",))
    assert a.entries[2].key != b.entries[2].key

    diff = diff_recordings(a, b, responses=True, ignore=("trace_id", "created"))
    assert diff.identical, diff_text(diff)
    assert diff.ignored == ("created", "session", "trace_id")
    assert "ignored fields: created, session, trace_id" in diff_text(diff)

    # Without the ignore list the trace ids are a real difference, paired as a change.
    plain = diff_recordings(a, b)
    assert ops(plain)[2] == "changed"
    assert {c.path for c in plain.rows[2].changes} == {"args.trace_id", "args.ctx.trace_id"}


def test_ignored_fields_do_not_disturb_alignment(tmp_path: Path) -> None:
    a_calls = [
        call(1, "search", {"q": 1, "trace_id": "a"}),
        call(2, "search", {"q": 2, "trace_id": "b"}),
    ]
    b_calls = [call(1, "search", {"q": 2, "trace_id": "c"})]
    a, b = pair(tmp_path, a_calls, b_calls)
    diff = diff_recordings(a, b, ignore=["trace_id"])
    # Aligned by what was asked: the q=2 calls agree and the q=1 call is the one missing.
    assert ops(diff) == ["removed", "same"]
    assert diff.rows[0].a is a.entries[0]


# Inserted, removed, renamed calls


def test_an_inserted_call_is_one_added_row(tmp_path: Path) -> None:
    b_calls = eight()
    b_calls.insert(3, call(4, "web_search", {"q": "extra"}))
    a, b = pair(tmp_path, eight(), renumber(b_calls))
    diff = diff_recordings(a, b)

    assert ops(diff) == ["same"] * 3 + ["added"] + ["same"] * 5
    row = diff.rows[3]
    assert row.a is None
    assert row.b is not None
    assert row.b.name == "web_search"
    assert diff.counts == {"same": 8, "changed": 0, "removed": 0, "added": 1}
    assert diff.first_divergence() == (
        "first divergence at seq 4 of B (after 3 agreeing calls): tool web_search only in B"
    )
    assert diff_json(diff)["rows"][0]["seq_a"] is None
    assert "+     ·     4  tool web_search" in diff_text(diff)
    assert "      5     6  tool search_docs" in diff_text(diff)  # later calls align by key


def test_a_missing_call_is_one_removed_row(tmp_path: Path) -> None:
    b_calls = eight()
    del b_calls[5]
    a, b = pair(tmp_path, eight(), renumber(b_calls))
    diff = diff_recordings(a, b)

    assert ops(diff) == ["same"] * 5 + ["removed"] + ["same"] * 2
    assert diff.rows[5].b is None
    assert diff.first_divergence().startswith("first divergence at seq 6 of A (after 5 agreeing")
    assert diff.first_divergence().endswith("tool read_file only in A")


def test_a_renamed_tool_is_removed_and_added_not_changed(tmp_path: Path) -> None:
    b_calls = eight()
    b_calls[4] = call(5, "search_docs_v2", {"q": "retry budget", "top_k": 5})
    a, b = pair(tmp_path, eight(), b_calls)
    diff = diff_recordings(a, b)

    assert ops(diff) == ["same"] * 4 + ["removed", "added"] + ["same"] * 3
    assert diff.counts["changed"] == 0


def test_pairs_by_kind_and_name_in_order_around_insertions(tmp_path: Path) -> None:
    a_calls = [call(1, "t", {}), call(2, "search", {"q": 1}), call(3, "end", {})]
    b_calls = [
        call(1, "t", {}),
        call(2, "fetch", {"u": 1}),
        call(3, "search", {"q": 2}),
        call(4, "end", {}),
    ]
    a, b = pair(tmp_path, a_calls, b_calls)
    diff = diff_recordings(a, b)
    assert ops(diff) == ["same", "added", "changed", "same"]
    assert diff.rows[2].changes == (Change("args.q", 1, 2),)
    assert diff.first_divergence().startswith("first divergence at seq 2 of B")


def test_a_new_schema_version_is_a_change(tmp_path: Path) -> None:
    b_calls = eight()
    b_calls[1] = call(2, "read_file", {"path": "docs/2.md"}, schema="v2")
    a, b = pair(tmp_path, eight(), b_calls)
    diff = diff_recordings(a, b)
    assert diff.rows[1].changes == (Change("schema", "v1", "v2"),)


# Responses


def test_responses_compare_outputs_only_when_asked(tmp_path: Path) -> None:
    b_calls = eight()
    b_calls[4] = call(5, "search_docs", {"q": "retry budget", "top_k": 5}, {"hits": ["b.md"]})
    a_calls = eight()
    a_calls[4] = call(5, "search_docs", {"q": "retry budget", "top_k": 5}, {"hits": ["a.md"]})
    a, b = pair(tmp_path, a_calls, b_calls)

    assert diff_recordings(a, b).identical
    diff = diff_recordings(a, b, responses=True)
    assert ops(diff) == ["same"] * 4 + ["changed"] + ["same"] * 3
    assert diff.rows[4].changes == (Change("out.hits[0]", "a.md", "b.md"),)
    assert diff.first_divergence().endswith('out.hits[0] "a.md" → "b.md"')
    assert diff_json(diff)["responses"] is True


def test_an_error_instead_of_an_output_is_a_result_change(tmp_path: Path) -> None:
    b_calls = eight()
    b_calls[4] = call(
        5, "search_docs", {"q": "retry budget", "top_k": 5}, error={"type": "TimeoutError"}
    )
    a, b = pair(tmp_path, eight(), b_calls)
    assert diff_recordings(a, b).identical
    diff = diff_recordings(a, b, responses=True)
    assert diff.rows[4].changes == (Change("result", "out", "error"),)


def test_streams_compare_event_data_without_timings_or_ids(tmp_path: Path) -> None:
    def stream(cid: str, ms: float, text: str) -> dict[str, Any]:
        data = json.dumps({"id": cid, "delta": text})
        events = [{"ms": ms, "data": data}, {"ms": ms * 2, "data": "[DONE]"}]
        return {"status": 200, "headers": {"date": f"day {ms}"}, "events": events}

    def run(cid: str, ms: float, text: str) -> list[Call]:
        return [call(1, "chat", {"m": 1}, kind="model", stream=stream(cid, ms, text))]

    a, b = pair(tmp_path, run("chatcmpl-AAAA1111", 3.0, "hi"), run("chatcmpl-BBBB2222", 9.0, "hi"))
    # The HTTP date header is wall-clock text the recorder keeps; the caller ignores it.
    assert diff_recordings(a, b, responses=True, ignore=("date",)).identical
    dated = diff_recordings(a, b, responses=True)
    assert dated.rows[0].changes == (Change("stream.headers.date", "day 3.0", "day 9.0"),)
    (tmp_path / "c").mkdir()
    _, c = pair(tmp_path / "c", [], run("chatcmpl-CCCC3333", 1.0, "yo"))
    diff = diff_recordings(a, c, responses=True, ignore=("date",))
    assert diff.rows[0].changes == (Change("stream.events[0].data.delta", "hi", "yo"),)


def _record_agent(path: Path, answer: str) -> None:
    """An agent whose provider hands out random ids that it echoes in the next call."""
    completion = f"chatcmpl-{secrets.token_hex(8)}"
    tool_call = f"call_{secrets.token_hex(8)}"

    def chat() -> dict[str, Any]:
        return {"id": completion, "tool_call": {"id": tool_call, "name": "read_file"}}

    with fd.Deck(path, mode="record") as deck:
        deck.call("model", "chat", {"messages": [{"role": "user", "content": "fix"}]}, chat)
        args = {"path": "docs/a.md", "tool_call_id": tool_call}
        deck.call("tool", "read_file", args, lambda: {"text": answer, "for": tool_call})
        summary = {"messages": [{"role": "tool", "tool_call_id": tool_call}]}
        deck.call("model", "chat", summary, lambda: {"id": completion, "text": "done"})


def test_random_provider_ids_compare_equal_with_responses(tmp_path: Path) -> None:
    _record_agent(tmp_path / "a.jsonl", "retry budget is 10%")
    _record_agent(tmp_path / "b.jsonl", "retry budget is 10%")
    _record_agent(tmp_path / "c.jsonl", "retry budget is 20%")
    a, b, c = (load(tmp_path / f"{n}.jsonl") for n in "abc")
    assert a.entries[0].value["id"] != b.entries[0].value["id"]  # the ids really differ

    same = diff_recordings(a, b, responses=True)
    assert same.identical, diff_text(same)
    assert same.counts["same"] == 3

    changed = diff_recordings(a, c, responses=True)
    assert ops(changed) == ["same", "changed", "same"]
    assert changed.rows[1].changes == (
        Change("out.text", "retry budget is 10%", "retry budget is 20%"),
    )


# Renderers


class _TagChecker(HTMLParser):
    VOID = frozenset({"meta", "br", "hr", "img", "input", "link"})

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.errors: list[str] = []
        self.seen: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.seen.add(tag)
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1:]}")
        else:
            self.stack.pop()


def test_html_is_self_contained_well_formed_and_escaped(tmp_path: Path) -> None:
    a_calls, b_calls = eight(5), eight(10)
    a_calls[2] = call(3, "chat", {"turn": "<i>it</i>"}, kind="model")
    b_calls[2] = call(3, "chat", {"turn": "<b>bold</b> & <script>x</script>"}, kind="model")
    a, b = pair(tmp_path, a_calls, b_calls)
    diff = diff_recordings(a, b)
    page = diff_html(diff)

    checker = _TagChecker()
    checker.feed(page)
    checker.close()
    assert checker.errors == []
    assert checker.stack == []
    assert {"html", "head", "style", "body", "table", "tr", "td"} <= checker.seen
    assert "script" not in checker.seen
    for forbidden in ("http://", "https://", "<script", "src=", "@import", "url("):
        assert forbidden not in page.lower()
    assert "&lt;b&gt;bold&lt;/b&gt; &amp; &lt;script&gt;" in page
    assert "&lt;i&gt;it&lt;/i&gt;" in page
    assert "<b>" not in page
    assert "<i>" not in page
    assert html.escape(str(a.path)) in page
    assert html.escape(str(b.path)) in page
    assert html.escape(diff.first_divergence()) in page
    assert 'class="first"' in page
    assert page.count('<table class="fields">') == 2  # one per changed call


def test_html_of_identical_runs_says_so(tmp_path: Path) -> None:
    a, b = pair(tmp_path, eight(), eight())
    page = diff_html(diff_recordings(a, b))
    assert "no divergence: 8 calls agree" in page
    assert 'class="verdict ok"' in page


def test_text_lines_stay_within_width_for_long_values(tmp_path: Path) -> None:
    long_a = {"doc": "x" * 5000, "nested": {"deep": ["y" * 3000]}}
    long_b = {"doc": "z" * 5000, "nested": {"deep": ["w" * 3000]}}
    a_calls, b_calls = eight(), eight()
    a_calls[3] = call(4, "read_file", long_a)
    b_calls[3] = call(4, "read_file", long_b)
    a, b = pair(tmp_path, a_calls, b_calls)
    diff = diff_recordings(a, b)
    for width in (60, 100, 140):
        text = diff_text(diff, width=width)
        assert "args.doc" in text
        assert "args.nested.deep[0]" in text
        assert max(len(line) for line in text.splitlines()) <= width


def test_text_folds_agreeing_calls_beyond_the_context(tmp_path: Path) -> None:
    a, b = pair(tmp_path, eight(5), eight(10))
    text = diff_text(diff_recordings(a, b), context=1)
    assert "  … 3 agreeing calls" in text
    assert "  … 2 agreeing calls" in text
    rows = [line for line in text.splitlines() if line[:1] in (" ", "~") and "tool:" in line]
    assert [line.split()[1] for line in rows] == ["4", "5", "6"]


def test_preview_pair_shows_where_long_strings_differ() -> None:
    from faultdeck._keys.fields import preview_pair

    base = "Make the agent loop respect the retry budget" + " and keep going" * 10
    a, b = preview_pair(base + " once.", base + " twice.", width=40)
    assert a.startswith("…")
    assert b.startswith("…")
    assert "once" in a
    assert "twice" in b
    assert len(a) <= 40
    assert len(b) <= 40
    assert preview_pair("short", "other") == ('"short"', '"other"')
    assert preview_pair(5, 10) == ("5", "10")
