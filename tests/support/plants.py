"""Planted secrets for every row of the credential table, and near misses that must stay.

Every secret is built from pieces at run time, so no credential-shaped literal sits in this
file. ``ROWS`` is keyed by a row's id (``name/firsts``, as ``row_id`` makes it), so a test
per row can ask for that row's plants and near misses.
"""

from __future__ import annotations

import base64
import json
import random
import string
from dataclasses import dataclass

from faultdeck._keys.secrets import SHAPES, Shape

ALNUM = string.ascii_letters + string.digits
UPPER_DIGITS = string.ascii_uppercase + string.digits
URLSAFE = ALNUM + "_-"
B64 = ALNUM + "+/"
HEX = "0123456789abcdef"


def rand(seed: str, alphabet: str, n: int) -> str:
    """A fixed pseudo-random string with a digit and a letter in it: realistic entropy,
    the same every run."""
    body = "".join(random.Random(seed).choices(alphabet, k=n - 2))
    digit = "7" if any(c in alphabet for c in "0123456789") else alphabet[0]
    letter = next((c for c in "qQ" if c in alphabet), alphabet[-1])
    return body + digit + letter


def b64url(obj: dict[str, object]) -> str:
    raw = json.dumps(obj, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def pem(kind: str = "RSA ") -> str:
    body = base64.b64encode(random.Random("pem" + kind).randbytes(600)).decode()
    lines = [body[i : i + 64] for i in range(0, len(body), 64)]
    label = kind + "PRIVATE " + "KEY"
    return "\n".join(["-----BEGIN " + label + "-----", *lines, "-----END " + label + "-----"])


def row_id(shape: Shape) -> str:
    """A row's id: its name and the characters it starts with."""
    return f"{shape.name}/{shape.firsts}"


@dataclass(frozen=True)
class Plant:
    """A secret as it is written (``text``) and the part of it that must be masked."""

    pattern: str
    text: str
    secret: str


def _exact(pattern: str, secret: str) -> Plant:
    return Plant(pattern, secret, secret)


def _in(pattern: str, template: str, secret: str) -> Plant:
    """A secret written inside a text: ``template`` with ``{}`` where the secret goes."""
    return Plant(pattern, template.replace("{}", secret), secret)


PW = rand("password", ALNUM, 16)
HEX32 = rand("hex32", HEX, 32)
AZURE32 = rand("azure32", HEX, 32)
HEX40 = rand("hex40", HEX, 40)
MISTRAL = rand("mistral", ALNUM, 32)
SLACK_HOOK = (
    "/services/T" + rand("h1", UPPER_DIGITS, 9) + "/B" + rand("h2", UPPER_DIGITS, 11) + "/"
) + rand("h3", ALNUM, 24)
JWT = ".".join(
    [
        b64url({"alg": "HS256", "typ": "JWT"}),
        b64url({"sub": "1234567890", "admin": True}),
        rand("jwt-sig", URLSAFE, 43),
    ]
)
TELEGRAM = "AA" + rand("telegram", URLSAFE, 33)
DISCORD = (
    "MT" + rand("d1", URLSAFE, 24) + "." + rand("d2", URLSAFE, 6) + "." + rand("d3", URLSAFE, 38)
)
AZURE = rand("azure", B64, 86) + "=="

# (plants, near misses) per row of the table.
ROWS: dict[str, tuple[list[Plant], list[str]]] = {
    "anthropic_key/s": (
        [_exact("anthropic_key", "sk-" + "ant-" + "api03-" + rand("ant", URLSAFE, 93) + "AA")],
        ["sk-ant-short", "the sk-ant- prefix is Anthropic's"],
    ),
    "openai_key/s": (
        [
            _exact("openai_key", "sk-" + rand("oai", ALNUM, 48)),
            _exact("openai_key", "sk-" + "proj-" + rand("oai-proj", URLSAFE, 120)),
        ],
        ["sk-short", "ta" + "sk-assignment-for-the-whole-team-this-week"],
    ),
    "stripe_key/rs": (
        [
            _exact("stripe_key", "sk_" + "live_" + rand("stripe1", ALNUM, 24)),
            _exact("stripe_key", "sk_" + "test_" + rand("stripe2", ALNUM, 24)),
            _exact("stripe_key", "rk_" + "live_" + rand("stripe3", ALNUM, 24)),
        ],
        ["sk_live_short", "ta" + "sk_live_" + rand("stripe4", ALNUM, 24)],
    ),
    "stripe_key/w": (
        [_exact("stripe_key", "wh" + "sec_" + rand("whsec", ALNUM, 32))],
        ["whsec_short"],
    ),
    "aws_access_key_id/A": (
        [
            _exact("aws_access_key_id", "AK" + "IA" + rand("aws1", UPPER_DIGITS, 16)),
            _exact("aws_access_key_id", "AS" + "IA" + rand("aws2", UPPER_DIGITS, 16)),
        ],
        [
            "AKIA123",
            "xAKIA" + rand("aws3", UPPER_DIGITS, 16),
            "AKIA" + rand("aws4", UPPER_DIGITS, 20),
        ],
    ),
    "aws_secret_access_key/Ss": (
        [
            _in("aws_secret_access_key", "aws_secret_access_key={}", rand("aws5", B64, 40)),
            _in("aws_secret_access_key", '"SecretAccessKey": "{}"', rand("aws6", B64, 40)),
        ],
        ["aws_secret_access_key=short", "the secret access key is in the vault"],
    ),
    "aws_session_token/IF": (
        [
            _exact("aws_session_token", "IQoJb3" + "JpZ2luX2Vj" + rand("sts1", B64, 600) + "=="),
            _in("aws_session_token", "token {} ok", "FwoGZX" + "IvYXdzE" + rand("sts2", B64, 300)),
        ],
        ["IQoJb3JpZ2lu is how a session token starts", "FwoGZXIvYXdzEshort"],
    ),
    "azure_storage_key/AS": (
        [
            Plant(
                "azure_storage_key",
                "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey="
                + AZURE
                + ";EndpointSuffix=core.windows.net",
                AZURE,
            ),
            Plant(
                "azure_storage_key",
                "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=root;"
                "SharedAccessKey=" + AZURE[:43] + "=",
                AZURE[:43] + "=",
            ),
        ],
        ["AccountKey=short;AccountName=x", "set the AccountKey setting in the portal"],
    ),
    "github_token/g": (
        [
            _exact("github_token", "gh" + "p_" + rand("ghp", ALNUM, 36)),
            _exact("github_token", "gh" + "s_" + rand("ghs", ALNUM, 36)),
            _exact(
                "github_token",
                "github" + "_pat_" + rand("pat1", ALNUM, 22) + "_" + rand("pat2", ALNUM, 59),
            ),
        ],
        ["use the ghp_ prefix for classic tokens", "github_pat_short"],
    ),
    "gitlab_token/g": (
        [_exact("gitlab_token", "gl" + "pat-" + rand("glpat", URLSAFE, 20))],
        ["glpat-short", "a glpat- token goes in the header"],
    ),
    "slack_token/x": (
        [
            _exact(
                "slack_token",
                "xo" + "xb-" + "123456789012-" + "1234567890123-" + rand("sl", ALNUM, 24),
            ),
            _exact(
                "slack_token", "xa" + "pp-" + "1-A0" + rand("sl2", UPPER_DIGITS, 9) + "-1234567"
            ),
        ],
        ["xoxb-short", "the xapp- prefix"],
    ),
    "slack_webhook/h": (
        [_exact("slack_webhook", "https://hooks." + "slack.com" + SLACK_HOOK)],
        ["https://hooks.slack.com/ is where webhooks live"],
    ),
    "slack_webhook//": (
        [_in("slack_webhook", "POST {}", SLACK_HOOK)],
        ["/services/T123/B456/short", "see /services/ for the list"],
    ),
    "google_api_key/A": (
        [_exact("google_api_key", "AI" + "za" + rand("google", URLSAFE, 35))],
        ["AIza is how Google keys start"],
    ),
    "jwt/e": (
        [_exact("jwt", JWT)],
        ["eyJhbGciOiJIUzI1NiJ9 is only a header"],
    ),
    "pem_private_key/-": (
        [_exact("pem_private_key", pem("RSA ")), _exact("pem_private_key", pem(""))],
        [
            "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n"
            "-----END PUBLIC KEY-----"
        ],
    ),
    "bearer/Bb": (
        [
            _in("bearer", "Authorization: Bearer {}", rand("bearer", ALNUM + "._-", 40)),
            _in("bearer", "authorization: bearer {}", rand("bearer2", ALNUM, 40)),
        ],
        ["bearer of bad news", "Bearer token auth is used here"],
    ),
    "url_credentials/:": (
        [
            Plant("url_credentials", "https://alice:" + PW + "@example.com/private", PW),
            Plant("url_credentials", "postgres://app:" + PW + "@db:5432/orders", PW),
            Plant("url_credentials", "mysql://root:" + PW + "@127.0.0.1:3306/app", PW),
            Plant("url_credentials", "redis://:" + PW + "@cache:6379/0", PW),
            Plant(
                "url_credentials", "mongodb+srv://svc:" + PW + "@cluster0.ab1cd.mongodb.net/db", PW
            ),
        ],
        [
            "https://example.com/path?q=1",
            "ssh://git@github.com/org/repo.git",
            "see https://docs.example.com:8443/guide for details",
        ],
    ),
    "twilio_key/S": (
        [_exact("twilio_key", "SK" + HEX32)],
        ["SK" + HEX32[:20], "TASK" + HEX32],
    ),
    "twilio_key/A": (
        [_exact("twilio_key", "AC" + HEX32)],
        ["AC" + HEX32[:20], "TRAC" + HEX32],
    ),
    "sendgrid_key/S": (
        [
            _exact(
                "sendgrid_key",
                "SG" + "." + rand("sg1", URLSAFE, 22) + "." + rand("sg2", URLSAFE, 43),
            )
        ],
        ["SG.short.x", "the SG. prefix"],
    ),
    "huggingface_token/h": (
        [_exact("huggingface_token", "hf" + "_" + rand("hf", ALNUM, 34))],
        ["hf_short", "the hf_ prefix is Hugging Face's"],
    ),
    "npm_token/n": (
        [_exact("npm_token", "npm" + "_" + rand("npm", ALNUM, 36))],
        ["npm_install_script", "npm_config_registry"],
    ),
    "pypi_token/p": (
        [_exact("pypi_token", "pypi" + "-AgEIcHlwaS5vcmc" + rand("pypi", URLSAFE, 70))],
        ["pypi-simple-index", "pypi-AgShort"],
    ),
    "digitalocean_token/d": (
        [_exact("digitalocean_token", "dop" + "_v1_" + rand("do", HEX, 64))],
        ["dop_v1_" + HEX32[:10], "do_v1_" + rand("do2", HEX, 64)],
    ),
    "discord_bot_token/MNO": (
        [_exact("discord_bot_token", DISCORD)],
        ["Mr. Smith went to Washington.", "MTA.short.x"],
    ),
    "mailgun_key/k": (
        [_exact("mailgun_key", "key" + "-" + rand("mailgun", ALNUM, 32))],
        ["a key-value store", "monkey-" + rand("mailgun2", ALNUM, 32)],
    ),
    "shopify_token/s": (
        [_exact("shopify_token", "shp" + "at_" + rand("shop", HEX, 32))],
        ["shpat_" + HEX32[:8], "the shpat_ prefix"],
    ),
    "telegram_bot_token/:": (
        [
            Plant(
                "telegram_bot_token",
                "https://api.telegram.org/bot123456789:" + TELEGRAM + "/getMe",
                ":" + TELEGRAM,
            )
        ],
        ["meet at 12:30 AA lounge", "bot123456789:AAshort/getMe"],
    ),
    "cookie/CcSs": (
        [
            _in("cookie", "Cookie: {}", "session=" + rand("cookie", ALNUM, 32)),
            _in(
                "cookie",
                "Set-Cookie: {}",
                "sid=" + rand("cookie2", ALNUM, 32) + "; Path=/; HttpOnly",
            ),
        ],
        ["cookie: chocolate chip", "the cookie jar is empty"],
    ),
    "datadog_key/Dd": (
        [
            Plant("datadog_key", "DD_API_KEY=" + HEX32, HEX32),
            Plant("datadog_key", "datadog_app_key: " + HEX40, HEX40),
        ],
        ["DD_API_KEY=changeme", "the datadog agent"],
    ),
    "mistral_key/Mm": (
        [
            Plant("mistral_key", "MISTRAL_API_KEY=" + MISTRAL, MISTRAL),
            _in("mistral_key", '{"mistral_api_key": "{}"}', rand("mistral2", ALNUM, 32)),
        ],
        ["MISTRAL_API_KEY=changeme", "mistral-large-latest"],
    ),
    "azure_openai_key/Aa": (
        [
            Plant("azure_openai_key", "AZURE_OPENAI_API_KEY=" + AZURE32, AZURE32),
            _in("azure_openai_key", "azure_api_key: {}", rand("azure84", ALNUM, 84)),
        ],
        ["AZURE_OPENAI_API_KEY=changeme", "azure_openai_endpoint: https://x.openai.azure.com"],
    ),
}

ASSIGNMENTS: tuple[list[Plant], list[str]] = (
    [
        _in("secret_assignment", "client_secret={}", rand("cs", ALNUM, 32)),
        _in("secret_assignment", '{"password": "{}"}', rand("pw", ALNUM, 20)),
        _in("secret_assignment", "refresh_token: {}", rand("rt", ALNUM, 32)),
    ],
    [
        "max_tokens: 4096",
        "token: none",
        "password=changeme",
        'tool_call_id: "«id:3»"',
        "secret: «redacted:sha256:0123abcd»",
        "next_page_token=" + rand("npt", URLSAFE, 40),
        "total_tokens: 1234567890123",
        "token = session.headers.get('x-token')",
        "api_key = settings.OPENAI_API_KEY",
    ],
)


assert set(ROWS) == {row_id(s) for s in SHAPES}, "every row of the table needs plants here"


def one_per_pattern() -> dict[str, Plant]:
    """One plant for each pattern name, the assignment rule included."""
    found: dict[str, Plant] = {}
    for plants, _ in (*ROWS.values(), ASSIGNMENTS):
        for plant in plants:
            found.setdefault(plant.pattern, plant)
    return found


def all_plants() -> list[Plant]:
    """Every plant of every row."""
    return [p for plants, _ in (*ROWS.values(), ASSIGNMENTS) for p in plants]


def all_near_misses() -> list[str]:
    """Every near miss of every row."""
    return [m for _, misses in (*ROWS.values(), ASSIGNMENTS) for m in misses]
