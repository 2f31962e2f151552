"""Tests for faultdeck._keys.redact: masks, dropped credential fields, findings and scans.

Planted secrets are assembled from pieces at run time so that no credential-shaped literal
sits in this file.
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import string
from dataclasses import dataclass

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from faultdeck._keys.redact import (
    CREDENTIAL_FIELDS,
    MASK_PREFIX,
    Finding,
    Redactor,
    patterns,
)

ALNUM = string.ascii_letters + string.digits
UPPER_DIGITS = string.ascii_uppercase + string.digits
URLSAFE = ALNUM + "_-"
B64 = ALNUM + "+/"


def rand(alphabet: str, n: int, seed: int) -> str:
    """Deterministic random-looking text; guaranteed to mix letters and digits."""
    rng = random.Random(seed)
    body = "".join(rng.choice(alphabet) for _ in range(n - 2))
    return body + "7" + ("q" if "q" in alphabet else "Q")


def expected_mask(secret: str) -> str:
    return "«redacted:sha256:" + hashlib.sha256(secret.encode("utf-8")).hexdigest()[:8] + "»"


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


@dataclass(frozen=True)
class Plant:
    """A secret as it appears in text (``planted``) and the part that must be masked."""

    pattern: str
    planted: str
    secret: str

    @property
    def exact(self) -> bool:
        return self.planted == self.secret


def _jwt() -> str:
    header = b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    payload = b64url(json.dumps({"sub": "user-1234", "iat": 1700000000}).encode())
    return header + "." + payload + "." + rand(URLSAFE, 43, 11)


def _pem(kind: str) -> str:
    body = "\n".join(rand(B64, 64, 20 + i) for i in range(5))
    return (
        "-----BEGIN "
        + kind
        + "PRIVATE KEY-----\n"
        + body
        + "\n-----END "
        + kind
        + "PRIVATE KEY-----"
    )


def _exact(pattern: str, secret: str) -> Plant:
    return Plant(pattern, secret, secret)


AWS_SECRET = rand(B64, 40, 5)
BEARER_TOKEN = rand(ALNUM + "._~", 40, 12)
CLIENT_SECRET = rand(ALNUM, 32, 22)

PLANTS: list[Plant] = [
    _exact("openai_key", "sk-" + rand(ALNUM, 48, 1)),
    _exact("openai_key", "sk-" + "proj-" + rand(URLSAFE, 120, 2)),
    _exact("openai_key", "sk-" + "svcacct-" + rand(URLSAFE, 80, 3)),
    _exact("openai_key", "sk-" + "admin-" + rand(URLSAFE, 60, 4)),
    _exact("anthropic_key", "sk-" + "ant-" + "api03-" + rand(URLSAFE, 93, 6) + "AA"),
    _exact("aws_access_key_id", "AK" + "IA" + rand(UPPER_DIGITS, 16, 7)),
    _exact("aws_access_key_id", "AS" + "IA" + rand(UPPER_DIGITS, 16, 8)),
    Plant("aws_secret_access_key", "aws_secret_access_key=" + AWS_SECRET, AWS_SECRET),
    Plant("aws_secret_access_key", '"SecretAccessKey": "' + AWS_SECRET + '"', AWS_SECRET),
    Plant("aws_secret_access_key", "AWS_SECRET_ACCESS_KEY = " + AWS_SECRET, AWS_SECRET),
    _exact("github_token", "gh" + "p_" + rand(ALNUM, 36, 9)),
    _exact("github_token", "gh" + "s_" + rand(ALNUM, 36, 10)),
    _exact("github_token", "github" + "_pat_" + rand(ALNUM, 22, 13) + "_" + rand(ALNUM, 59, 14)),
    _exact("slack_token", "xo" + "xb-" + "123456789012-" + "1234567890123-" + rand(ALNUM, 24, 15)),
    _exact("slack_token", "xa" + "pp-" + "1-A0" + rand(UPPER_DIGITS, 9, 16) + "-" + "1234567"),
    _exact(
        "slack_webhook",
        "https://hooks.slack.com/services/T"
        + rand(UPPER_DIGITS, 8, 17)
        + "/B"
        + rand(UPPER_DIGITS, 8, 18)
        + "/"
        + rand(ALNUM, 24, 19),
    ),
    _exact("google_api_key", "AI" + "za" + rand(URLSAFE, 35, 21)),
    _exact("jwt", _jwt()),
    _exact("pem_private_key", _pem("RSA ")),
    _exact("pem_private_key", _pem("")),
    _exact("pem_private_key", _pem("OPENSSH ")),
    Plant("bearer", "Bearer " + BEARER_TOKEN, BEARER_TOKEN),
    Plant("bearer", "authorization: bearer " + BEARER_TOKEN, BEARER_TOKEN),
    Plant("secret_assignment", "client_secret=" + CLIENT_SECRET, CLIENT_SECRET),
    Plant("secret_assignment", '{"password": "' + CLIENT_SECRET + '"}', CLIENT_SECRET),
    Plant("secret_assignment", "refresh_token: " + CLIENT_SECRET, CLIENT_SECRET),
]

BUILTIN_NAMES = {
    "secret_assignment",
    "openai_key",
    "anthropic_key",
    "aws_access_key_id",
    "aws_secret_access_key",
    "github_token",
    "slack_token",
    "slack_webhook",
    "google_api_key",
    "jwt",
    "pem_private_key",
    "bearer",
}


def plant_id(plant: Plant) -> str:
    return plant.pattern + ":" + plant.planted[:12].replace("\n", " ")


def nested(text: str) -> dict[str, object]:
    """Dict in a list in a dict, the text at ``out.items[1].note``."""
    return {"kind": "tool", "out": {"items": [{"id": 1}, {"note": text, "n": 3}]}}


@pytest.fixture
def r() -> Redactor:
    return Redactor()


def test_the_plants_here_cover_the_first_patterns() -> None:
    # Every row of the table has its own plants in tests/plants.py; these cover the
    # patterns the property tests below draw from.
    assert {p.name for p in patterns()} >= BUILTIN_NAMES
    assert {p.pattern for p in PLANTS} == BUILTIN_NAMES


def test_mask_format(r: Redactor) -> None:
    assert MASK_PREFIX == "«redacted:sha256:"
    assert r.mask("abc") == MASK_PREFIX + hashlib.sha256(b"abc").hexdigest()[:8] + "»"
    assert r.mask("pässword") == expected_mask("pässword")


@pytest.mark.parametrize("plant", PLANTS, ids=plant_id)
def test_planted_secret_is_masked_in_nested_structure(r: Redactor, plant: Plant) -> None:
    text = "Config dump follows:\n" + plant.planted + "\n(end of config) thanks!"
    value = nested(text)
    redacted = r.redact(value)
    dumped = json.dumps(redacted, ensure_ascii=False)
    assert plant.secret not in dumped
    assert MASK_PREFIX in dumped
    assert isinstance(redacted, dict)
    note = redacted["out"]["items"][1]["note"]
    assert note.startswith("Config dump follows:\n")
    assert note.endswith("\n(end of config) thanks!")
    assert expected_mask(plant.secret) in note
    if plant.exact:
        assert note == text.replace(plant.secret, expected_mask(plant.secret))
    # Siblings that did not change are the same objects.
    assert redacted["out"]["items"][0] is value["out"]["items"][0]  # type: ignore[index]
    assert value["out"]["items"][1]["note"] == text  # type: ignore[index]  # input untouched


@pytest.mark.parametrize("plant", PLANTS, ids=plant_id)
def test_secret_alone_is_replaced_by_exactly_its_mask(r: Redactor, plant: Plant) -> None:
    assert r.redact(plant.secret if plant.exact else plant.planted) == (
        expected_mask(plant.secret)
        if plant.exact
        else plant.planted.replace(plant.secret, expected_mask(plant.secret))
    )


@pytest.mark.parametrize("plant", PLANTS, ids=plant_id)
def test_public_pattern_regex_matches_its_plant(plant: Plant) -> None:
    (pattern,) = [p for p in patterns() if p.name == plant.pattern]
    m = pattern.regex.search(plant.planted)
    assert m is not None
    group = "secret" if "secret" in pattern.regex.groupindex else 0
    assert m.group(group) == plant.secret


@pytest.mark.parametrize("plant", PLANTS, ids=plant_id)
def test_findings_and_scan_name_the_pattern(r: Redactor, plant: Plant) -> None:
    value = {
        "args": {"headers": {"x": "value " + plant.planted + " tail"}},
        "out": {"items": [0, 1, {"body": plant.planted}]},
    }
    assert r.findings(value) == [
        Finding(plant.pattern, "args.headers.x"),
        Finding(plant.pattern, "out.items[2].body"),
    ]
    line = json.dumps(value, ensure_ascii=False)
    assert r.scan_text(line) == [plant.pattern]
    assert r.scan_text(json.dumps(r.redact(value), ensure_ascii=False)) == []


@pytest.mark.parametrize("plant", PLANTS, ids=plant_id)
def test_redaction_is_idempotent(r: Redactor, plant: Plant) -> None:
    once = r.redact(nested("a " + plant.planted + " b " + plant.planted))
    assert r.redact(once) is once
    assert r.findings(once) == []


def test_secrets_glued_together_are_all_masked_in_one_pass(r: Redactor) -> None:
    # The key id only qualifies once the URL after it is a mask; one redact must do both.
    akia = PLANTS[5].planted
    hook = next(p.planted for p in PLANTS if p.pattern == "slack_webhook")
    once = r.redact(akia + hook)
    assert once == expected_mask(akia) + expected_mask(hook)
    assert r.redact(once) is once
    assert set(r.scan_text(akia + hook)) == {"slack_webhook", "aws_access_key_id"}


def test_anthropic_key_is_not_reported_as_openai(r: Redactor) -> None:
    key = "sk-" + "ant-" + "api03-" + rand(URLSAFE, 93, 30)
    assert r.scan_text("key: " + key) == ["anthropic_key"]
    assert r.findings({"k": key}) == [Finding("anthropic_key", "k")]


def test_bearer_keeps_the_word_and_masks_the_token(r: Redactor) -> None:
    token = rand(ALNUM + "-._~+/", 48, 31)
    assert r.redact("Authorization: Bearer " + token) == (
        "Authorization: Bearer " + expected_mask(token)
    )
    assert r.redact("BEARER\t" + token) == "BEARER\t" + expected_mask(token)
    # Too short to be a token: a sentence about bearers stays.
    assert r.redact("bearer token expired, please log in again") == (
        "bearer token expired, please log in again"
    )


def test_pem_block_is_masked_whole(r: Redactor) -> None:
    pem = _pem("EC ")
    text = "here is the key:\n" + pem + "\nkeep it safe"
    out = r.redact(text)
    assert out == "here is the key:\n" + expected_mask(pem) + "\nkeep it safe"
    assert "PRIVATE KEY" not in str(out)
    for line in pem.splitlines()[1:-1]:
        assert line not in str(out)


def test_truncated_pem_body_is_still_masked(r: Redactor) -> None:
    pem = _pem("RSA ")
    truncated = pem[: len(pem) // 2]
    out = r.redact("output: " + truncated)
    assert isinstance(out, str)
    assert "PRIVATE KEY" not in out
    assert pem.splitlines()[1] not in out


def test_public_key_is_not_masked(r: Redactor) -> None:
    pub = "-----BEGIN PUBLIC KEY-----\n" + rand(B64, 64, 32) + "\n-----END PUBLIC KEY-----"
    assert r.redact(pub) is pub


def test_credential_fields_dropped_at_any_depth_any_case(r: Redactor) -> None:
    value = {
        "headers": {"Authorization": "x", "X-Api-Key": "y", "accept": "z"},
        "calls": [{"req": {"COOKIE": "a=b", "Set-Cookie": "c=d", "keep": 1}}],
        "Proxy-Authorization": "Basic abc",
    }
    assert r.redact(value) == {"headers": {"accept": "z"}, "calls": [{"req": {"keep": 1}}]}
    assert r.findings(value) == [
        Finding("credential_field", "headers.Authorization"),
        Finding("credential_field", "headers.X-Api-Key"),
        Finding("credential_field", "calls[0].req.COOKIE"),
        Finding("credential_field", "calls[0].req.Set-Cookie"),
        Finding("credential_field", "Proxy-Authorization"),
    ]


def test_every_credential_field_is_dropped(r: Redactor) -> None:
    assert {
        "authorization",
        "proxy-authorization",
        "x-api-key",
        "api-key",
        "x-goog-api-key",
        "cookie",
        "set-cookie",
        "openai-organization",
        "openai-project",
        "dd-api-key",
        "dd-application-key",
        "x-amz-security-token",
        "x-amz-signature",
        "x-amz-credential",
    } == CREDENTIAL_FIELDS
    value = {name.upper(): "v" for name in CREDENTIAL_FIELDS} | {"content-type": "json"}
    assert r.redact(value) == {"content-type": "json"}


def test_credential_field_removal_keeps_key_order(r: Redactor) -> None:
    value = {"a": 1, "b": 2, "cookie": "x", "c": 3, "d": 4}
    out = r.redact(value)
    assert isinstance(out, dict)
    assert list(out) == ["a", "b", "c", "d"]


def test_secret_field_rule(r: Redactor) -> None:
    password = "hunter2hunter2Q!x9"
    assert r.redact({"password": password}) == {"password": expected_mask(password)}
    assert r.findings({"db": {"password": password}}) == [Finding("secret_field", "db.password")]
    for value in ({"max_tokens": "1024"}, {"token": "abc"}, {"tokens": 5}, {"token_count": 12}):
        assert r.redact(value) is value
        assert r.findings(value) == []


@pytest.mark.parametrize(
    "key",
    [
        "password",
        "db_password",
        "PASSWD",
        "client_secret",
        "clientSecret",
        "apiKey",
        "api_key",
        "APIKey",
        "access_key",
        "private-key",
        "aws_secret_access_key",
        "SecretAccessKey",
        "refresh_token",
        "authToken",
        "auth",
        "credentials",
    ],
)
def test_secret_like_keys_mask_random_values(r: Redactor, key: str) -> None:
    value = rand(ALNUM + "!@#$%", 24, 40)
    assert r.redact({key: value}) == {key: expected_mask(value)}


@pytest.mark.parametrize(
    "key", ["max_tokens", "tokens", "tokenizer", "author", "authority", "sha", "keys", "secretary"]
)
def test_other_keys_keep_random_values(r: Redactor, key: str) -> None:
    value = {key: rand(ALNUM + "!@#$%", 24, 41)}
    assert r.redact(value) is value


@pytest.mark.parametrize(
    "text",
    ["aaaaaaaaaaaaaaaaaaaaaaaa", "short1!", "abababababababab", "«id:3»", "«ts»", "«id:12» «ts»"],
)
def test_secret_field_keeps_low_entropy_and_placeholders(r: Redactor, text: str) -> None:
    value = {"token": text}
    assert r.redact(value) is value


def test_secret_field_keeps_a_string_left_plain_after_pattern_masking(r: Redactor) -> None:
    token = rand(ALNUM, 40, 42)
    value = {"auth_header": "Bearer " + token}
    assert r.redact(value) == {"auth_header": "Bearer " + expected_mask(token)}


def test_secret_field_applies_to_list_items(r: Redactor) -> None:
    a, b = rand(ALNUM, 20, 43), rand(ALNUM, 20, 44)
    assert r.redact({"secrets": [a, "ok", b]}) == {
        "secrets": [expected_mask(a), "ok", expected_mask(b)]
    }


def test_custom_secret_field_names() -> None:
    r = Redactor(secret_field_names=["session_id"])
    value = rand(ALNUM, 24, 45)
    assert r.redact({"sessionId": value, "password": value}) == {
        "sessionId": expected_mask(value),
        "password": value,
    }


def test_unchanged_values_are_returned_as_is(r: Redactor) -> None:
    doc = {
        "messages": [{"role": "user", "content": "What is the weather in Paris today?" * 3}],
        "max_tokens": 1024,
        "temperature": 0.2,
        "stream": False,
        "stop": None,
        "tools": ({"name": "search"},),
    }
    assert r.redact(doc) is doc
    for scalar in ("a plain sentence that is long enough to be scanned", 12, 1.5, True, None):
        assert r.redact(scalar) is scalar


def test_unchanged_subtrees_are_reused(r: Redactor) -> None:
    keep = {"big": ["x"] * 10}
    doc = {"keep": keep, "secret": {"note": "k " + PLANTS[0].planted}, "after": [1, 2]}
    out = r.redact(doc)
    assert isinstance(out, dict)
    assert out is not doc
    assert out["keep"] is keep
    assert out["after"] is doc["after"]


def test_tuples_are_redacted_like_lists(r: Redactor) -> None:
    out = r.redact(("x", PLANTS[0].planted))
    assert out == ("x", expected_mask(PLANTS[0].planted))


def test_unknown_objects_are_returned_unchanged(r: Redactor) -> None:
    secret_bytes = PLANTS[0].planted.encode()
    obj = object()
    items = {1, 2}
    for value in (secret_bytes, obj, items):
        assert r.redact(value) is value
    assert r.redact({1: "one"}) == {1: "one"}


@pytest.mark.parametrize(
    "text",
    [
        "sk-short",
        "AKIA123",
        "The quick brown fox jumps over the lazy dog while the agent retries the call.",
        "550e8400-e29b-41d4-a716-446655440000",
        "ta" + "sk-assignment-for-the-whole-team-this-week",
        "use the ghp_ prefix for classic tokens",
        "AIza is how Google keys start",
        "eyJhbGciOiJIUzI1NiJ9 is only a header",
        "bearer of bad news",
        rand(B64, 40, 50),
        "xAKIA" + rand(UPPER_DIGITS, 16, 51),
        "AKIA" + rand(UPPER_DIGITS, 20, 52),
    ],
)
def test_near_misses_are_not_masked(r: Redactor, text: str) -> None:
    value = {"note": text}
    assert r.redact(value) is value
    assert r.scan_text(text) == []


def test_hex_digest_under_sha_is_kept(r: Redactor) -> None:
    value = {"sha": hashlib.sha256(b"cassette").hexdigest(), "id": "call_" + "0" * 24}
    assert r.redact(value) is value


def test_shortest_slack_token_is_masked(r: Redactor) -> None:
    token = "xo" + "xb-" + "1234567890"
    assert len(token) == 15
    assert r.redact(token) == expected_mask(token)
    assert r.redact(token[:-1]) == token[:-1]


def test_findings_paths(r: Redactor) -> None:
    key = PLANTS[0].planted
    value = [
        {"my key": key, "a.b": {"ok": 1}, "n": {"0": key}},
        {'q"x': key},
    ]
    assert r.findings(value) == [
        Finding("openai_key", '[0]["my key"]'),
        Finding("openai_key", '[0].n["0"]'),
        Finding("openai_key", '[1]["q\\"x"]'),
    ]
    assert r.findings({"x": key}, path="args") == [Finding("openai_key", "args.x")]
    assert r.findings(key) == [Finding("openai_key", "")]


def test_one_finding_per_pattern_per_string(r: Redactor) -> None:
    a, b = PLANTS[0].planted, PLANTS[1].planted
    assert r.findings({"t": a + " and " + b + " and " + PLANTS[5].planted}) == [
        Finding("openai_key", "t"),
        Finding("aws_access_key_id", "t"),
    ]


def test_scan_text_sees_secrets_after_json_escapes(r: Redactor) -> None:
    for plant in PLANTS:
        if plant.pattern in ("openai_key", "github_token", "aws_access_key_id"):
            line = json.dumps({"out": "line one\n" + plant.planted})
            assert "\\n" + plant.planted in line
            assert r.scan_text(line) == [plant.pattern]


def test_scan_text_reports_each_name_once_in_order(r: Redactor) -> None:
    text = " ".join([PLANTS[10].planted, PLANTS[0].planted, PLANTS[11].planted])
    assert r.scan_text(text) == ["github_token", "openai_key"]


def test_extra_patterns() -> None:
    r = Redactor(
        extra_patterns=[
            ("internal_token", r"itk_[A-Za-z0-9]{24}"),
            ("vault_pin", r"vault-pin (?P<secret>\d{6})\b"),
        ]
    )
    itk = "itk" + "_" + rand(ALNUM, 24, 60)
    pin = "493817"
    value = {"log": "used " + itk + " with vault-pin " + pin + " at db:5432"}
    out = r.redact(value)
    assert out == {
        "log": "used "
        + expected_mask(itk)
        + " with vault-pin "
        + expected_mask(pin)
        + " at db:5432"
    }
    assert r.redact(out) is out
    assert r.findings(value) == [
        Finding("internal_token", "log"),
        Finding("vault_pin", "log"),
    ]
    assert r.scan_text(json.dumps(value)) == ["internal_token", "vault_pin"]
    assert r.scan_text(json.dumps(out, ensure_ascii=False)) == []
    # Built-ins still apply, and short strings are scanned for user patterns too.
    short = Redactor(extra_patterns=[("pin", r"PIN-\d{4}")])
    assert short.redact("PIN-1234") == expected_mask("PIN-1234")
    assert short.redact(PLANTS[0].planted) == expected_mask(PLANTS[0].planted)


def test_extra_pattern_never_rewrites_masks() -> None:
    r = Redactor(extra_patterns=[("hex8", r"[0-9a-f]{8}"), ("label", r"key=\S+")])
    once = r.redact("key=" + PLANTS[0].planted)
    # The label match overlaps the key match: both are masked as one span.
    assert once == expected_mask("key=" + PLANTS[0].planted)
    assert r.redact(once) is once
    assert r.scan_text(str(once)) == []


def test_overlapping_extra_and_builtin_matches_are_masked_as_one() -> None:
    r = Redactor(extra_patterns=[("labelled", r"OPENAI_KEY=\S+")])
    planted = "OPENAI_KEY=" + PLANTS[0].planted
    out = r.redact("env " + planted + " end")
    assert out == "env " + expected_mask(planted) + " end"
    assert PLANTS[0].planted not in str(out)


@pytest.mark.parametrize("bad", ["itk_[", "(?P<x>a", "a{2,1}", "*x"])
def test_bad_extra_regex_names_the_pattern(bad: str) -> None:
    with pytest.raises(ValueError, match="my_broken_pattern") as info:
        Redactor(extra_patterns=[("ok", "abc"), ("my_broken_pattern", bad)])
    assert "invalid regex" in str(info.value)


def test_extra_regex_matching_empty_string_is_rejected() -> None:
    with pytest.raises(ValueError, match="greedy_nothing"):
        Redactor(extra_patterns=[("greedy_nothing", r"x*")])


@pytest.mark.parametrize("name", ["", "secret_field", "credential_field"])
def test_extra_pattern_name_must_be_usable(name: str) -> None:
    with pytest.raises(ValueError, match="name"):
        Redactor(extra_patterns=[(name, "abc")])


# -- property -----------------------------------------------------------------------------

_B64_CHARS = st.sampled_from(B64)
_URLSAFE_CHARS = st.sampled_from(URLSAFE)


def _body(chars: st.SearchStrategy[str], lo: int, hi: int | None = None) -> st.SearchStrategy[str]:
    return st.text(chars, min_size=lo, max_size=lo if hi is None else hi)


def _token(prefix: str, chars: str, lo: int, hi: int) -> st.SearchStrategy[Plant]:
    def build(body: str) -> Plant:
        return Plant("", prefix + body, prefix + body)

    return _body(st.sampled_from(chars), lo, hi).map(build)


def _context(label: str) -> st.SearchStrategy[Plant]:
    return _body(_B64_CHARS, 40).map(lambda s: Plant("", label + s, s))


def _bearer() -> st.SearchStrategy[Plant]:
    chars = st.sampled_from(ALNUM + "-._~+/=")
    return _body(chars, 16, 60).map(lambda s: Plant("", "Bearer " + s, s))


def _jwt_strategy() -> st.SearchStrategy[Plant]:
    seg = _body(_URLSAFE_CHARS, 8, 40)
    return st.tuples(seg, seg, _body(_URLSAFE_CHARS, 0, 50)).map(
        lambda t: _exact("", "eyJ" + t[0] + ".eyJ" + t[1] + "." + t[2])
    )


def _pem_strategy() -> st.SearchStrategy[Plant]:
    return _body(_B64_CHARS, 20, 200).map(
        lambda b: Plant(
            "",
            "-----BEGIN " + "PRIVATE KEY-----\n" + b + "\n-----END " + "PRIVATE KEY-----",
            b,
        )
    )


PLANT_STRATEGY = st.one_of(
    _token("sk-", URLSAFE, 20, 120),
    _token("sk-" + "ant-", URLSAFE, 20, 120),
    _token("AK" + "IA", UPPER_DIGITS, 16, 16),
    _token("AS" + "IA", UPPER_DIGITS, 16, 16),
    _context("aws_secret_access_key="),
    _context('"SecretAccessKey": "'),
    _token("gh" + "p_", ALNUM, 36, 60),
    _token("gh" + "u_", ALNUM, 36, 60),
    _token("github" + "_pat_", ALNUM + "_", 22, 90),
    _token("xo" + "xp-", ALNUM + "-", 10, 60),
    _token("https://hooks.slack.com/services/", ALNUM + "/", 20, 60),
    _token("AI" + "za", URLSAFE, 35, 35),
    _jwt_strategy(),
    _pem_strategy(),
    _bearer(),
)

SURROUNDING = st.text(
    st.one_of(
        st.characters(codec="utf-8"),
        st.sampled_from(ALNUM + " \n\t-_./:=\"'{}[]«»"),
    ),
    max_size=200,
)


@settings(max_examples=300, deadline=None)
@given(plant=PLANT_STRATEGY, text=SURROUNDING, where=st.integers(min_value=0), depth=st.booleans())
def test_planted_secret_never_survives(plant: Plant, text: str, where: int, depth: bool) -> None:
    assume(plant.secret not in text)
    r = Redactor()
    at = where % (len(text) + 1)
    planted = text[:at] + " " + plant.planted + " " + text[at:]
    value: object = {"a": [{"b": planted}]} if depth else planted
    redacted = r.redact(value)
    assert plant.secret not in json.dumps(redacted, ensure_ascii=False)
    assert plant.secret not in str(redacted)
    assert r.redact(redacted) == redacted


_GLUE = st.text(st.sampled_from("ab9 _-=.\n\\\"'«»/+:"), max_size=3)


@settings(max_examples=200, deadline=None)
@given(
    parts=st.lists(st.tuples(PLANT_STRATEGY, _GLUE), min_size=1, max_size=4),
    text=SURROUNDING,
    key=st.sampled_from(["note", "password", "sha"]),
)
def test_redaction_reaches_a_fixed_point(
    parts: list[tuple[Plant, str]], text: str, key: str
) -> None:
    # Secrets glued to each other and to odd characters: still one pass, and the findings
    # agree with what redact() changed.
    r = Redactor()
    value = {key: [text + "".join(p.planted + glue for p, glue in parts)]}
    once = r.redact(value)
    assert r.redact(once) is once
    assert bool(r.findings(value)) == (once is not value)
    assert r.findings(once) == []
    assert r.scan_text(json.dumps(once, ensure_ascii=False)) == []


@pytest.mark.parametrize(
    "text",
    [
        "max_tokens: 4096",
        "token: none",
        "the token budget is fine for this run",
        "password=changeme",
        'tool_call_id: "«id:3»"',
        "secret: «redacted:sha256:0123abcd»",
    ],
)
def test_secret_assignment_near_misses_stay(r: Redactor, text: str) -> None:
    assert r.redact(text) is text
    assert r.scan_text(text) == []
