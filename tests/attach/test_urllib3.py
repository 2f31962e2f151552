"""urllib3 used directly, routed by ``fd.intercept``: recorded against httpbin and the fake
LLM upstream (both on 127.0.0.1), replayed with both stopped, and rehearsed with faults.

What the program sees of each request (status, reason, headers but the hop-by-hop ones,
``date`` and ``content-length``, final URL, redirect history, body and how it came in
pieces) is compared three ways: a plain run with nothing routed, the recording run, and the
replay. The cassette's calls are the ones ``fd.http.Transport`` makes for the same requests
sent with httpx2, and urllib3's own ``Retry`` runs on the answers: each attempt is a call.
"""

from __future__ import annotations

import io
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import pytest
import requests
import urllib3
from urllib3 import exceptions as u3
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

import faultdeck as fd
from faultdeck import faults
from faultdeck._base.clock import VirtualClock
from faultdeck.attach._clock import virtual_time
from faultdeck.http import Transport

from ..support.children import child_env, run
from ..support.fake_upstream import Upstream
from ..support.httpbin import httpbin
from ..support.outage import Refused, Silent
from ..support.proxies import Proxy, TLSServer
from .recordings import VOLATILE, Recording, events, meaning, named

ORIGINAL_MAKE_REQUEST = vars(HTTPConnectionPool)["_make_request"]
ORIGINAL_PREPARE_PROXY = vars(HTTPSConnectionPool)["_prepare_proxy"]
SECRET = "sk-proj-" + "Zz1Xx2Cc3Vv4Bb5Nn6Mm7Ll8Kk9"
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
    url: str | None
    history: list[tuple[int | None, str | None]]
    body: bytes
    pieces: int

    def meaning(self) -> Any:
        return meaning(self.headers, self.body)


Recorded = Recording[Seen]


def seen(response: urllib3.BaseHTTPResponse, pieces: list[bytes] | None = None) -> Seen:
    if pieces is None:
        pieces = [response.data]
    headers: dict[str, list[str]] = {}
    for name, value in response.headers.iteritems():
        if name.lower() not in VOLATILE:
            headers.setdefault(name.lower(), []).append(value)
    history = response.retries.history if response.retries else ()
    return Seen(
        response.status,
        response.reason or "",
        headers,
        response.url,
        [(hop.status, hop.url) for hop in history],
        b"".join(pieces),
        len([p for p in pieces if p]),
    )


def streamed(response: urllib3.BaseHTTPResponse) -> Seen:
    """A response asked for with ``preload_content=False``, read as it comes."""
    with response:
        return seen(response, list(response.stream(None)))


def scenario(base: str, llm: str) -> dict[str, Seen]:
    """The requests a program makes, and what it saw of each."""
    out: dict[str, Seen] = {}
    with urllib3.PoolManager() as http:
        out["query"] = seen(http.request("GET", f"{base}/get", fields={"q": "weather", "n": "2"}))
        out["json"] = seen(http.request("POST", f"{base}/post", json={"city": "Paris", "n": [1]}))
        gzipped = http.request("GET", f"{base}/gzip")
        assert gzipped.json()["gzipped"] is True  # decoded, as live
        out["gzip"] = seen(gzipped)
        out["redirect"] = seen(urllib3.request("GET", f"{base}/redirect/2"))
        out["404"] = seen(http.request("GET", f"{base}/status/404"))
        out["head"] = seen(http.request("HEAD", f"{base}/get"))
        with http.request("GET", f"{base}/bytes/4096?seed=3", preload_content=False) as raw:
            out["bytes"] = seen(raw, [raw.read(1000), raw.read(1000), raw.read()])
        out["chunked"] = streamed(http.request("GET", f"{base}/stream/4", preload_content=False))
        sse = http.request("POST", f"{llm}/v1/chat/completions", json=CHAT, preload_content=False)
        out["sse"] = streamed(sse)
        out["file"] = seen(http.request("PUT", f"{base}/anything", body=io.BytesIO(b"file body")))
        out["iterable"] = seen(http.request("POST", f"{base}/anything", body=iter([b"ab", b"cd"])))
    with urllib3.connection_from_url(base) as pool:  # a pool of the program's own
        out["pool"] = seen(pool.request("GET", "/get?q=pool"))
    return out


def with_httpx2(client: httpx2.Client, base: str, llm: str) -> None:
    """The same requests sent with httpx2 (for the keys)."""
    client.get(f"{base}/get", params={"q": "weather", "n": "2"})
    client.post(f"{base}/post", json={"city": "Paris", "n": [1]})
    client.get(f"{base}/gzip")
    client.get(f"{base}/redirect/2", follow_redirects=True)
    client.get(f"{base}/status/404")
    client.head(f"{base}/get")
    client.get(f"{base}/bytes/4096?seed=3")
    client.get(f"{base}/stream/4")
    client.post(f"{llm}/v1/chat/completions", json=CHAT)
    client.put(f"{base}/anything", content=b"file body")
    client.post(f"{base}/anything", content=b"abcd")
    client.get(f"{base}/get?q=pool")


def secret_request(base: str) -> urllib3.BaseHTTPResponse:
    return urllib3.request(
        "GET",
        f"{base}/anything",
        fields={"q": "x", "api_key": SECRET},
        headers={"Authorization": f"Bearer {SECRET}"},
    )


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    """Every recording made against one httpbin and one fake upstream, both stopped before
    any replay."""
    folder = tmp_path_factory.mktemp("urllib3")
    paths = {name: folder / f"{name}.jsonl" for name in ("run", "transport", "one", "secret")}
    with httpbin() as base, Upstream() as upstream:
        llm = upstream.url
        plain = scenario(base, llm)
        with fd.Deck(paths["run"], mode="record") as deck, fd.intercept(deck):
            assert HTTPConnectionPool._make_request is not ORIGINAL_MAKE_REQUEST
            live = scenario(base, llm)
            calls = named(deck.report())
        with fd.Deck(paths["transport"], mode="record") as deck:
            with httpx2.Client(transport=Transport(deck, httpx=httpx2)) as client:
                with_httpx2(client, base, llm)
            by_transport = named(deck.report())
        with fd.Deck(paths["one"], mode="record") as deck, fd.intercept(deck):
            assert urllib3.request("GET", f"{base}/get", fields={"q": "one"}).status == 200
        with fd.Deck(paths["secret"], mode="record") as deck, fd.intercept(deck):
            assert secret_request(base).json()["args"]["api_key"] == SECRET
    with pytest.raises(u3.NewConnectionError):  # the servers are gone
        urllib3.request("GET", f"{base}/get", retries=False)
    return Recorded(
        base, llm, plain, live, paths["run"], calls, by_transport, paths["one"], paths["secret"]
    )


def assert_same(got: Seen, want: Seen, name: str) -> None:
    assert got.status == want.status, name
    # (the reason phrase is not recorded: a replay gives the status's standard one)
    assert got.reason.lower() == want.reason.lower(), name
    assert got.headers == want.headers, name
    assert got.url == want.url, name
    assert got.history == want.history, name
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
    assert replay["redirect"].history == [
        (302, f"{recorded.base}/redirect/2"),
        (302, f"{recorded.base}/relative-redirect/1"),
    ]
    assert replay["redirect"].meaning()["url"] == f"{recorded.base}/get"
    assert replay["query"].meaning()["args"] == {"q": "weather", "n": "2"}
    assert replay["json"].meaning()["json"] == {"city": "Paris", "n": [1]}
    assert (replay["404"].status, replay["head"].body) == (404, b"")
    assert replay["file"].meaning()["data"] == "file body"
    assert replay["iterable"].meaning()["data"] == "abcd"


def test_bodies_and_streams_come_back_byte_for_byte_and_piece_by_piece(
    recorded: Recorded,
) -> None:
    with fd.Deck(recorded.cassette, mode="replay") as deck, fd.intercept(deck):
        replay = scenario(recorded.base, recorded.llm)
    for name in ("bytes", "chunked"):  # (a JSON body is stored by meaning)
        assert replay[name].body == recorded.live[name].body == recorded.plain[name].body, name
    assert replay["bytes"].pieces == 3  # read(1000), read(1000), read()
    # Live, /stream/4 came to the program a chunk a line through the recording; the SSE
    # stream comes an event a chunk, live and replayed.
    assert recorded.live["chunked"].pieces == recorded.plain["chunked"].pieces == 4
    assert replay["sse"].pieces == recorded.live["sse"].pieces > 4
    assert events(replay["sse"].body) == events(recorded.live["sse"].body)
    assert replay["sse"].body.rstrip().endswith(b"data: [DONE]")
    # The gzip body went to urllib3 encoded, under its header, and urllib3 decoded it.
    assert replay["gzip"].headers["content-encoding"] == ["gzip"]
    assert replay["gzip"].meaning()["gzipped"] is True


def test_the_calls_are_the_ones_the_explicit_transport_makes(recorded: Recorded) -> None:
    assert recorded.calls == recorded.by_transport
    names = [name for name, _ in recorded.calls]
    assert names[3:6] == ["GET /redirect/2", "GET /relative-redirect/1", "GET /get"]
    assert "openai.chat.completions" in names


def test_requests_is_recorded_once(tmp_path: Path) -> None:
    with httpbin() as base:
        with fd.Deck(tmp_path / "requests.jsonl", mode="record") as deck, fd.intercept(deck):
            assert HTTPConnectionPool._make_request is not ORIGINAL_MAKE_REQUEST
            assert requests.get(f"{base}/get", params={"q": "once"}).ok  # urllib3 under it
    assert [(c.name, c.source) for c in deck.report().calls] == [("GET /get", "live")]
    with fd.Deck(tmp_path / "requests.jsonl") as deck, fd.intercept(deck):
        assert requests.get(f"{base}/get", params={"q": "once"}).json()["args"] == {"q": "once"}
    assert deck.report().used == 1


def ask(base: str, **options: Any) -> urllib3.BaseHTTPResponse:
    return urllib3.request("GET", f"{base}/get", fields={"q": "one"}, **options)


@pytest.mark.parametrize(
    ("fault", "reason"),
    [(faults.timeout(), u3.ReadTimeoutError), (faults.reset(), u3.ProtocolError)],
    ids=["timeout", "reset"],
)
def test_a_transport_fault_reaches_the_program_as_urllib3_s_own(
    recorded: Recorded, fault: fd.Fault, reason: type[Exception]
) -> None:
    plan = [fault.on(name="GET /get")]  # at every attempt
    with fd.Deck(recorded.one, mode="replay", faults=plan) as deck, fd.intercept(deck):
        with pytest.raises(reason):  # no retries: the connection's error as it is
            ask(recorded.base, retries=False)
        with pytest.raises(u3.MaxRetryError) as caught:  # Retry's default: three more
            ask(recorded.base)
    assert isinstance(caught.value.reason, reason)
    if fault.kind == "reset":
        assert isinstance(caught.value.reason.args[1], ConnectionResetError)
    assert [c.fault for c in deck.report().calls] == [fault.kind] * 5


def test_a_retry_after_the_fault_is_answered_from_the_cassette(recorded: Recorded) -> None:
    plan = [faults.timeout().at(seq=1)]
    with fd.Deck(recorded.one, mode="replay", faults=plan) as deck, fd.intercept(deck):
        assert ask(recorded.base).json()["args"] == {"q": "one"}
    assert [(c.fault, c.source) for c in deck.report().calls] == [
        ("timeout", "fault"),
        (None, "replay"),
    ]


@pytest.fixture
def clock() -> Iterator[VirtualClock]:
    """The program's time on a virtual clock: a Retry-After waited out takes no time."""
    clock = VirtualClock()
    undo = virtual_time(clock)
    yield clock
    undo()


def test_a_429_with_retry_after_is_waited_out_and_sent_again(
    recorded: Recorded, clock: VirtualClock
) -> None:
    plan = [faults.quota(retry_after=2).at(seq=1)]
    with fd.Deck(recorded.one, faults=plan, clock=clock) as deck, fd.intercept(deck):
        response = ask(recorded.base)
    assert (response.status, response.json()["args"]) == (200, {"q": "one"})
    report = deck.report()
    assert [(c.fault, c.source) for c in report.calls] == [("quota", "fault"), (None, "replay")]
    assert report.calls[0].retry_after == 2
    # urllib3 slept the Retry-After, on the deck's clock, then sent again.
    assert report.sleeps == (2.0,)
    assert report.calls[1].started - report.calls[0].started == 2.0
    # Without a Retry-After, urllib3's default Retry gives the 429 to the program.
    plan = [faults.quota().at(seq=1)]
    with fd.Deck(recorded.one, faults=plan, clock=clock) as deck, fd.intercept(deck):
        assert ask(recorded.base).status == 429
    assert len(deck.report().calls) == 1


def test_a_live_failure_reaches_the_program_as_urllib3_raised_it(tmp_path: Path) -> None:
    with Refused() as refused, Silent() as silent:
        with fd.Deck(tmp_path / "down.jsonl", mode="record") as deck, fd.intercept(deck):
            with pytest.raises(u3.NewConnectionError) as caught:
                urllib3.request("GET", f"{refused.url}/get", retries=False)
            assert "Connection refused" in str(caught.value)
            with pytest.raises(u3.ReadTimeoutError):
                urllib3.request("GET", f"{silent.url}/slow", retries=False, timeout=0.5)
    assert type(caught.value) is u3.NewConnectionError  # urllib3's own, as it raised it
    assert deck.report().unanswered == ("ConnectError", "ReadTimeout")  # outages, not answers


def test_through_a_proxy_the_calls_are_the_server_s_and_replay_without_it(
    tmp_path: Path,
) -> None:
    auth = urllib3.make_headers(proxy_basic_auth=f"agent:{SECRET}")
    cassette = tmp_path / "proxy.jsonl"

    def run(proxy: str, base: str, tls: TLSServer) -> list[Any]:
        via = urllib3.ProxyManager(proxy, proxy_headers=auth, ca_cert_data=tls.ca)
        return [
            urllib3.request("GET", f"{base}/get", fields={"q": "one"}).json(),
            via.request("GET", f"{base}/get", fields={"q": "one"}).json(),  # forwarded
            via.request("GET", f"{tls.url}/secure").json(),  # through a CONNECT tunnel
        ]

    with httpbin() as base, Proxy() as proxy, TLSServer() as tls:
        with fd.Deck(cassette, mode="record") as deck, fd.intercept(deck):
            live = run(proxy.url, base, tls)
        assert proxy.carried == [f"GET {base}/get?q=one", f"CONNECT 127.0.0.1:{tls.port}"]
        assert len(proxy.authorized) == 2
    assert live[1]["args"] == {"q": "one"}
    assert live[2] == {"path": "/secure", "tls": True}
    direct, forwarded, tunnelled = named(deck.report())
    assert direct == forwarded  # the same request, keyed the same, proxy or not
    assert tunnelled[0] == "GET /secure"
    assert SECRET[8:].encode() not in cassette.read_bytes()  # the proxy's credential
    with fd.Deck(cassette) as deck, fd.intercept(deck):  # the proxy and servers are gone
        assert run(proxy.url, base, tls) == live
    assert deck.report().live == 0


def test_no_credential_reaches_the_cassette(recorded: Recorded) -> None:
    data = recorded.secret.read_bytes()
    assert SECRET.encode() not in data
    assert SECRET[8:].encode() not in data
    assert b"api_key" in data  # the parameter is there, its value masked
    with fd.Deck(recorded.secret, mode="replay") as deck, fd.intercept(deck):
        response = secret_request(recorded.base)
    assert response.status == 200
    assert SECRET not in response.data.decode()


def test_urllib3_imported_inside_the_block_is_routed_and_not_imported_before(
    tmp_path: Path,
) -> None:
    program = f"""
import sys
import faultdeck as fd
with fd.Deck({str(tmp_path / "run.jsonl")!r}, mode="record") as deck, fd.intercept(deck):
    before = "urllib3" in sys.modules
    import urllib3
    status = urllib3.request("GET", sys.argv[1] + "/v1/models").status
print(before, status, [call.name for call in deck.calls])
"""
    with Upstream() as upstream:
        done = run([sys.executable, "-c", program, upstream.url], env=child_env())
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "200", "['GET", "/v1/models']"]


def test_nothing_stays_patched_after_the_block(recorded: Recorded) -> None:
    with fd.Deck(recorded.one, mode="replay", repeats="last") as deck:
        with fd.intercept(deck):
            with fd.intercept(deck):  # blocks nest
                assert HTTPConnectionPool._make_request is not ORIGINAL_MAKE_REQUEST
            assert HTTPSConnectionPool._prepare_proxy is not ORIGINAL_PREPARE_PROXY
        assert vars(HTTPConnectionPool)["_make_request"] is ORIGINAL_MAKE_REQUEST
        assert vars(HTTPSConnectionPool)["_prepare_proxy"] is ORIGINAL_PREPARE_PROXY
        assert "_make_request" not in vars(HTTPSConnectionPool)
        with pytest.raises(u3.NewConnectionError):  # not routed: the real network
            ask(recorded.base, retries=False)
    assert deck.report().calls == ()
