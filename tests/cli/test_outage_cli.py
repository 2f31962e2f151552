"""``faultdeck record`` during an outage: a program that handled every failure and exited 0
still does not replace the cassette, when its live calls got no answer (the connection
refused, nothing back in time). The command exits 1 and says what it recorded of how
many calls, how many got no answer and why, and which cassette it kept. Real sockets on
127.0.0.1, the real openai SDK in the program."""

from __future__ import annotations

import sys
from pathlib import Path

import faultdeck as fd
from tests.cli.test_messages import run
from tests.support.fake_upstream import DEFAULT_TEXT, Upstream
from tests.support.outage import Refused, Silent

# The agent asks each URL it is given once, through the real openai SDK (its own timeout,
# no retries of its own), and carries on when the service does not answer.
PROGRAM = """\
import sys
import openai
import httpx2
import faultdeck as fd
from faultdeck.http import Transport

deck = fd.Deck.from_env()
for n, url in enumerate(sys.argv[1:]):
    client = openai.OpenAI(
        base_url=url + "/v1",
        api_key="sk-test",
        max_retries=0,
        timeout=0.3,
        http_client=httpx2.Client(transport=Transport(deck, httpx=httpx2)),
    )
    try:
        reply = client.chat.completions.create(
            model="gpt-fake", messages=[{"role": "user", "content": f"question {n}"}]
        )
        print(reply.choices[0].message.content)
    except (openai.APIConnectionError, openai.APITimeoutError) as exc:
        print(f"no answer ({type(exc).__name__}); carrying on")
"""


def record(tmp_path: Path, *urls: str, mode: str = "record") -> tuple[int, str, str]:
    (tmp_path / "prog.py").write_text(PROGRAM, "utf-8")
    args = ("record", "--mode", mode, "runs/base.jsonl", "--", sys.executable, "prog.py", *urls)
    done = run(*args, cwd=tmp_path)
    return done.returncode, done.stdout, done.stderr


def good_cassette(tmp_path: Path, calls: int = 2) -> bytes:
    (tmp_path / "runs").mkdir(exist_ok=True)
    with Upstream() as upstream:
        code, out, err = record(tmp_path, *[upstream.url] * calls)
    assert code == 0, out + err
    assert f"recorded {calls} call{'s' * (calls > 1)} ({calls} live) into runs/base.jsonl" in out
    assert out.count(DEFAULT_TEXT) == calls
    return (tmp_path / "runs" / "base.jsonl").read_bytes()


def test_refused_connections_keep_the_cassette_and_exit_1(tmp_path: Path) -> None:
    good = good_cassette(tmp_path)
    with Refused() as down:
        code, out, err = record(tmp_path, *[down.url] * 6)
    assert code == 1, out + err
    assert out.count("no answer (APIConnectionError); carrying on") == 6  # the program was fine
    partial = tmp_path / "runs" / "base.partial.jsonl"
    assert (
        "recorded 0 of 6 calls: 6 got no answer (ConnectError); runs/base.jsonl kept, "
        f"the new recording is in {partial}"
    ) in out
    assert "the program exited" not in out
    assert (tmp_path / "runs" / "base.jsonl").read_bytes() == good
    assert fd.load(partial).entries == ()


def test_a_read_timeout_keeps_the_cassette_and_counts_what_was_stored(tmp_path: Path) -> None:
    good = good_cassette(tmp_path)
    with Upstream() as upstream, Silent() as silent:
        code, out, err = record(tmp_path, upstream.url, silent.url, upstream.url)
    assert code == 1, out + err
    assert "no answer (APITimeoutError); carrying on" in out
    assert "recorded 2 of 3 calls: 1 got no answer (ReadTimeout); runs/base.jsonl kept" in out
    assert (tmp_path / "runs" / "base.jsonl").read_bytes() == good
    assert len(fd.load(tmp_path / "runs" / "base.partial.jsonl").entries) == 2


def test_a_first_recording_during_an_outage_exits_1_saying_what_it_lacks(
    tmp_path: Path,
) -> None:
    (tmp_path / "runs").mkdir()
    with Upstream() as upstream, Refused() as down:
        code, out, err = record(tmp_path, upstream.url, down.url)
    assert code == 1, out + err
    assert (
        "recorded 1 of 2 calls: 1 got no answer (ConnectError); runs/base.jsonl holds only the "
        "answered ones"
    ) in out
    assert len(fd.load(tmp_path / "runs" / "base.jsonl").entries) == 1
    assert not (tmp_path / "runs" / "base.partial.jsonl").exists()


def test_append_during_an_outage_exits_1(tmp_path: Path) -> None:
    good_cassette(tmp_path, calls=1)
    with Upstream() as upstream, Refused() as down:
        code, out, err = record(tmp_path, upstream.url, upstream.url, down.url, mode="append")
    assert code == 1, out + err
    assert "appended 1 of 2 calls: 1 got no answer (ConnectError); runs/base.jsonl" in out
    assert len(fd.load(tmp_path / "runs" / "base.jsonl").entries) == 2


def test_a_whole_recording_counts_what_it_stored(tmp_path: Path) -> None:
    good_cassette(tmp_path, calls=1)
    with Upstream() as upstream:
        code, out, err = record(tmp_path, upstream.url, upstream.url, upstream.url)
    assert code == 0, out + err
    assert "recorded 3 calls (3 live) into runs/base.jsonl" in out
    assert "got no answer" not in out + err
    assert len(fd.load(tmp_path / "runs" / "base.jsonl").entries) == 3
    assert not (tmp_path / "runs" / "base.partial.jsonl").exists()
