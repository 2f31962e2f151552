"""No planted secret reaches the cassette's bytes, wherever a call carries it.

Every secret is built from pieces at run time, so no whole secret literal sits in this file.
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import string
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import faultdeck as fd
from faultdeck._keys.redact import patterns
from tests.support.plants import one_per_pattern

ALNUM = string.ascii_letters + string.digits
UPPER_DIGITS = string.ascii_uppercase + string.digits


def rand(seed: str, alphabet: str, n: int) -> str:
    """A fixed pseudo-random string: realistic entropy, same every run."""
    return "".join(random.Random(seed).choices(alphabet, k=n))


def b64url(obj: dict[str, Any]) -> str:
    raw = json.dumps(obj, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def pem_block() -> str:
    body = base64.b64encode(random.Random("pem").randbytes(600)).decode()
    lines = [body[i : i + 64] for i in range(0, len(body), 64)]
    kind = "RSA " + "PRIVATE KEY"
    return "\n".join(["-----BEGIN " + kind + "-----", *lines, "-----END " + kind + "-----"])


@dataclass(frozen=True)
class Sample:
    """One planted secret.

    Attributes:
        pattern: the redactor's name for its shape (a ``patterns()`` name or ``secret_field``).
        secret: what must never reach the disk; its mask must.
        sentence: how a string carries it mid-sentence (``{}`` is the secret), if it does.
        field: the secret-like field name that holds it bare, if it does.
        fragments: further pieces of it that must not reach the disk either.
    """

    pattern: str
    secret: str
    sentence: str | None = "please note {} before the deploy, thanks"
    field: str | None = None
    fragments: tuple[str, ...] = ()

    def leaf(self) -> dict[str, str]:
        leaf: dict[str, str] = {}
        if self.sentence is not None:
            leaf["note"] = self.sentence.format(self.secret)
        if self.field is not None:
            leaf[self.field] = self.secret
        return leaf

    def nested(self) -> dict[str, Any]:
        """A dict inside a list inside a dict, next to harmless values."""
        return {"request": {"items": [{"plain": "nothing to hide"}, self.leaf()], "n": 3}}

    def forbidden(self) -> list[bytes]:
        """Byte strings that must be absent from the file: raw and JSON-escaped forms."""
        out: list[bytes] = []
        for text in (self.secret, *self.fragments):
            out.append(text.encode("utf-8"))
            out.append(json.dumps(text)[1:-1].encode("utf-8"))
        return out

    def mask(self) -> bytes:
        digest = hashlib.sha256(self.secret.encode("utf-8")).hexdigest()[:8]
        return f"«redacted:sha256:{digest}»".encode()


OPENAI_BODY = rand("openai", ALNUM, 48)
OPENAI_PROJ_BODY = rand("openai-proj", ALNUM + "_-", 120)
ANTHROPIC_BODY = rand("anthropic", ALNUM + "_-", 93)
AWS_ID_BODY = rand("aws-id", UPPER_DIGITS, 16)
AWS_SECRET = rand("aws-secret", ALNUM + "/+", 40)
GITHUB_BODY = rand("ghp", ALNUM, 36)
GITHUB_PAT_BODY = rand("github-pat", ALNUM, 22) + "_" + rand("github-pat-2", ALNUM, 59)
SLACK_BODY = "-".join([rand("s1", string.digits, 12), rand("s2", string.digits, 13)])
SLACK_BODY += "-" + rand("s3", ALNUM, 24)
SLACK_HOOK_BODY = "/".join(["T" + rand("h1", UPPER_DIGITS, 8), "B" + rand("h2", UPPER_DIGITS, 10)])
SLACK_HOOK_BODY += "/" + rand("h3", ALNUM, 24)
GOOGLE_BODY = rand("google", ALNUM + "_-", 35)
JWT_SIG = rand("jwt-sig", ALNUM + "_-", 43)
JWT = ".".join(
    [b64url({"alg": "HS256", "typ": "JWT"}), b64url({"sub": "1234567890", "admin": True}), JWT_SIG]
)
PEM = pem_block()
BEARER_TOKEN = rand("bearer", ALNUM + "._-", 30)

SAMPLES: dict[str, Sample] = {
    "openai_key": Sample("openai_key", "sk-" + OPENAI_BODY, fragments=(OPENAI_BODY,)),
    "openai_key-project": Sample(
        "openai_key", "sk-" + "proj-" + OPENAI_PROJ_BODY, fragments=(OPENAI_PROJ_BODY,)
    ),
    "anthropic_key": Sample(
        "anthropic_key",
        "sk-" + "ant-" + "api03-" + ANTHROPIC_BODY + "AA",
        fragments=(ANTHROPIC_BODY,),
    ),
    "aws_access_key_id": Sample(
        "aws_access_key_id", "AK" + "IA" + AWS_ID_BODY, fragments=(AWS_ID_BODY,)
    ),
    "aws_secret_access_key": Sample(
        "aws_secret_access_key",
        AWS_SECRET,
        sentence="profile default: aws_secret_access_key = {} (rotate monthly)",
        field="aws_secret_access_key",
    ),
    "github_token": Sample("github_token", "gh" + "p_" + GITHUB_BODY, fragments=(GITHUB_BODY,)),
    "github_token-fine_grained": Sample(
        "github_token", "github" + "_pat_" + GITHUB_PAT_BODY, fragments=(GITHUB_PAT_BODY,)
    ),
    "slack_token": Sample("slack_token", "xo" + "xb-" + SLACK_BODY, fragments=(SLACK_BODY,)),
    "slack_webhook": Sample(
        "slack_webhook",
        "https://hooks." + "slack.com/services/" + SLACK_HOOK_BODY,
        sentence="post alerts to {} when the build breaks",
        fragments=(SLACK_HOOK_BODY,),
    ),
    "google_api_key": Sample("google_api_key", "AI" + "za" + GOOGLE_BODY, fragments=(GOOGLE_BODY,)),
    "jwt": Sample("jwt", JWT, fragments=(JWT_SIG,)),
    "pem_private_key": Sample(
        "pem_private_key",
        PEM,
        sentence="the deploy key is\n{}\nkeep it safe",
        fragments=tuple(PEM.splitlines()[1:-1]),
    ),
    "bearer": Sample(
        "bearer",
        BEARER_TOKEN,
        sentence="curl -H 'Authorization: Bearer {}' https://api.example.test/v1",
    ),
    "secret_assignment": Sample(
        "secret_assignment",
        rand("assigned", ALNUM, 32),
        sentence='auth failed: 400 {{"error": "invalid", "client_secret": "{}"}}',
    ),
    "secret_field-password": Sample(
        "secret_field", rand("password", ALNUM + "!#%&*", 20), sentence=None, field="password"
    ),
    "secret_field-client_secret": Sample(
        "secret_field", rand("client-secret", ALNUM, 32), sentence=None, field="client_secret"
    ),
    "secret_field-api_key": Sample(
        "secret_field", rand("api-key", ALNUM, 40), sentence=None, field="api_key"
    ),
    "secret_field-token": Sample(
        "secret_field", rand("token", ALNUM + "-_", 36), sentence=None, field="token"
    ),
}


# Every other shape of the table, as tests/plants.py plants it, in its own context.
for _name, _plant in one_per_pattern().items():
    if not any(sample.pattern == _name for sample in SAMPLES.values()):
        _context = _plant.text.replace(_plant.secret, "{}", 1)
        SAMPLES[_name] = Sample(_name, _plant.secret, sentence=f"please note {_context} today")


def test_every_pattern_the_redactor_knows_has_a_sample() -> None:
    known = {pattern.name for pattern in patterns()}
    planted = {sample.pattern for sample in SAMPLES.values()}
    assert known - planted == set(), "a redaction pattern has no planted secret here"
    assert "secret_field" in planted


def no_live() -> Any:
    raise AssertionError("a live call ran during replay")


def record_calls(path: Path, sample: Sample, error_text: str | None) -> None:
    """A call with the secret in its args, one with it in its output, and (when
    ``error_text`` is given) one whose error message holds it."""

    def fail() -> Any:
        raise RuntimeError(f"upstream said {error_text}")

    with fd.Deck(path, mode="record", on_harness_change="ignore") as deck:
        out = deck.call("tool", "lookup", {"query": sample.nested()}, lambda: {"found": 1})
        assert out == {"found": 1}
        out = deck.call("model", "answer", {"q": "what is configured?"}, sample.nested)
        assert out == sample.nested()  # the caller sees the live value, unmasked
        if error_text is not None:
            with pytest.raises(RuntimeError, match="upstream said"):
                deck.call("http", "upstream", {"q": "status"}, fail)


def assert_not_on_disk(path: Path, sample: Sample) -> bytes:
    data = path.read_bytes()
    for forbidden in sample.forbidden():
        assert forbidden not in data, f"{sample.pattern}: a secret reached {path.name}"
    for raw in data.split(b"\n")[:-1]:
        json.loads(raw)
    return data


@pytest.mark.parametrize("sample", list(SAMPLES.values()), ids=list(SAMPLES))
def test_no_secret_reaches_the_cassette_bytes(tmp_path: Path, sample: Sample) -> None:
    # The sample really has the shape it claims (else this test would prove nothing).
    found = {f.pattern for f in fd.Redactor().findings(sample.nested())}
    assert sample.pattern in found

    # A shaped secret is recognisable in free text, so it also rides in an error message;
    # a bare high-entropy value is only a secret under its field name (see the test below).
    error_text = sample.sentence.format(sample.secret) if sample.sentence else None
    path = tmp_path / "secrets.jsonl"
    record_calls(path, sample, error_text)

    data = assert_not_on_disk(path, sample)
    lines = data.split(b"\n")
    places = [("args", lines[1]), ("output", lines[2])]
    if error_text is not None:
        places.append(("error", lines[3]))
    for where, line in places:
        assert sample.mask() in line, f"{sample.pattern}: no mask where the {where} held it"

    # The key was computed before redaction: the same planted call replays.
    recorded = fd.load(path).entries
    assert len(recorded) == len(places)
    with fd.Deck(path, mode="replay", on_harness_change="ignore") as deck:
        assert deck.call("tool", "lookup", {"query": sample.nested()}, no_live) == {"found": 1}
        answer = deck.call("model", "answer", {"q": "what is configured?"}, no_live)
        assert answer == recorded[1].value
        if error_text is not None:
            with pytest.raises(RuntimeError, match="upstream said") as info:
                deck.call("http", "upstream", {"q": "status"}, no_live)
            assert sample.secret not in str(info.value)
            assert sample.mask().decode() in str(info.value)
        report = deck.report()
    assert sample.secret not in json.dumps(answer)
    assert sample.mask().decode() in json.dumps(answer, ensure_ascii=False)
    assert report.misses == ()
    assert report.used == len(places)
    assert report.unused == ()


FIELD_SAMPLES = {k: s for k, s in SAMPLES.items() if s.sentence is None}


@pytest.mark.parametrize("form", ["assignment", "json_body"])
@pytest.mark.parametrize("sample", list(FIELD_SAMPLES.values()), ids=list(FIELD_SAMPLES))
def test_secret_field_inside_an_error_message_is_masked(
    tmp_path: Path, sample: Sample, form: str
) -> None:
    # An upstream error that echoes the offending field: "password=…" or a JSON body.
    assert sample.field is not None
    if form == "assignment":
        error_text = f"{sample.field}={sample.secret} was rejected"
    else:
        error_text = "400 " + json.dumps({"error": "invalid", sample.field: sample.secret})
    path = tmp_path / "secrets.jsonl"
    record_calls(path, sample, error_text)
    assert_not_on_disk(path, sample)


def test_credential_headers_are_never_written_and_do_not_change_the_key(
    tmp_path: Path,
) -> None:
    token = rand("hdr-bearer", ALNUM, 40)
    api_key = "sk-" + "ant-" + "api03-" + rand("hdr-key", ALNUM, 60)
    session = rand("hdr-session", ALNUM, 32)
    headers = {
        "Authorization": "Bearer " + token,
        "x-api-key": api_key,
        "Cookie": "session=" + session,
        "Accept": "application/json",
    }
    args = {"method": "POST", "headers": headers, "body": {"q": "hello"}}
    path = tmp_path / "headers.jsonl"
    with fd.Deck(path, mode="record", on_harness_change="ignore") as deck:
        out = deck.call("tool", "api.search", args, lambda: {"hits": 2, "headers": headers})
        assert out["hits"] == 2

    data = path.read_bytes()
    for secret in (token, api_key, session, "Bearer " + token, "session=" + session):
        assert secret.encode() not in data
        assert json.dumps(secret)[1:-1].encode() not in data
    entry = fd.load(path).entries[0]
    assert entry.args == {
        "method": "POST",
        "headers": {"Accept": "application/json"},
        "body": {"q": "hello"},
    }
    assert entry.value == {"hits": 2, "headers": {"Accept": "application/json"}}

    # Credentials never decide the key: other credentials replay the same call.
    other = dict(headers)
    other["Authorization"] = "Bearer " + rand("hdr-bearer-2", ALNUM, 40)
    other["x-api-key"] = "sk-" + "ant-" + "api03-" + rand("hdr-key-2", ALNUM, 60)
    other["Cookie"] = "session=" + rand("hdr-session-2", ALNUM, 32)

    with fd.Deck(path, mode="replay", on_harness_change="ignore") as deck:
        replayed = deck.call("tool", "api.search", {**args, "headers": other}, no_live)
        report = deck.report()
    assert replayed == {"hits": 2, "headers": {"Accept": "application/json"}}
    assert report.misses == ()
    assert report.used == 1


def test_all_secrets_in_one_string_are_all_masked(tmp_path: Path) -> None:
    shaped = [s for s in SAMPLES.values() if s.sentence is not None]
    text = " ; ".join(s.sentence.format(s.secret) for s in shaped if s.sentence is not None)
    path = tmp_path / "all.jsonl"
    with fd.Deck(path, mode="record", on_harness_change="ignore") as deck:
        deck.call("model", "chat", {"messages": [{"content": text}]}, lambda: {"text": text})
    data = path.read_bytes()
    for sample in shaped:
        for forbidden in sample.forbidden():
            assert forbidden not in data, f"{sample.pattern} leaked next to other secrets"
        assert data.count(sample.mask()) == 2, sample.pattern  # once in args, once in out
