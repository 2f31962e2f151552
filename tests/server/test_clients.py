"""``faultdeck serve`` used by clients that are not Python: the OpenAI Node SDK and curl.

Each client talks to the provider three times: directly, through a record-mode server
(live), and through a replay-mode server with the provider stopped. What it gets must be
the same each time: the status, every header a client acts on (all but the per-hop ones),
the body byte for byte (JSON by meaning), and a stream chunk by chunk as it comes. The
API key the clients send is never in a cassette.
"""

from __future__ import annotations

import base64
import random
import string
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from faultdeck._cassette.reader import load
from tests.support.fake_upstream import DEFAULT_TEXT, Upstream
from tests.support.sdk import assert_dead

from .clients import HOP, Fetched, NodeRun, comparable, curl, run_node
from .serving import served
from .upstream import BLOB, PIXELS, SQUEEZED, TRICKLE, Gate, create_world

KEY = "sk-proj-" + "".join(
    random.SystemRandom().choices(string.ascii_letters + string.digits, k=40)
)
_TAIL = random.Random(1).randbytes(509)
# Two uploads that differ only in bytes that are not UTF-8: read as text, they are the same.
UPLOADS = {"a": b"\xff\xfe\x00" + _TAIL, "b": b"\x80\x81\x00" + _TAIL}
# (name, path, curl's arguments); a POST's body is a file named after it.
REQUESTS: list[tuple[str, str, tuple[str, ...]]] = [
    ("png", "/v1/static/pixel.png", ()),
    ("moved", "/v1/moved", ()),
    ("items", "/v1/items?limit=2", ()),
    ("deleted", "/v1/items/3", ("-X", "DELETE")),
    ("upload_a", "/v1/uploads", ("-H", "Content-Type: application/octet-stream")),
    ("upload_b", "/v1/uploads", ("-H", "Content-Type: application/octet-stream")),
    ("squeezed", "/v1/squeezed", ()),
    ("squeezed_gzip", "/v1/squeezed", ("--compressed",)),
    ("trickle", "/v1/trickle", ()),
]
PHASES = ("direct", "live", "replay")


@dataclass
class Seen:
    """What the clients got in one phase."""

    node: NodeRun
    curl: dict[str, Fetched]


def fetch_all(tmp: Path, origin: str, gate: Gate | None, *, reverse: bool = False) -> Any:
    """Every curl request against ``origin`` (uploads in the other order when
    ``reverse``: a replay must answer each by its own bytes, not by its place)."""
    fetched: dict[str, Fetched] = {}
    for name, path, args in reversed(REQUESTS) if reverse else REQUESTS:
        extra = args
        if name.startswith("upload_"):
            body = tmp / f"{name}.bin"
            body.write_bytes(UPLOADS[name[-1]])
            extra = (*args, "--data-binary", f"@{body}")
        first = TRICKLE[0] if name == "trickle" else b""
        fetched[name] = curl(tmp, origin + path, *extra, key=KEY, gate=gate, first=first)
    return fetched


@pytest.fixture(scope="module")
def seen(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Seen]]:
    """Both clients directly, through a record-mode server, and through a replay-mode
    server once the provider is gone."""
    tmp = tmp_path_factory.mktemp("clients")
    cassettes = tmp / "cassettes"
    gate = Gate()
    phases: dict[str, Seen] = {}
    with Upstream(app=create_world(gate)) as upstream:
        phases["direct"] = Seen(
            run_node(f"{upstream.url}/v1", KEY, gate), fetch_all(tmp, upstream.url, gate)
        )
        args = ("--cassettes", str(cassettes), "--mode", "record", "--upstream", upstream.url)
        with served(tmp, *args) as server:
            node = run_node(f"{server.base('node')}/v1", KEY, gate)
            phases["live"] = Seen(node, fetch_all(tmp, server.base("curl"), gate))
            assert server.stop() == 0, server.log.read_text()
        url = upstream.url
    assert_dead(url)
    with served(tmp, "--cassettes", str(cassettes)) as server:
        node = run_node(f"{server.base('node')}/v1", KEY, None)
        phases["replay"] = Seen(node, fetch_all(tmp, server.base("curl"), None, reverse=True))
    return cassettes, phases


def node_runs(seen: tuple[Path, dict[str, Seen]]) -> dict[str, NodeRun]:
    runs = {phase: one.node for phase, one in seen[1].items()}
    for phase, run in runs.items():
        assert run.code == 0, f"{phase}: node exited {run.code}: {run.steps} {run.stderr}"
    return runs


def fetched(seen: tuple[Path, dict[str, Seen]], name: str) -> dict[str, Fetched]:
    return {phase: one.curl[name] for phase, one in seen[1].items()}


def without(body: Any, *fields: str) -> Any:
    """``body`` without the volatile fields a cassette declares (``created``)."""
    return {k: v for k, v in body.items() if k not in fields}


# ---------------------------------------------------------------- the Node SDK


def test_node_chat_is_the_same_live_and_replayed(seen: tuple[Path, dict[str, Seen]]) -> None:
    runs = node_runs(seen)
    chats = {phase: run.steps["chat"] for phase, run in runs.items()}
    for chat in chats.values():
        assert chat["status"] == 200
        assert chat["body"]["choices"][0]["message"]["content"] == DEFAULT_TEXT
    live, replay = chats["live"], chats["replay"]
    assert without(replay["body"], "created") == without(live["body"], "created")
    drop = HOP | {"content-length"}  # a JSON body is compared by meaning, not by its length
    assert comparable(replay["headers"], drop=drop) == comparable(live["headers"], drop=drop)
    # The fake provider's ids are fresh per answer: directly, the same headers by name.
    names = {phase: sorted({n for n, _ in comparable(c["headers"])}) for phase, c in chats.items()}
    assert names["live"] == names["direct"]
    assert "x-request-id" in names["direct"]


def test_node_stream_comes_chunk_by_chunk_live_and_replays_the_same(
    seen: tuple[Path, dict[str, Seen]],
) -> None:
    runs = node_runs(seen)
    # Live, the first chunk reached the SDK while the provider still held the rest.
    assert runs["direct"].rest_sent_first is False
    assert runs["live"].rest_sent_first is False, "the proxy held the stream back"
    texts = {
        phase: "".join(c["choices"][0]["delta"].get("content") or "" for c in run.chunks)
        for phase, run in runs.items()
    }
    assert texts == dict.fromkeys(PHASES, DEFAULT_TEXT)
    assert len(runs["live"].chunks) == len(runs["direct"].chunks)
    live = [without(chunk, "created") for chunk in runs["live"].chunks]
    assert [without(chunk, "created") for chunk in runs["replay"].chunks] == live
    stream = {phase: run.steps["stream"] for phase, run in runs.items()}
    assert comparable(stream["replay"]["headers"]) == comparable(stream["live"]["headers"])
    assert ("content-type", "text/event-stream; charset=utf-8") in stream["replay"]["headers"]


def test_node_binary_file_arrives_byte_for_byte(seen: tuple[Path, dict[str, Seen]]) -> None:
    runs = node_runs(seen)
    for phase, run in runs.items():
        file = run.steps["file"]
        assert base64.b64decode(file["base64"]) == BLOB, phase
        assert file["status"] == 200
    headers = {phase: comparable(run.steps["file"]["headers"]) for phase, run in runs.items()}
    assert headers["live"] == headers["direct"]
    assert headers["replay"] == headers["direct"]
    assert ("content-type", "application/octet-stream") in headers["replay"]
    assert ("etag", '"blob-v1"') in headers["replay"]


def test_node_sees_the_429_and_its_retry_after(seen: tuple[Path, dict[str, Seen]]) -> None:
    runs = node_runs(seen)
    busy = {phase: run.steps["busy"] for phase, run in runs.items()}
    drop = HOP | {"content-length"}  # a JSON body is compared by meaning, not by its length
    for phase in ("live", "replay"):
        assert busy[phase]["status"] == 429
        assert busy[phase]["body"] == busy["direct"]["body"], phase
        headers = comparable(busy[phase]["headers"], drop=drop)
        assert headers == comparable(busy["direct"]["headers"], drop=drop), phase
    assert ("retry-after", "7") in busy["replay"]["headers"]


# ---------------------------------------------------------------------- curl


@pytest.mark.parametrize("name", ["png", "moved", "deleted", "trickle"])
def test_curl_gets_the_same_status_headers_and_bytes(
    seen: tuple[Path, dict[str, Seen]], name: str
) -> None:
    got = fetched(seen, name)
    direct = got["direct"]
    for phase in ("live", "replay"):
        # A replay makes content-length again from the body (which it may stream as it came).
        drop = HOP if phase == "live" else HOP | {"content-length"}
        assert got[phase].status == direct.status, phase
        assert comparable(got[phase].headers, drop=drop) == comparable(direct.headers, drop=drop)
        assert got[phase].body == direct.body, phase


def test_the_png_and_the_redirect_are_what_the_provider_sent(
    seen: tuple[Path, dict[str, Seen]],
) -> None:
    png, moved = fetched(seen, "png")["replay"], fetched(seen, "moved")["replay"]
    assert png.body == PIXELS
    assert ("content-type", "image/png") in png.headers
    assert ("etag", '"pixel-v1"') in png.headers
    assert moved.status == 302
    assert ("location", "/v1/static/pixel.png") in moved.headers


def test_curl_json_with_link_and_cookies(seen: tuple[Path, dict[str, Seen]]) -> None:
    got = fetched(seen, "items")
    drop = HOP | {"content-length"}
    for phase in ("live", "replay"):
        assert got[phase].status == 200
        assert got[phase].json() == got["direct"].json(), phase
        assert comparable(got[phase].headers, drop=drop) == comparable(
            got["direct"].headers, drop=drop
        ), phase
    headers = got["replay"].headers
    assert ("link", '</v1/items?after=item_2>; rel="next"') in headers
    assert ("set-cookie", "theme=dark; Path=/; SameSite=lax") in headers
    assert ("set-cookie", "lang=fr; Path=/; SameSite=lax") in headers


def test_curl_gets_gzip_only_when_it_asks(seen: tuple[Path, dict[str, Seen]]) -> None:
    # Without --compressed curl sends no Accept-Encoding: the bytes it gets are the JSON's
    # (the proxy asks the upstream for no coding the client did not ask for).
    plain = fetched(seen, "squeezed")
    for phase in PHASES:
        assert plain[phase].json() == SQUEEZED, phase
    assert plain["live"].body == plain["direct"].body
    assert comparable(plain["live"].headers) == comparable(plain["direct"].headers)
    # With it, curl decodes what it gets, gzipped or not (a replay may send it plain).
    drop = HOP | {"content-length", "content-encoding"}
    squeezed = fetched(seen, "squeezed_gzip")
    assert ("content-encoding", "gzip") in squeezed["direct"].headers
    for phase in PHASES:
        assert squeezed[phase].json() == SQUEEZED, phase
        got = comparable(squeezed[phase].headers, drop=drop)
        assert got == comparable(squeezed["direct"].headers, drop=drop), phase


def test_curl_uploads_are_answered_by_their_own_bytes(
    seen: tuple[Path, dict[str, Seen]],
) -> None:
    for name in ("upload_a", "upload_b"):
        got = fetched(seen, name)
        assert got["direct"].json()["head"] == UPLOADS[name[-1]][:4].hex()
        assert got["live"].json() == got["direct"].json(), name
        assert got["replay"].json() == got["direct"].json(), name


def test_a_chunked_body_comes_chunk_by_chunk_live(seen: tuple[Path, dict[str, Seen]]) -> None:
    got = fetched(seen, "trickle")
    assert got["direct"].rest_sent_first is False
    assert got["live"].rest_sent_first is False, "the proxy held the body back"
    for phase in PHASES:
        assert got[phase].body == b"".join(TRICKLE), phase
    for phase in ("direct", "live"):
        assert "content-length" not in {name.lower() for name, _ in got[phase].headers}, phase


# ------------------------------------------------------------------ cassettes


def test_the_cassettes_hold_the_calls_and_no_api_key(seen: tuple[Path, dict[str, Seen]]) -> None:
    cassettes, _ = seen
    assert sorted(p.name for p in cassettes.glob("*.jsonl")) == ["curl.jsonl", "node.jsonl"]
    assert len(load(cassettes / "node.jsonl").entries) == 4
    assert len(load(cassettes / "curl.jsonl").entries) == len(REQUESTS)
    for path in cassettes.glob("*.jsonl"):
        text = path.read_text()
        assert KEY not in text
        assert KEY[len("sk-proj-") :] not in text
        assert "authorization" not in text.lower()
