"""requests routed by ``fd.intercept``: recorded against httpbin and the fake LLM upstream
(both on 127.0.0.1), replayed with both stopped, and rehearsed with faults.

What the program sees of each request (status, reason, headers but the hop-by-hop ones,
``date`` and ``content-length``, redirect history, cookies, body) is compared three ways:
a plain run with nothing routed, the recording run, and the replay. The cassette's calls
are the ones ``fd.http.Transport`` makes for the same requests sent with httpx2, and no
credential sent reaches it.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import pytest
import requests
import requests.adapters

import faultdeck as fd
from faultdeck import faults
from faultdeck.http import Transport

from ..support.fake_upstream import Upstream
from ..support.httpbin import httpbin
from .recordings import VOLATILE, Recording, events, meaning, named

ORIGINAL_SEND = requests.adapters.HTTPAdapter.send
SECRET = "sk-proj-" + "Qq1Ww2Ee3Rr4Tt5Yy6Uu7Ii8Oo9"
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
    history: list[tuple[int, str]]
    url: str
    body: bytes
    pieces: int

    def meaning(self) -> Any:
        return meaning(self.headers, self.body)


Recorded = Recording[Seen]


def seen(response: requests.Response, pieces: list[bytes] | None = None) -> Seen:
    if pieces is None:
        pieces = [response.content]
    headers: dict[str, list[str]] = {}
    for name, value in response.raw.headers.items():
        if name.lower() not in VOLATILE:
            headers.setdefault(name.lower(), []).append(value)
    return Seen(
        response.status_code,
        response.reason,
        headers,
        [(r.status_code, r.url) for r in response.history],
        response.url,
        b"".join(pieces),
        len([p for p in pieces if p]),
    )


def scenario(base: str, llm: str) -> dict[str, Seen]:
    """The requests a program makes, and what it saw of each."""
    out: dict[str, Seen] = {}
    with requests.Session() as session:
        out["query"] = seen(session.get(f"{base}/get", params={"q": "weather", "n": "2"}))
        out["json"] = seen(session.post(f"{base}/post", json={"city": "Paris", "n": [1, None]}))
        gzipped = session.get(f"{base}/gzip")
        assert gzipped.json()["gzipped"] is True
        out["gzip"] = seen(gzipped)
        out["redirect"] = seen(session.get(f"{base}/redirect/2"))
        out["404"] = seen(session.get(f"{base}/status/404"))
        out["500"] = seen(session.get(f"{base}/status/500"))
        out["bytes"] = seen(session.get(f"{base}/bytes/4096", params={"seed": "3"}))
        with session.get(f"{base}/stream/4", stream=True) as response:
            out["chunked"] = seen(response, list(response.iter_content(chunk_size=None)))
        with session.post(f"{llm}/v1/chat/completions", json=CHAT, stream=True) as response:
            lines = [line + b"\n" for line in response.iter_lines()]
            out["sse"] = seen(response, lines)
        out["generator"] = seen(session.post(f"{base}/anything", data=iter([b"ab", b"cd"])))
        out["file"] = seen(session.put(f"{base}/anything", data=io.BytesIO(b"file body")))
        out["cookies"] = seen(session.get(f"{base}/cookies/set", params={"flavour": "oat"}))
        out["cookie-jar"] = seen(session.get(f"{base}/cookies"))
    return out


def with_httpx2(client: httpx2.Client, base: str, llm: str) -> None:
    """The same requests sent with httpx2 (for the keys), following redirects as requests
    does."""
    client.get(f"{base}/get", params={"q": "weather", "n": "2"})
    client.post(f"{base}/post", json={"city": "Paris", "n": [1, None]})
    client.get(f"{base}/gzip")
    client.get(f"{base}/redirect/2", follow_redirects=True)
    client.get(f"{base}/status/404")
    client.get(f"{base}/status/500")
    client.get(f"{base}/bytes/4096", params={"seed": "3"})
    with client.stream("GET", f"{base}/stream/4") as response:
        response.read()
    with client.stream("POST", f"{llm}/v1/chat/completions", json=CHAT) as response:
        response.read()
    client.post(f"{base}/anything", content=b"abcd")
    client.put(f"{base}/anything", content=b"file body")


def secret_request(base: str) -> requests.Response:
    return requests.get(
        f"{base}/anything",
        params={"q": "x", "api_key": SECRET},
        headers={"Authorization": f"Bearer {SECRET}"},
    )


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    """Every recording made against one httpbin and one fake upstream, both stopped before
    any replay."""
    folder = tmp_path_factory.mktemp("requests")
    paths = {name: folder / f"{name}.jsonl" for name in ("run", "transport", "one", "secret")}
    with httpbin() as base, Upstream() as upstream:
        llm = upstream.url
        plain = scenario(base, upstream.url)
        with fd.Deck(paths["run"], mode="record") as deck, fd.intercept(deck):
            assert requests.adapters.HTTPAdapter.send is not ORIGINAL_SEND
            live = scenario(base, upstream.url)
            calls = named(deck.report())
        with fd.Deck(paths["transport"], mode="record") as deck:
            with httpx2.Client(transport=Transport(deck, httpx=httpx2)) as client:
                with_httpx2(client, base, upstream.url)
            by_transport = named(deck.report())
        with fd.Deck(paths["one"], mode="record") as deck, fd.intercept(deck):
            assert requests.get(f"{base}/get", params={"q": "one"}).ok
            with requests.post(f"{upstream.url}/v1/chat/completions", json=CHAT, stream=True) as r:
                assert len(list(r.iter_lines())) > 4
        with fd.Deck(paths["secret"], mode="record") as deck, fd.intercept(deck):
            assert secret_request(base).json()["args"]["api_key"] == SECRET
    with pytest.raises(requests.ConnectionError):  # the servers are gone
        requests.get(f"{base}/get", timeout=2)
    return Recorded(
        base,
        llm,
        plain,
        live,
        paths["run"],
        calls,
        by_transport,
        paths["one"],
        paths["secret"],
    )


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
        want, got = recorded.plain[name], replay[name]
        if name != "sse":  # its ids are fresh at each answer
            assert_same(live, want, f"live {name}")
        assert_same(got, live, f"replayed {name}")
    assert replay["redirect"].history == [
        (302, f"{recorded.base}/redirect/2"),
        (302, f"{recorded.base}/relative-redirect/1"),
    ]
    assert (replay["404"].status, replay["500"].status) == (404, 500)
    assert replay["cookie-jar"].meaning() == {"cookies": {"flavour": "oat"}}
    assert replay["generator"].meaning()["data"] == "abcd"
    assert replay["file"].meaning()["data"] == "file body"


def assert_same(got: Seen, want: Seen, name: str) -> None:
    assert got.status == want.status, name
    # (the reason phrase is not recorded: a replay gives the status's standard one)
    assert got.reason.lower() == want.reason.lower(), name
    assert got.headers == want.headers, name
    assert got.history == want.history, name
    assert got.url == want.url, name
    assert got.meaning() == want.meaning(), name


def test_bodies_and_streams_come_back_byte_for_byte_and_piece_by_piece(
    recorded: Recorded,
) -> None:
    with fd.Deck(recorded.cassette, mode="replay") as deck, fd.intercept(deck):
        replay = scenario(recorded.base, recorded.llm)
    for name in ("bytes", "chunked"):  # (a JSON body is stored by meaning)
        assert replay[name].body == recorded.live[name].body, name
    assert replay["bytes"].body == recorded.plain["bytes"].body
    assert replay["chunked"].body == recorded.plain["chunked"].body
    # The SSE stream came as its events, each read as it came, live and replayed.
    sent = recorded.live["sse"].body.count(b"data: ")
    assert sent > 4
    assert replay["sse"].body.count(b"data: ") == sent
    assert replay["sse"].pieces == recorded.live["sse"].pieces
    assert events(replay["sse"].body) == events(recorded.live["sse"].body)
    assert replay["sse"].body.rstrip().endswith(b"data: [DONE]")
    # The gzip body went to requests encoded, under its header (it decoded it: ``.json()``
    # in the scenario).
    assert replay["gzip"].headers["content-encoding"] == ["gzip"]


def test_a_replayed_stream_is_read_event_by_event(recorded: Recorded) -> None:
    with fd.Deck(recorded.one, mode="replay") as deck, fd.intercept(deck):
        assert requests.get(f"{recorded.base}/get", params={"q": "one"}).ok
        with requests.post(f"{recorded.llm}/v1/chat/completions", json=CHAT, stream=True) as r:
            assert r.headers["content-type"].startswith("text/event-stream")
            pieces = list(r.iter_content(chunk_size=None))
    assert len(pieces) > 4
    assert all(piece.startswith(b"data: ") and piece.endswith(b"\n\n") for piece in pieces)


def test_the_calls_are_the_ones_the_explicit_transport_makes(recorded: Recorded) -> None:
    # (the scenario's last requests, about cookies, were not sent with httpx2)
    names = [name for name, _ in recorded.calls]
    assert names[-3:] == ["GET /cookies/set", "GET /cookies", "GET /cookies"]
    assert recorded.calls[:-3] == recorded.by_transport
    assert names[3:6] == ["GET /redirect/2", "GET /relative-redirect/1", "GET /get"]
    assert "openai.chat.completions" in names


@pytest.mark.parametrize(
    ("fault", "check"),
    [
        (faults.transient(503), "503"),
        (faults.quota(retry_after=2), "429"),
        (faults.timeout(), "timeout"),
        (faults.reset(), "reset"),
    ],
    ids=["503", "quota", "timeout", "reset"],
)
def test_a_fault_reaches_the_program_as_requests_own(
    recorded: Recorded, fault: fd.Fault, check: str
) -> None:
    plan = [fault.on(name="GET /get")]

    def ask() -> requests.Response:
        return requests.get(f"{recorded.base}/get", params={"q": "one"})

    with fd.Deck(recorded.one, mode="replay", faults=plan) as deck, fd.intercept(deck):
        if check == "503":
            response = ask()
            assert response.status_code == 503
            with pytest.raises(requests.HTTPError):
                response.raise_for_status()
        elif check == "429":
            response = ask()
            assert response.status_code == 429
            assert response.headers["retry-after"] == "2"
            assert "rate_limit" in response.text
        elif check == "timeout":
            with pytest.raises(requests.ReadTimeout):
                ask()
        else:
            with pytest.raises(requests.ConnectionError) as caught:
                ask()
            assert not isinstance(caught.value, requests.Timeout)
    assert [c.fault for c in deck.report().calls][:1] == [fault.kind]


def test_a_stream_cut_short_breaks_iter_lines_as_a_dropped_connection_does(
    recorded: Recorded,
) -> None:
    plan = [faults.stream_cut(after=2).on(name="openai.chat.completions")]
    lines: list[bytes] = []
    with fd.Deck(recorded.one, mode="replay", faults=plan) as deck, fd.intercept(deck):
        assert requests.get(f"{recorded.base}/get", params={"q": "one"}).ok
        with requests.post(f"{recorded.llm}/v1/chat/completions", json=CHAT, stream=True) as r:
            with pytest.raises(requests.exceptions.ChunkedEncodingError):
                lines.extend(line for line in r.iter_lines() if line)
    assert len(lines) == 2


def test_a_live_failure_reaches_the_program_as_requests_raised_it(
    recorded: Recorded, tmp_path: Path
) -> None:
    with fd.Deck(tmp_path / "down.jsonl", mode="record") as deck, fd.intercept(deck):
        with pytest.raises(requests.ConnectionError) as caught:  # the server is gone
            requests.get(f"{recorded.base}/get", timeout=2)
    assert type(caught.value) is requests.ConnectionError
    assert "Connection refused" in str(caught.value)  # requests' own, through urllib3's
    assert deck.report().unanswered == ("ConnectError",)  # an outage, not an answer


def test_no_credential_reaches_the_cassette(recorded: Recorded) -> None:
    data = recorded.secret.read_bytes()
    assert SECRET.encode() not in data
    assert SECRET[8:].encode() not in data
    assert b"api_key" in data  # the parameter is there, its value masked
    with fd.Deck(recorded.secret, mode="replay") as deck, fd.intercept(deck):
        response = secret_request(recorded.base)
    assert response.status_code == 200
    assert SECRET not in response.text


def test_nothing_stays_patched_after_the_block(recorded: Recorded) -> None:
    with fd.Deck(recorded.one, mode="replay", repeats="last") as deck:
        with fd.intercept(deck):
            with fd.intercept(deck):  # blocks nest
                assert requests.adapters.HTTPAdapter.send is not ORIGINAL_SEND
            assert requests.adapters.HTTPAdapter.send is not ORIGINAL_SEND
        assert requests.adapters.HTTPAdapter.send is ORIGINAL_SEND
        assert "send" in vars(requests.adapters.HTTPAdapter)
        with pytest.raises(requests.ConnectionError):  # not routed: the real network
            requests.get(f"{recorded.base}/get", params={"q": "one"}, timeout=2)
    assert deck.report().calls == ()
