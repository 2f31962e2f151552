"""The SDKs' and httpx's own exceptions, read as the policy's failures (``SDK_ERRORS``).

Each exception is the real one: the SDK's own factory builds it from a real httpx2
response, as the SDK does when a provider answers with an error.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from typing import Any

import anthropic
import httpx
import httpx2
import mcp_types
import openai
import pytest
from mcp.shared.exceptions import MCPError

import faultdeck as fd
from faultdeck._judge.sdk_errors import SDK_ERRORS, classify_error
from tests.support.children import child_env

URL = "http://127.0.0.1:9/v1/chat/completions"
REQUEST = httpx2.Request("POST", URL)
OPENAI = openai.OpenAI(api_key="sk-test", base_url="http://127.0.0.1:9/v1", max_retries=0)
ANTHROPIC = anthropic.Anthropic(api_key="sk-ant-test", base_url="http://127.0.0.1:9")
POLICY = fd.Policy(max_attempts=3, max_retry_after=5.0, max_total_wait=10.0)


def openai_error(status: int, body: Any, headers: dict[str, str] | None = None) -> Exception:
    response = httpx2.Response(status, headers=headers or {}, json=body, request=REQUEST)
    error: Exception = OPENAI._make_status_error_from_response(response)
    return error


def anthropic_error(status: int, kind: str, headers: dict[str, str] | None = None) -> Exception:
    body = {"type": "error", "error": {"type": kind, "message": kind}}
    response = httpx2.Response(status, headers=headers or {}, json=body, request=REQUEST)
    error: Exception = ANTHROPIC._make_status_error_from_response(response)
    return error


def openai_body(code: str | None, kind: str = "requests") -> dict[str, Any]:
    return {"error": {"message": "no", "type": kind, "param": None, "code": code}}


def test_an_openai_rate_limit_is_a_quota_error_with_its_retry_after_ms() -> None:
    exc = openai_error(
        429, openai_body("rate_limit_exceeded"), {"retry-after-ms": "1500", "retry-after": "2"}
    )
    assert type(exc) is openai.RateLimitError
    failure = classify_error(exc)
    assert isinstance(failure, fd.QuotaExhausted)
    assert (failure.status, failure.retry_after, failure.code) == (429, 1.5, "rate_limit_exceeded")
    assert failure.__cause__ is exc
    assert str(failure).startswith("openai.RateLimitError: Error code: 429")


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        ({"retry-after": "2"}, 2.0),
        ({"retry-after-ms": "250"}, 0.25),
        ({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}, None),  # a date: not on our clock
        ({}, None),
    ],
)
def test_retry_after_is_read_from_either_header(
    headers: dict[str, str], seconds: float | None
) -> None:
    failure = classify_error(openai_error(429, openai_body("rate_limit_exceeded"), headers))
    assert isinstance(failure, fd.QuotaExhausted)
    assert failure.retry_after == seconds


def test_insufficient_quota_is_the_non_retryable_stop() -> None:
    exc = openai_error(
        429, openai_body("insufficient_quota", "insufficient_quota"), {"retry-after": "1"}
    )
    failure = classify_error(exc)
    assert isinstance(failure, fd.QuotaExhausted)
    assert failure.code == "insufficient_quota"
    asked: list[str] = []

    def step(op: str) -> str:
        asked.append(op)
        if op == "b":
            raise exc
        return op

    outcomes = fd.run_steps(step, ["a", "b", "c"], POLICY, clock=fd.VirtualClock())
    assert [(o.op, o.status, o.reason) for o in outcomes] == [
        ("a", "ok", None),
        ("b", "stopped", "quota_non_retryable"),
    ]
    assert asked == ["a", "b"], "never retried, and the run stops there"


Made = Callable[[], BaseException]
CASES: list[tuple[str, Made, type[fd.BoundaryError], int | None, str]] = [
    (
        "anthropic rate limit",
        lambda: anthropic_error(429, "rate_limit_error"),
        fd.QuotaExhausted,
        429,
        "rate_limit_error",
    ),
    (
        "anthropic billing",
        lambda: anthropic_error(402, "billing_error"),
        fd.QuotaExhausted,
        402,
        "billing_error",
    ),
    (
        "anthropic 529",
        lambda: anthropic_error(529, "overloaded_error"),
        fd.TransientError,
        529,
        "overloaded_error",
    ),
    (
        "openai 529",
        lambda: openai_error(529, openai_body(None, "server_error")),
        fd.TransientError,
        529,
        "server_error",
    ),
    (
        "openai 503",
        lambda: openai_error(503, openai_body(None, "server_error")),
        fd.TransientError,
        503,
        "server_error",
    ),
    (
        "openai timeout",
        lambda: openai.APITimeoutError(request=REQUEST),
        fd.TransientError,
        None,
        "timeout",
    ),
    (
        "anthropic connection",
        lambda: anthropic.APIConnectionError(request=REQUEST),
        fd.TransientError,
        None,
        "connection",
    ),
    (
        "httpx2 read timeout",
        lambda: httpx2.ReadTimeout("timed out", request=REQUEST),
        fd.TransientError,
        None,
        "timeout",
    ),
    (
        "httpx connect error",
        lambda: httpx.ConnectError("refused"),
        fd.TransientError,
        None,
        "connection",
    ),
    (
        "httpx2 read error",
        lambda: httpx2.ReadError("reset by peer"),
        fd.TransientError,
        None,
        "connection",
    ),
    (
        "httpx2 remote protocol error",
        lambda: httpx2.RemoteProtocolError("peer closed connection"),
        fd.TransientError,
        None,
        "protocol",
    ),
    (
        "mcp request timeout",
        lambda: MCPError(mcp_types.REQUEST_TIMEOUT, "Request 'tools/call' timed out"),
        fd.TransientError,
        None,
        "timeout",
    ),
    (
        "mcp connection closed",
        lambda: MCPError(mcp_types.CONNECTION_CLOSED, "Connection closed"),
        fd.TransientError,
        None,
        "disconnected",
    ),
]


@pytest.mark.parametrize(
    ("made", "failure", "status", "code"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_each_library_error_is_the_policy_failure_it_stands_for(
    made: Made, failure: type[fd.BoundaryError], status: int | None, code: str
) -> None:
    exc = made()
    found = classify_error(exc)
    assert type(found) is failure
    assert (found.status, found.code) == (status, code)
    assert found.__cause__ is exc


def test_a_transient_sdk_error_is_retried_as_the_policy_says() -> None:
    exc = anthropic_error(529, "overloaded_error")
    failures = iter([exc, exc])

    def step(op: str) -> str:
        if next(failures, None) is not None:
            raise exc
        return op

    clock = fd.VirtualClock()
    [outcome] = fd.run_steps(step, ["a"], POLICY, clock=clock)
    assert (outcome.status, outcome.attempts) == ("ok", 3)
    assert len(clock.sleeps) == 2


@pytest.mark.parametrize(
    "made",
    [
        lambda: openai_error(400, openai_body("invalid_value", "invalid_request_error")),
        lambda: anthropic_error(401, "authentication_error"),
        lambda: httpx2.LocalProtocolError("bad request line"),
        lambda: MCPError(mcp_types.INVALID_PARAMS, "Invalid params"),
        lambda: ValueError("a bug in the step"),
    ],
    ids=["openai 400", "anthropic 401", "local protocol error", "mcp invalid params", "a bug"],
)
def test_anything_else_is_not_classified_and_leaves_the_loop(made: Made) -> None:
    exc = made()
    assert classify_error(exc) is None

    def step(op: str) -> str:
        raise exc

    with pytest.raises(type(exc)) as caught:
        fd.run_steps(step, ["a"], POLICY, clock=fd.VirtualClock())
    assert caught.value is exc


def test_a_library_that_is_not_loaded_is_never_imported(monkeypatch: pytest.MonkeyPatch) -> None:
    exc = openai_error(429, openai_body("rate_limit_exceeded"))
    monkeypatch.delitem(sys.modules, "openai")
    assert classify_error(exc) is None, "the class is looked up in sys.modules only"
    assert "openai" not in sys.modules


def test_faultdeck_runs_steps_without_any_of_the_libraries() -> None:
    blocked = sorted({rule.module for rule in SDK_ERRORS})
    code = (
        "import sys\n"
        f"for name in {blocked!r}:\n"
        "    sys.modules[name] = None  # importing it now raises ImportError\n"
        "import faultdeck as fd\n"
        "def step(op):\n"
        "    if op == 'b':\n"
        "        raise fd.QuotaExhausted('no', code='insufficient_quota')\n"
        "    return op\n"
        "out = fd.run_steps(step, ['a', 'b'], fd.Policy(), clock=fd.VirtualClock())\n"
        "print([o.status for o in out])\n"
        "try:\n"
        "    fd.run_steps(lambda op: 1 / 0, ['a'], fd.Policy(), clock=fd.VirtualClock())\n"
        "except ZeroDivisionError:\n"
        "    print('a bug leaves the loop')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=child_env(), check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["['ok', 'stopped']", "a bug leaves the loop"]
