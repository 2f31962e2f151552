"""The credential shapes faultdeck recognises: one table, one combined regex, one mask.

Every row of ``SHAPES`` is one way a credential is written: a name (what ``scan`` and the
findings report, never the secret), the characters it may start with, and the regex that
follows the first character. A group named ``secret`` marks the part that is masked (the
rest, a ``Bearer`` word or an ``AccountKey=`` label, is kept); without one the whole match
is. Rows that share a name are variants of one shape. ``patterns()`` compiles the rows per
name, for people and tests (when first asked); ``builtin_spans`` searches all rows at once.

A mask is ``«redacted:sha256:<8 hex>»``, the first 8 hex digits of the SHA-256 of the
secret's UTF-8 bytes: equal secrets get equal masks, so a replayed run still shows that two
calls used the same key without storing it. Masks never match a row, so masking twice
changes nothing.
"""

from __future__ import annotations

import functools
import hashlib
import re
from dataclasses import dataclass

from .assignments import ASSIGNMENT
from .assignments import Span as Span

MASK_PREFIX = "«redacted:sha256:"
"""How every mask starts; 8 lower-case hex digits and ``»`` follow."""
MASK_SUFFIX = "»"
MASK_RE = re.compile(r"«redacted:sha256:[0-9a-f]{8}»")
# A mask that went through JSON text with ASCII escapes (json.dumps's default), once or
# more: ``\u00abredacted:sha256:0123abcd\u00bb``. Read back as the mask it is.
ESCAPED_MASK_RE = re.compile(r"\\+u00[aA][bB](redacted:sha256:[0-9a-f]{8})\\+u00[bB][bB]")

MIN_SECRET_LEN = 15
"""No row matches a shorter string (the shortest is a Slack token, ``xoxb-`` and 10 more),
so the search is skipped for the many short strings of a call."""


@dataclass(frozen=True, slots=True)
class Shape:
    """One way a credential is written.

    Attributes:
        name: what findings and ``scan`` call it.
        firsts: the characters a match may start with; each becomes a branch of the
            combined regex that starts with that literal, which lets the regex engine skip
            to candidate characters instead of trying every branch at every position.
        rest: the regex after the first character; a group named ``secret`` is masked.
        summary: what it is, for the docs.
    """

    name: str
    firsts: str
    rest: str
    summary: str


def _after(prefix: str) -> str:
    # The match must not continue a word: the character before the prefix is not
    # alphanumeric, or is the letter of a JSON escape (\n, \t) so that a key at the start of
    # a line inside a JSON string still counts. Placed after the prefix (a lookbehind over
    # it), so that every branch still starts with a literal.
    return f"(?:(?<![A-Za-z0-9]{prefix})|(?<=\\\\[nrtbf]{prefix}))"


_LABEL_GAP = r"[\s\"'\\]{0,8}[:=][\s\"'\\]{0,8}"
_B64 = r"[A-Za-z0-9+/]"

SHAPES: tuple[Shape, ...] = (
    # Order matters where two rows share a start: anthropic's "sk-ant-" before openai's "sk-".
    Shape("anthropic_key", "s", "k-ant-" + _after("sk-ant-") + r"[A-Za-z0-9_-]{20,}", "Anthropic"),
    Shape("openai_key", "s", "k-" + _after("sk-") + r"[A-Za-z0-9_-]{20,}", "OpenAI"),
    Shape(
        "stripe_key",
        "rs",
        r"k_(?:live|test)_" + _after("[rs]k_(?:live|test)_") + r"[0-9A-Za-z]{20,}",
        "Stripe secret and restricted keys (sk_live_, sk_test_, rk_live_)",
    ),
    Shape(
        "stripe_key",
        "w",
        "hsec_" + _after("whsec_") + r"[0-9A-Za-z]{24,}",
        "Stripe webhook signing secrets",
    ),
    Shape(
        "aws_access_key_id",
        "A",
        "[KS]IA" + _after("A[KS]IA") + r"[0-9A-Z]{16}(?![0-9A-Za-z])",
        "AWS access key ids (AKIA, ASIA)",
    ),
    Shape(
        "aws_secret_access_key",
        "Ss",
        r"(?i:ecret[_.-]?access[_.-]?key)"
        + _LABEL_GAP
        + r"(?P<secret>[A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])",
        "AWS secret access keys, by their label",
    ),
    Shape(
        "aws_session_token",
        "IF",
        r"(?:(?<=I)QoJb3JpZ2lu|(?<=F)[wQ]oGZXIvYXdz)" + _B64 + r"{100,}={0,2}",
        "AWS session tokens (STS: IQoJb3JpZ2lu…, FwoGZXIvYXdz…)",
    ),
    Shape(
        "azure_storage_key",
        "AS",
        r"(?:(?<=A)ccount|(?<=S)haredAccess)Key=(?P<secret>" + _B64 + r"{40,}={0,2})",
        "Azure connection strings (AccountKey=, SharedAccessKey=)",
    ),
    Shape("github_token", "g", "h[pousr]_" + _after("gh[pousr]_") + r"[A-Za-z0-9]{36,}", "GitHub"),
    Shape(
        "github_token",
        "g",
        "ithub_pat_" + _after("github_pat_") + r"[A-Za-z0-9_]{22,}",
        "GitHub fine-grained tokens",
    ),
    Shape("gitlab_token", "g", "lpat-" + _after("glpat-") + r"[A-Za-z0-9_-]{20,}", "GitLab"),
    Shape(
        "slack_token", "x", "ox[abposre]-" + _after("xox[abposre]-") + r"[0-9A-Za-z-]{10,}", "Slack"
    ),
    Shape("slack_token", "x", "app-" + _after("xapp-") + r"[0-9A-Za-z-]{10,}", "Slack app tokens"),
    Shape(
        "slack_webhook",
        "h",
        r"ttps?://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/+-]{20,}",
        "Slack webhook URLs",
    ),
    Shape(
        "slack_webhook",
        "/",
        r"services/T[A-Z0-9]{8,}/B[A-Z0-9]{8,}/[A-Za-z0-9]{24}(?![A-Za-z0-9])",
        "Slack webhook paths (/services/T…/B…/…)",
    ),
    Shape(
        "google_api_key",
        "A",
        "Iza" + _after("AIza") + r"[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])",
        "Google API keys",
    ),
    Shape(
        "jwt",
        "e",
        "yJ" + _after("eyJ") + r"[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*",
        "JSON web tokens",
    ),
    Shape(
        "pem_private_key",
        "-",
        # Without an END line (a truncated output) the base64 body is still taken. GCP
        # service-account JSON carries its key this way, in "private_key".
        r"----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
        r"(?:[\s\S]*?-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|[A-Za-z0-9+/=\s\\]*)",
        "PEM private keys, GCP service-account keys among them",
    ),
    Shape(
        "bearer",
        "Bb",
        r"(?i:earer"
        r"(?:(?<![A-Za-z0-9]bearer)|(?<=\\[nrtbf]bearer)))"
        r"[ \t]+(?P<secret>[A-Za-z0-9._~+/=-]{16,})",
        "bearer tokens in text",
    ),
    Shape(
        "url_credentials",
        ":",
        # scheme://user:password@host, the password masked: basic auth in URLs and database
        # URLs (postgres://, mysql://, redis://, mongodb+srv://, amqp://).
        r"//[^\s:/@\"'\\]*:(?P<secret>[^\s:/@\"'\\]+)@(?=[A-Za-z0-9\[])",
        "passwords in URLs: https://user:pass@host, postgres://, redis://, mongodb+srv://",
    ),
    Shape(
        "twilio_key",
        "S",
        "K" + _after("SK") + r"[0-9a-fA-F]{32}(?![0-9A-Za-z])",
        "Twilio API key SIDs (SK…)",
    ),
    Shape(
        "twilio_key",
        "A",
        "C" + _after("AC") + r"[0-9a-fA-F]{32}(?![0-9A-Za-z])",
        "Twilio account SIDs (AC…), sent beside their auth tokens",
    ),
    Shape(
        "sendgrid_key",
        "S",
        r"G\." + _after(r"SG\.") + r"[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}",
        "SendGrid",
    ),
    Shape("huggingface_token", "h", "f_" + _after("hf_") + r"[A-Za-z0-9]{30,}", "Hugging Face"),
    Shape("npm_token", "n", "pm_" + _after("npm_") + r"[A-Za-z0-9]{36}", "npm"),
    Shape("pypi_token", "p", "ypi-Ag" + _after("pypi-Ag") + r"[A-Za-z0-9_-]{50,}", "PyPI"),
    Shape(
        "digitalocean_token",
        "d",
        "o[por]_v1_" + _after("do[por]_v1_") + r"[a-f0-9]{64}",
        "DigitalOcean (dop_v1_, doo_v1_, dor_v1_)",
    ),
    Shape(
        "discord_bot_token",
        "MNO",
        _after("[MNO]")
        + r"[A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,40}(?![A-Za-z0-9_-])",
        "Discord bot tokens",
    ),
    Shape(
        "mailgun_key", "k", "ey-" + _after("key-") + r"[0-9a-zA-Z]{32}(?![0-9A-Za-z])", "Mailgun"
    ),
    Shape(
        "shopify_token",
        "s",
        "hp(?:at|ca|pa|ss)_" + _after("shp(?:at|ca|pa|ss)_") + r"[a-fA-F0-9]{32}",
        "Shopify",
    ),
    Shape(
        "telegram_bot_token",
        ":",
        r"(?<=[0-9]{5}:)AA[0-9A-Za-z_-]{33}(?![0-9A-Za-z_-])",
        "Telegram bot tokens (the part after the bot id), in URL paths such as /bot…/getMe",
    ),
    Shape(
        "cookie",
        "CcSs",
        # The value runs over `name=value` pairs joined by `;`, to the first other space.
        r"(?:(?<=[Cc])(?i:ookie)|(?<=[Ss])(?i:et-cookie))[ \t]*:[ \t]*"
        r"(?P<secret>[^\s=;,\"'\\]+=[^\s;\"'\\]*"
        r"(?:;[ \t]*[^\s=;,\"'\\]+(?:=[^\s;\"'\\]*)?)*)",
        "Cookie: and Set-Cookie: lines in text",
    ),
    Shape(
        "datadog_key",
        "Dd",
        _after("[Dd]")
        + r"(?i:d|atadog)[_-]?(?i:api|app|application)[_-]?(?i:key)"
        + _LABEL_GAP
        + r"(?P<secret>[a-fA-F0-9]{32,40})(?![a-fA-F0-9])",
        "Datadog API and application keys, by their label",
    ),
    Shape(
        "mistral_key",
        "Mm",
        _after("[Mm]")
        + r"(?i:istral)[_-]?(?i:api)[_-]?(?i:key)"
        + _LABEL_GAP
        + r"(?P<secret>[A-Za-z0-9]{32})(?![A-Za-z0-9])",
        "Mistral API keys (32 letters and digits, no prefix), by their label",
    ),
    Shape(
        "azure_openai_key",
        "Aa",
        _after("[Aa]")
        + r"(?i:zure)[_-]?(?i:openai|ai)?[_-]?(?i:api)?[_-]?(?i:key)"
        + _LABEL_GAP
        + r"(?P<secret>[A-Za-z0-9]{32,88})(?![A-Za-z0-9])",
        "Azure OpenAI keys (32 hex digits, or 84 letters and digits), by their label",
    ),
)
"""The built-in credential shapes, in matching priority order."""


@dataclass(frozen=True, slots=True)
class Pattern:
    """A named credential shape, compiled from the rows of ``SHAPES`` that bear its name.

    When ``regex`` has a group named ``secret``, only that group is masked and the rest of
    the match is kept.
    """

    name: str
    regex: re.Pattern[str]


def _first_class(chars: str) -> str:
    return re.escape(chars) if len(chars) == 1 else "[" + re.escape(chars) + "]"


@functools.cache
def patterns() -> tuple[Pattern, ...]:
    """The built-in credential shapes, one per name, in matching priority order."""
    sources: dict[str, list[str]] = {}
    for shape in SHAPES:
        sources.setdefault(shape.name, []).append(_first_class(shape.firsts) + shape.rest)
    shapes = (
        Pattern(name, re.compile(srcs[0] if len(srcs) == 1 else "|".join(f"(?:{s})" for s in srcs)))
        for name, srcs in sources.items()
    )
    return (*shapes, Pattern("secret_assignment", ASSIGNMENT))


@functools.cache
def _combined() -> tuple[re.Pattern[str], list[tuple[str, int]]]:
    # One alternation searched once per string, compiled when first searched (a hundredth
    # of a second: a program that only replays, with nothing to redact, never pays it).
    # Each branch is `<literal>(?P<_fdN>...)`; the outer named group closes last, so
    # `lastindex` identifies the branch even when it holds a `secret` group.
    branches: list[str] = []
    owners: list[tuple[str, str | None]] = []
    for shape in SHAPES:
        for first in shape.firsts:
            n = len(branches)
            has_secret = "(?P<secret>" in shape.rest
            body = shape.rest.replace("(?P<secret>", f"(?P<_fd{n}s>")
            branches.append(f"{re.escape(first)}(?P<_fd{n}>{body})")
            owners.append((shape.name, f"_fd{n}s" if has_secret else None))
    regex = re.compile("|".join(branches))
    # Indexed by group number; only the branch groups' slots are ever read. The int is the
    # group to mask, 0 meaning the whole match.
    by_index: list[tuple[str, int]] = [("", 0)] * (regex.groups + 1)
    for n, (name, secret) in enumerate(owners):
        by_index[regex.groupindex[f"_fd{n}"]] = (
            name,
            regex.groupindex[secret] if secret is not None else 0,
        )
    return regex, by_index


def mask(secret: str) -> str:
    """The mask that stands for ``secret`` wherever it is stored."""
    # surrogatepass: strings decoded from JSON may hold lone surrogates; hashing must not fail.
    digest = hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()
    return MASK_PREFIX + digest[:8] + MASK_SUFFIX


def unescape_masks(text: str) -> str:
    """``text`` with masks written as JSON escapes read back as masks."""
    if "redacted:sha256:" not in text:
        return text
    return ESCAPED_MASK_RE.sub(lambda m: "«" + m.group(1) + "»", text)


def apply_masks(text: str, spans: list[Span]) -> str:
    """``text`` with each span (sorted, not overlapping) replaced by its mask."""
    pieces: list[str] = []
    pos = 0
    for _, start, end in spans:
        pieces.append(text[pos:start])
        pieces.append(mask(text[start:end]))
        pos = end
    pieces.append(text[pos:])
    return "".join(pieces)


def builtin_spans(text: str) -> list[Span]:
    """Where the rows of ``SHAPES`` match in ``text``, in order, not overlapping."""
    spans: list[Span] = []
    combined, by_index = _combined()
    search = combined.search
    m = search(text)
    while m is not None:
        name, group = by_index[m.lastindex or 0]
        start, end = m.span(group)
        spans.append((name, start, end))
        m = search(text, m.end())
    return spans
