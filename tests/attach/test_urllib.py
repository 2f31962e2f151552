"""urllib.request routed by ``fd.intercept``: recorded against httpbin and the fake LLM
upstream (both on 127.0.0.1), replayed with both stopped, and rehearsed with faults.

urllib never decodes a body and raises ``HTTPError`` for a 4xx or 5xx: the replay does the
same, the error's body and headers as they were. What the program sees (status, reason,
headers but the hop-by-hop ones, ``date`` and ``content-length``, final URL, body) is
compared three ways: a plain run, the recording run and the replay.
"""

from __future__ import annotations

import gzip
import http.client
import io
import json
import urllib.error
import urllib.request
from dataclasses import dataclass
from email.message import Message
from pathlib import Path
from typing import Any

import httpx2
import orjson
import pytest

import faultdeck as fd
from faultdeck import faults
from faultdeck.http import Transport

from ..support.fake_upstream import Upstream
from ..support.httpbin import httpbin
from .recordings import VOLATILE, Recording, events, meaning, named

ORIGINAL_DO_OPEN = urllib.request.AbstractHTTPHandler.do_open
SECRET = "sk-proj-" + "Pp9Oo8Ii7Uu6Yy5Tt4Rr3Ee2Ww1"
CHAT: dict[str, Any] = {
    "model": "gpt-x",
    "messages": [{"role": "user", "content": "Hi"}],
    "stream": True,
}


@dataclass
class Seen:
    """What the program saw of one request."""

    status: int
    reason: str
    headers: dict[str, list[str]]
    url: str
    body: bytes
    lines: int = 0

    def meaning(self) -> Any:
        gzipped = self.headers.get("content-encoding") == ["gzip"]  # urllib leaves it so
        return meaning(self.headers, gzip.decompress(self.body) if gzipped else self.body)


Recorded = Recording[Seen]


def headers_of(message: Message) -> dict[str, list[str]]:
    headers: dict[str, list[str]] = {}
    for name, value in message.items():
        if name.lower() not in VOLATILE:
            headers.setdefault(name.lower(), []).append(value)
    return headers


def opened(request: urllib.request.Request | str, *, by_line: bool = False) -> Seen:
    """``urlopen`` as a program uses it: the response read whole (or line by line), or the
    ``HTTPError`` it raised read the same way."""
    try:
        response = urllib.request.urlopen(request, timeout=10)
    except urllib.error.HTTPError as error:
        with error:
            body = error.read()
            return Seen(error.code, error.reason, headers_of(error.headers), error.url, body)
    with response:
        assert response.getcode() == response.status
        assert response.msg == response.reason  # as urlopen leaves it
        if by_line:
            lines = list(response)
            return Seen(
                response.status,
                response.reason,
                headers_of(response.headers),
                response.geturl(),
                b"".join(lines),
                len(lines),
            )
        return Seen(
            response.status,
            response.reason,
            headers_of(response.headers),
            response.geturl(),
            response.read(),
        )


def post(url: str, body: Any, content_type: str = "application/json") -> urllib.request.Request:
    return urllib.request.Request(url, data=body, headers={"Content-Type": content_type})


def scenario(base: str, llm: str) -> dict[str, Seen]:
    """The requests a program makes, and what it saw of each."""
    return {
        "query": opened(f"{base}/get?q=weather&n=2"),
        "json": opened(post(f"{base}/post", json.dumps({"city": "Paris", "n": [1]}).encode())),
        "gzip": opened(f"{base}/gzip"),
        "redirect": opened(f"{base}/redirect/2"),
        "404": opened(f"{base}/status/404"),
        "500": opened(f"{base}/status/500"),
        "bytes": opened(f"{base}/bytes/4096?seed=3"),
        "chunked": opened(f"{base}/stream/4", by_line=True),
        "sse": opened(post(f"{llm}/v1/chat/completions", json.dumps(CHAT).encode()), by_line=True),
        "file": opened(post(f"{base}/anything", io.BytesIO(b"file body"), "text/plain")),
        "iterable": opened(post(f"{base}/anything", [b"ab", b"cd"], "text/plain")),
    }


def with_httpx2(client: httpx2.Client, base: str, llm: str) -> None:
    """The same requests sent with httpx2 (for the keys)."""
    client.get(f"{base}/get?q=weather&n=2")
    client.post(f"{base}/post", json={"city": "Paris", "n": [1]})
    client.get(f"{base}/gzip")
    client.get(f"{base}/redirect/2", follow_redirects=True)
    client.get(f"{base}/status/404")
    client.get(f"{base}/status/500")
    client.get(f"{base}/bytes/4096?seed=3")
    client.get(f"{base}/stream/4")
    client.post(f"{llm}/v1/chat/completions", json=CHAT)
    client.post(f"{base}/anything", content=b"file body", headers={"Content-Type": "text/plain"})
    client.post(f"{base}/anything", content=b"abcd", headers={"Content-Type": "text/plain"})


def secret_request(base: str) -> Seen:
    request = urllib.request.Request(
        f"{base}/anything?q=x&api_key={SECRET}", headers={"Authorization": f"Bearer {SECRET}"}
    )
    return opened(request)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    """Every recording made against one httpbin and one fake upstream, both stopped before
    any replay."""
    folder = tmp_path_factory.mktemp("urllib")
    paths = {name: folder / f"{name}.jsonl" for name in ("run", "transport", "one", "secret")}
    with httpbin() as base, Upstream() as upstream:
        llm = upstream.url
        plain = scenario(base, llm)
        with fd.Deck(paths["run"], mode="record") as deck, fd.intercept(deck):
            assert urllib.request.AbstractHTTPHandler.do_open is not ORIGINAL_DO_OPEN
            live = scenario(base, llm)
            calls = named(deck.report())
        with fd.Deck(paths["transport"], mode="record") as deck:
            with httpx2.Client(transport=Transport(deck, httpx=httpx2)) as client:
                with_httpx2(client, base, llm)
            by_transport = named(deck.report())
        with fd.Deck(paths["one"], mode="record") as deck, fd.intercept(deck):
            assert opened(f"{base}/get?q=one").status == 200
            chat = post(f"{llm}/v1/chat/completions", json.dumps(CHAT).encode())
            assert opened(chat, by_line=True).lines > 8
        with fd.Deck(paths["secret"], mode="record") as deck, fd.intercept(deck):
            assert orjson.loads(secret_request(base).body)["args"]["api_key"] == SECRET
    with pytest.raises(urllib.error.URLError):  # the servers are gone
        urllib.request.urlopen(f"{base}/get", timeout=2)
    return Recorded(
        base, llm, plain, live, paths["run"], calls, by_transport, paths["one"], paths["secret"]
    )


def assert_same(got: Seen, want: Seen, name: str) -> None:
    assert got.status == want.status, name
    # (the reason phrase is not recorded: a replay gives the status's standard one)
    assert got.reason.lower() == want.reason.lower(), name
    assert got.headers == want.headers, name
    assert got.url == want.url, name
    assert got.meaning() == want.meaning(), name


def test_replay_with_the_servers_stopped_gives_what_the_program_saw_live(
    recorded: Recorded,
) -> None:
    with fd.Deck(recorded.cassette, mode="replay") as deck, fd.intercept(deck):
        replay = scenario(recorded.base, recorded.llm)
        report = deck.report()
    assert report.live == 0
    assert report.used == report.entries == len(recorded.calls)
    assert report.misses == ()
    assert set(replay) == set(recorded.live) == set(recorded.plain)
    for name, live in recorded.live.items():
        if name != "sse":  # its ids are fresh at each answer
            assert_same(live, recorded.plain[name], f"live {name}")
        assert_same(replay[name], live, f"replayed {name}")
    assert replay["redirect"].url == f"{recorded.base}/get"
    assert (replay["404"].status, replay["500"].status) == (404, 500)  # raised as HTTPError
    assert orjson.loads(replay["file"].body)["data"] == "file body"
    assert orjson.loads(replay["iterable"].body)["data"] == "abcd"


def test_bodies_come_back_as_the_server_sent_them(recorded: Recorded) -> None:
    with fd.Deck(recorded.cassette, mode="replay") as deck, fd.intercept(deck):
        replay = scenario(recorded.base, recorded.llm)
    for name in ("bytes", "chunked"):  # (a JSON body is stored by meaning)
        assert replay[name].body == recorded.live[name].body == recorded.plain[name].body, name
    # urllib does not decode: the gzip body comes gzipped, under its header, live and
    # replayed (compressed again: the same body, not the same bytes).
    for seen in (recorded.plain["gzip"], recorded.live["gzip"], replay["gzip"]):
        assert seen.headers["content-encoding"] == ["gzip"]
        assert seen.body[:2] == b"\x1f\x8b"
        assert orjson.loads(gzip.decompress(seen.body))["gzipped"] is True
    assert replay["sse"].lines == recorded.live["sse"].lines > 8
    assert events(replay["sse"].body) == events(recorded.live["sse"].body)
    assert replay["sse"].body.rstrip().endswith(b"data: [DONE]")


def test_the_calls_are_the_ones_the_explicit_transport_makes(recorded: Recorded) -> None:
    assert recorded.calls == recorded.by_transport
    names = [name for name, _ in recorded.calls]
    assert names[3:6] == ["GET /redirect/2", "GET /relative-redirect/1", "GET /get"]
    assert "openai.chat.completions" in names


def ask(base: str) -> Any:
    return urllib.request.urlopen(f"{base}/get?q=one", timeout=10)


def test_an_injected_503_raises_httperror(recorded: Recorded) -> None:
    plan = [faults.transient(503).on(name="GET /get")]
    with fd.Deck(recorded.one, mode="replay", faults=plan) as deck, fd.intercept(deck):
        with pytest.raises(urllib.error.HTTPError) as caught:
            ask(recorded.base)
        with caught.value as error:
            assert error.code == 503
            assert error.headers["content-type"] == "application/json"
            assert b"error" in error.read()
    assert deck.report().calls[0].fault == "transient"


def test_an_injected_quota_raises_httperror_with_its_retry_after(recorded: Recorded) -> None:
    plan = [faults.quota(retry_after=2).on(name="GET /get")]
    with fd.Deck(recorded.one, mode="replay", faults=plan) as deck, fd.intercept(deck):
        with pytest.raises(urllib.error.HTTPError) as caught:
            ask(recorded.base)
        with caught.value as error:
            assert (error.code, error.headers["retry-after"]) == (429, "2")


def test_an_injected_timeout_raises_what_a_socket_timeout_raises(recorded: Recorded) -> None:
    plan = [faults.timeout().on(name="GET /get")]
    with fd.Deck(recorded.one, mode="replay", faults=plan) as deck, fd.intercept(deck):
        # Waiting for an answer, urlopen raises the socket's timeout itself (no URLError).
        with pytest.raises(TimeoutError):
            ask(recorded.base)


def test_an_injected_reset_raises_a_connection_reset(recorded: Recorded) -> None:
    plan = [faults.reset().on(name="GET /get")]
    with fd.Deck(recorded.one, mode="replay", faults=plan) as deck, fd.intercept(deck):
        with pytest.raises(ConnectionResetError):
            ask(recorded.base)


def test_a_stream_cut_short_ends_the_body_short(recorded: Recorded) -> None:
    plan = [faults.stream_cut(after=2).on(name="openai.chat.completions")]
    chat = post(f"{recorded.llm}/v1/chat/completions", json.dumps(CHAT).encode())
    deck = fd.Deck(recorded.one, mode="replay", faults=plan, repeats="last")
    with deck, fd.intercept(deck):
        with ask(recorded.base) as response:
            assert response.status == 200
        with urllib.request.urlopen(chat, timeout=10) as response:
            # Reading line by line, http.client ends a chunked body the server cut short
            # quietly (its peek swallows the IncompleteRead), as it does live.
            lines = [line for line in response if line.startswith(b"data: ")]
        with urllib.request.urlopen(chat, timeout=10) as response:
            with pytest.raises(http.client.IncompleteRead):  # read whole, it says so
                response.read()
    assert len(lines) == 2
    cut = [call for call in deck.report().calls if call.name == "openai.chat.completions"]
    assert [(call.fault, call.partial) for call in cut] == [("stream_cut", True)] * 2


def test_a_live_failure_reaches_the_program_as_urllib_raised_it(
    recorded: Recorded, tmp_path: Path
) -> None:
    with fd.Deck(tmp_path / "down.jsonl", mode="record") as deck, fd.intercept(deck):
        with pytest.raises(urllib.error.URLError) as caught:  # the server is gone
            ask(recorded.base)
    assert isinstance(caught.value.reason, ConnectionRefusedError)
    assert deck.report().unanswered == ("ConnectError",)  # an outage, not an answer


def test_no_credential_reaches_the_cassette(recorded: Recorded) -> None:
    data = recorded.secret.read_bytes()
    assert SECRET.encode() not in data
    assert SECRET[8:].encode() not in data
    assert b"api_key" in data  # the parameter is there, its value masked
    with fd.Deck(recorded.secret, mode="replay") as deck, fd.intercept(deck):
        seen = secret_request(recorded.base)
    assert seen.status == 200
    assert SECRET.encode() not in seen.body


def test_nothing_stays_patched_after_the_block(recorded: Recorded) -> None:
    with fd.Deck(recorded.one, mode="replay") as deck:
        with fd.intercept(deck):
            with fd.intercept(deck):  # blocks nest
                assert urllib.request.AbstractHTTPHandler.do_open is not ORIGINAL_DO_OPEN
            assert urllib.request.AbstractHTTPHandler.do_open is not ORIGINAL_DO_OPEN
        assert urllib.request.AbstractHTTPHandler.do_open is ORIGINAL_DO_OPEN
        assert "do_open" in vars(urllib.request.AbstractHTTPHandler)
        assert "do_open" not in vars(urllib.request.HTTPHandler)
        with pytest.raises(urllib.error.URLError):  # not routed: the real network
            ask(recorded.base)
    assert deck.report().calls == ()
