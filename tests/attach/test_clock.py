"""``virtual_time``: a program's own waits and time readings on the deck's ``VirtualClock``,
checked with real code (sleeps, datetime, asyncio, anyio, threads, the openai SDK)."""

from __future__ import annotations

import asyncio
import json
import selectors
import sys
import threading
import time
import warnings
from collections.abc import Iterator
from datetime import date, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import cast

import anyio
import openai
import pytest
from anyio._backends import _asyncio as anyio_asyncio

from faultdeck._base.clock import VirtualClock
from faultdeck._base.errors import FaultdeckError
from faultdeck.attach import _clock
from faultdeck.attach._clock import bound_clock, virtual_time
from tests.support.children import run, script

REAL_CLOCK = time.perf_counter
"""Saved before any binding: what the tests measure real time with."""

ORIGINALS = {
    (time, "sleep"): time.sleep,
    (time, "time"): time.time,
    (time, "time_ns"): time.time_ns,
    (time, "monotonic"): time.monotonic,
    (time, "monotonic_ns"): time.monotonic_ns,
    (time, "perf_counter"): time.perf_counter,
    (asyncio, "sleep"): asyncio.sleep,
    (asyncio.tasks, "sleep"): asyncio.tasks.sleep,
    (anyio_asyncio, "sleep"): vars(anyio_asyncio)["sleep"],  # its `from asyncio import sleep`
    (selectors, "DefaultSelector"): selectors.DefaultSelector,
}

SECOND = 1_000_000_000


@pytest.fixture
def clock() -> Iterator[VirtualClock]:
    clock = VirtualClock()
    undo = virtual_time(clock)
    yield clock
    undo()


def test_time_sleep_returns_at_once_and_the_clock_keeps_the_wait(clock: VirtualClock) -> None:
    started = REAL_CLOCK()
    time.sleep(30)
    assert REAL_CLOCK() - started < 10
    assert clock.sleeps == (30.0,)
    assert bound_clock() is clock


def test_the_wall_and_monotonic_clocks_move_by_the_clocks_advance(clock: VirtualClock) -> None:
    wall, wall_ns = time.time(), time.time_ns()
    mono, mono_ns = time.monotonic(), time.monotonic_ns()
    time.sleep(30)
    assert time.time_ns() - wall_ns == 30 * SECOND
    assert time.monotonic_ns() - mono_ns == 30 * SECOND
    assert time.time() - wall == pytest.approx(30, abs=1e-6)
    assert time.monotonic() - mono == pytest.approx(30, abs=1e-6)
    clock.advance(5)  # work the deck replays moves time, without counting as a wait
    assert time.time_ns() - wall_ns == 35 * SECOND
    assert clock.waited == 30


def test_datetime_imported_before_binding_moves_with_the_clock(clock: VirtualClock) -> None:
    pytest.importorskip("time_machine")
    before, today = datetime.now(), date.today()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # utcnow, on Python 3.12+
        utc_before = datetime.utcnow()
    time.sleep(30)
    assert datetime.now() - before == timedelta(seconds=30)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        assert datetime.utcnow() - utc_before == timedelta(seconds=30)
    time.sleep(2 * 86400)
    assert date.today() - today == timedelta(days=2)


def test_asyncio_sleep_takes_no_real_time_and_returns_its_result(clock: VirtualClock) -> None:
    async def main() -> tuple[str, float]:
        loop = asyncio.get_running_loop()
        start = loop.time()
        result = await asyncio.sleep(60, "done")
        return result, loop.time() - start

    started = REAL_CLOCK()
    result, elapsed = asyncio.run(main())
    assert REAL_CLOCK() - started < 10
    assert result == "done"
    assert elapsed == pytest.approx(60)
    assert clock.sleeps == (60.0,)


def test_wait_for_returns_a_task_that_finishes_and_times_out_one_that_does_not(
    clock: VirtualClock,
) -> None:
    async def answer(after: float) -> int:
        await asyncio.sleep(after)
        return 42

    async def main() -> tuple[int, bool]:
        finished = await asyncio.wait_for(answer(1), timeout=5)
        try:
            await asyncio.wait_for(answer(10), timeout=5)
        except TimeoutError:
            return finished, True
        return finished, False

    assert asyncio.run(main()) == (42, True)


def test_a_timer_fires_once_the_clock_passes_its_deadline(clock: VirtualClock) -> None:
    async def main() -> tuple[bool, bool]:
        loop = asyncio.get_running_loop()
        fired = loop.create_future()
        loop.call_later(5, fired.set_result, None)
        await asyncio.sleep(4)
        early = fired.done()
        await asyncio.sleep(2)
        return early, fired.done()

    assert asyncio.run(main()) == (False, True)


def test_a_loop_waiting_on_a_timer_alone_jumps_the_clock_to_it(clock: VirtualClock) -> None:
    async def main() -> float:
        loop = asyncio.get_running_loop()
        start = loop.time()
        fired = loop.create_future()
        loop.call_later(300, fired.set_result, None)
        await fired
        return loop.time() - start

    # In a thread joined with a (real) time limit: a loop that did not jump would hang.
    elapsed: list[float] = []
    runner = threading.Thread(target=lambda: elapsed.append(asyncio.run(main())), daemon=True)
    runner.start()
    runner.join(10)
    assert elapsed == [pytest.approx(300)]
    assert clock.waited == pytest.approx(300)


def test_anyio_sleep_and_fail_after_run_on_the_clock(clock: VirtualClock) -> None:
    async def main() -> bool:
        await anyio.sleep(45)
        with anyio.fail_after(10):
            await anyio.sleep(1)
        try:
            with anyio.fail_after(5):
                await anyio.sleep(10)
        except TimeoutError:
            return True
        return False

    started = REAL_CLOCK()
    assert anyio.run(main) is True
    assert REAL_CLOCK() - started < 10
    assert clock.sleeps == (45.0, 1.0, 10.0)


def test_anyio_imported_while_bound_sleeps_on_the_clock_and_gets_the_real_sleep_back(
    tmp_path: Path,
) -> None:
    child = """
import asyncio, sys
real_sleep = asyncio.sleep
assert "anyio" not in sys.modules
from faultdeck._base.clock import VirtualClock
from faultdeck.attach._clock import virtual_time
clock = VirtualClock()
undo = virtual_time(clock)
import anyio, anyio._backends._asyncio as backend
anyio.run(anyio.sleep, 45)
undo()
assert backend.sleep is real_sleep, backend.sleep
print(clock.sleeps)
"""
    done = run(script(tmp_path / "child.py", child))
    assert (done.returncode, done.stdout) == (0, "(45,)\n"), done.stderr


def test_threads_sleeping_in_a_loop_all_advance_the_clock(clock: VirtualClock) -> None:
    def poll() -> None:
        for _ in range(10):
            time.sleep(1)

    threads = [threading.Thread(target=poll) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert clock.sleeps == (1.0,) * 30


def test_undo_puts_back_every_original_and_real_time() -> None:
    undo = virtual_time(VirtualClock())
    time.sleep(30)
    undo()
    undo()  # idempotent
    assert {key: getattr(*key) for key in ORIGINALS} == ORIGINALS
    assert bound_clock() is None
    if "time_machine" in sys.modules:
        import time_machine

        assert not time_machine.escape_hatch.is_travelling()
    started = REAL_CLOCK()
    time.sleep(0.01)
    assert REAL_CLOCK() - started >= 0.009


def test_a_second_binding_is_refused_and_says_where_the_first_was(clock: VirtualClock) -> None:
    with pytest.raises(FaultdeckError, match=r"already \(by virtual_time at .*test_clock\.py:"):
        virtual_time(VirtualClock())
    assert bound_clock() is clock
    time.sleep(1)
    assert clock.sleeps == (1.0,)


def test_without_time_machine_time_is_bound_and_a_notice_says_so_once(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "time_machine", None)  # import time_machine fails
    monkeypatch.setattr(_clock, "_said", [])
    for _ in range(2):
        clock = VirtualClock()
        undo = virtual_time(clock)
        try:
            wall_ns, now = time.time_ns(), datetime.now()
            time.sleep(30)
            assert time.time_ns() - wall_ns == 30 * SECOND
            assert datetime.now() - now < timedelta(seconds=30)  # real time
        finally:
            undo()
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1
    assert "datetime.now()" in lines[0]
    assert "pip install time-machine" in lines[0]
    assert {key: getattr(*key) for key in ORIGINALS} == ORIGINALS


class _Upstream(ThreadingHTTPServer):
    """127.0.0.1: a 429 with ``retry-after: 30``, then a chat completion."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.statuses: list[int] = []


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["content-length"]))
        statuses = cast(_Upstream, self.server).statuses
        status = 429 if not statuses else 200
        statuses.append(status)
        if status == 429:
            body: dict[str, object] = {"error": {"message": "slow down", "type": "rate_limit"}}
        else:
            message = {"role": "assistant", "content": "hello"}
            body = {
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "created": 0,
                "model": "gpt-4o-mini",
                "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            }
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        if status == 429:
            self.send_header("retry-after", "30")
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def upstream() -> Iterator[_Upstream]:
    server = _Upstream()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    thread.join()


def test_openai_waits_out_a_429s_retry_after_on_the_clock(upstream: _Upstream) -> None:
    client = openai.OpenAI(
        base_url=f"http://127.0.0.1:{upstream.server_address[1]}/v1",
        api_key="sk-test",
        max_retries=1,
    )
    clock = VirtualClock()
    undo = virtual_time(clock)
    started = REAL_CLOCK()
    try:
        reply = client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}]
        )
    finally:
        undo()
        client.close()
    assert REAL_CLOCK() - started < 10
    assert reply.choices[0].message.content == "hello"
    assert upstream.statuses == [429, 200]
    assert clock.sleeps == (30.0,)  # openai honours a retry-after of up to 120 s as it is
