"""The credential table row by row, and the places a secret hides in a call.

Each row of ``SHAPES`` has plants (which must be masked) and near misses (which must stay
as they are) in tests/plants.py; the tests here run every one of them through the
redactor, the scanner and a real cassette.
"""

from __future__ import annotations

import json

import pytest

import faultdeck as fd
from faultdeck._keys.redact import NOT_SECRET_FIELDS
from faultdeck._keys.secrets import SHAPES
from tests.support import ROOT
from tests.support.plants import ALNUM, ASSIGNMENTS, HEX40, ROWS, URLSAFE, pem, rand

REDACTOR = fd.Redactor()


def mask(secret: str) -> str:
    return REDACTOR.mask(secret)


@pytest.mark.parametrize("row", sorted(ROWS))
def test_every_row_masks_its_plants(row: str) -> None:
    plants, _ = ROWS[row]
    assert plants, f"{row} has no plant"
    for plant in plants:
        out = REDACTOR.redact(plant.text)
        assert isinstance(out, str)
        assert plant.secret not in out
        assert mask(plant.secret) in out
        assert plant.pattern in REDACTOR.scan_text(plant.text)
        assert REDACTOR.redact(out) == out  # a mask never matches again
        # Mid-sentence too (a header-line shape may take the rest of the line with it).
        text = f"note: {plant.text} (rotate it)"
        assert plant.secret not in str(REDACTOR.redact(text))
        assert plant.pattern in REDACTOR.scan_text(text)
        # In a JSON line, as a cassette holds it, the scanner still finds it.
        assert plant.pattern in REDACTOR.scan_text(json.dumps({"note": plant.text}))


@pytest.mark.parametrize("row", sorted(ROWS))
def test_every_row_keeps_its_near_misses(row: str) -> None:
    _, misses = ROWS[row]
    assert misses, f"{row} has no near miss"
    for text in misses:
        assert REDACTOR.redact(text) == text, text
        assert REDACTOR.scan_text(text) == [], text


def test_the_assignment_rule_masks_labelled_values_and_keeps_look_alikes() -> None:
    plants, misses = ASSIGNMENTS
    for plant in plants:
        out = REDACTOR.redact(plant.text)
        assert isinstance(out, str)
        assert plant.secret not in out
        assert mask(plant.secret) in out
    for text in misses:
        assert REDACTOR.redact(text) == text, text
        assert REDACTOR.scan_text(text) == [], text


def test_every_row_has_a_summary_for_the_docs() -> None:
    docs = (ROOT / "docs" / "guarantees.md").read_text("utf-8")
    for shape in SHAPES:
        assert shape.summary
        assert f"`{shape.name}`" in docs, f"docs/guarantees.md does not list {shape.name}"


PAGINATION_AND_COUNTS = [
    "page_token",
    "next_page_token",
    "nextPageToken",
    "continuation_token",
    "sync_token",
    "cursor",
    "next_cursor",
    "max_tokens",
    "max_completion_tokens",
    "total_tokens",
    "prompt_tokens",
    "tokens",
]


def test_the_exceptions_are_a_fixed_list() -> None:
    for name in PAGINATION_AND_COUNTS:
        normal = "".join(part for part in name.replace("_", " ").split()).lower()
        assert normal in NOT_SECRET_FIELDS or name in ("cursor", "next_cursor")


@pytest.mark.parametrize("name", PAGINATION_AND_COUNTS)
def test_pagination_and_counting_fields_stay_readable(name: str) -> None:
    token = rand("page-" + name, URLSAFE, 48)
    value = {"items": [1, 2], name: token, "usage": {name: 12345678901234}}
    assert REDACTOR.redact(value) is value
    assert REDACTOR.findings(value) == []
    assert REDACTOR.scan_text(json.dumps(value)) == []
    text = f"{name}={token}"
    assert REDACTOR.redact(text) == text


@pytest.mark.parametrize("name", ["token", "access_token", "session_token", "api_key", "appKey"])
def test_secret_like_fields_still_mask_random_values(name: str) -> None:
    token = rand("secret-" + name, ALNUM, 40)
    assert REDACTOR.redact({name: token}) == {name: mask(token)}


def test_gcp_service_account_json_keeps_no_key() -> None:
    account = {
        "type": "service_account",
        "project_id": "demo-project",
        "private_key_id": HEX40,
        "private_key": pem("") + "\n",
        "client_email": "svc@demo-project.iam.gserviceaccount.com",
    }
    key_body = account["private_key"].splitlines()[1]
    for value in (account, json.dumps(account)):
        out = json.dumps(REDACTOR.redact(value))
        assert key_body not in out
        assert "BEGIN PRIVATE KEY" not in out
    assert HEX40 not in json.dumps(REDACTOR.redact(account))
    assert "pem_private_key" in REDACTOR.scan_text(json.dumps(account))


def test_a_mask_written_as_json_escapes_is_already_redacted() -> None:
    secret = "gh" + "p_" + rand("escaped", ALNUM, 36)
    plain = mask(secret)
    escaped = json.dumps(plain)[1:-1]  # \u00abredacted:sha256:…\u00bb
    assert escaped != plain
    assert REDACTOR.redact(escaped) == plain
    twice = json.dumps(json.dumps({"session": plain}))  # escaped once more
    out = REDACTOR.redact(twice)
    assert isinstance(out, str)
    assert plain in out
    assert "u00ab" not in out
    assert REDACTOR.findings({"session": escaped}) == []


def test_query_pairs_are_redacted_by_name() -> None:
    token = rand("query", ALNUM, 40)
    pairs = [("access_token", token), ("page_token", token), ("q", "retry budget")]
    assert REDACTOR.redact_pairs(pairs) == [
        ["access_token", mask(token)],
        ["page_token", token],
        ["q", "retry budget"],
    ]
    assert REDACTOR.redact_pairs([("api-key", "x")]) == [["api-key", mask("x")]]


def _chat_events(pieces: list[str]) -> dict[str, object]:
    events = [
        {"ms": i, "data": {"id": "chatcmpl-1", "choices": [{"index": 0, "delta": {"content": p}}]}}
        for i, p in enumerate(pieces)
    ]
    events.append({"ms": len(pieces), "data": "[DONE]"})
    return {"status": 200, "headers": {"content-type": "text/event-stream"}, "events": events}


def _joined(stream: object) -> str:
    assert isinstance(stream, dict)
    return "".join(
        e["data"]["choices"][0]["delta"]["content"]
        for e in stream["events"]
        if isinstance(e["data"], dict)
    )


@pytest.mark.parametrize("cut", [3, 10, 25, 40])
def test_a_secret_split_across_stream_events_is_masked_on_the_joined_text(cut: int) -> None:
    secret = "sk-" + "proj-" + rand("stream", URLSAFE, 40)
    text = f"your key is {secret} keep it"
    at = text.index(secret) + cut
    pieces = [text[:at], text[at : at + 7], text[at + 7 :]]
    stream = _chat_events(pieces)
    out = REDACTOR.redact_stream(stream)
    joined = _joined(out)
    assert joined == f"your key is {mask(secret)} keep it"
    dumped = json.dumps(out)
    for piece in (secret, secret[:20], secret[-20:]):
        assert piece not in dumped
    assert _joined(stream) == text  # the caller's copy is left alone
    assert REDACTOR.redact_stream(out) == out


def test_an_anthropic_stream_with_a_split_key_in_tool_json() -> None:
    secret = "AK" + "IA" + rand("aws-stream", "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16)
    text = '{"aws_key": "' + secret + '"}'
    events = [
        {
            "event": "content_block_delta",
            "data": {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": chunk},
            },
        }
        for chunk in (text[:16], text[16:22], text[22:])
    ]
    out = REDACTOR.redact_stream({"status": 200, "headers": {}, "events": events})
    assert isinstance(out, dict)
    joined = "".join(e["data"]["delta"]["partial_json"] for e in out["events"])
    assert joined == '{"aws_key": "' + mask(secret) + '"}'
    assert secret[4:] not in json.dumps(out)
