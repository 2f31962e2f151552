"""Resume after a kill, with concurrency and side effects.

Calls in flight at the kill go live again on ``resume``; a call that matches nothing while
recorded calls remain is still a divergence; a side effect that may have run is in doubt and
runs again only when the tool said how. The last test kills 100 runs at random points (real
SIGKILLs of forked processes, half with a thread pool, half with ``asyncio.gather``) and
measures what the guarantee promises.
"""

from __future__ import annotations

import asyncio
import functools
import json
import signal
import subprocess
import textwrap
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

import faultdeck as fd
from tests.support.children import kill_when_ready, run, script

AGENT = textwrap.dedent(
    """
    import asyncio, json, os, sys, threading, time
    from concurrent.futures import ThreadPoolExecutor
    import faultdeck as fd

    mode, cassette, style, block = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
    blocked = {int(b) for b in block.split(",") if b}
    deck = fd.Deck(cassette, mode=mode, on_harness_change="ignore")

    def ready_when_written():
        # READY once every unblocked call's line is on disk, not merely returned.
        for _ in range(6000):
            lines = open(cassette).read().count('"out"') if os.path.exists(cassette) else 0
            if lines == 6 - len(blocked):
                print("READY", flush=True)
                return
            time.sleep(0.01)

    if mode == "record":
        threading.Thread(target=ready_when_written, daemon=True).start()

    def work(i):
        if i in blocked:
            time.sleep(60)  # in flight until the kill
        return {"i": i}

    async def awork(i):
        if i in blocked:
            await asyncio.sleep(60)
        return {"i": i}

    with deck:
        if style == "threads":
            with ThreadPoolExecutor(3) as pool:
                futures = [
                    pool.submit(deck.call, "tool", "work", {"i": i}, lambda i=i: work(i))
                    for i in range(6)
                ]
                outs = [f.result() for f in futures]
        else:
            async def main():
                calls = [
                    deck.acall("tool", "work", {"i": i}, lambda i=i: awork(i)) for i in range(6)
                ]
                return await asyncio.gather(*calls)
            outs = asyncio.run(main())
    assert outs == [{"i": i} for i in range(6)], outs
    report = deck.report()
    print(json.dumps({"used": report.used, "live": report.live, "misses": len(report.misses)}))
    """
)


def agent(tmp_path: Path, *args: str) -> list[str]:
    return [*script(tmp_path / "agent.py", AGENT), *args]


@pytest.mark.parametrize("style", ["threads", "asyncio"])
def test_calls_in_flight_at_the_kill_go_live_on_resume(tmp_path: Path, style: str) -> None:
    cassette = tmp_path / "run.jsonl"
    kill_when_ready(agent(tmp_path, "record", str(cassette), style, "1,4"))
    killed = fd.load(cassette)
    assert killed.interrupted
    assert sorted(e.args["i"] for e in killed.entries) == [0, 2, 3, 5]
    assert sorted(i.seq for i in killed.in_flight()) == sorted(
        i.seq for i in killed.intents if i.seq not in {e.seq for e in killed.entries}
    )
    assert len(killed.in_flight()) == 2

    resumed = run(agent(tmp_path, "resume", str(cassette), style, ""))
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout.splitlines()[-1]) == {"used": 4, "live": 2, "misses": 0}
    final = fd.load(cassette)
    assert not final.interrupted
    assert sorted(e.args["i"] for e in final.entries) == list(range(6))
    assert final.intents == ()  # dropped on the clean close


def test_a_real_divergence_while_recorded_calls_remain_is_still_a_miss(tmp_path: Path) -> None:
    cassette = tmp_path / "run.jsonl"
    kill_when_ready(agent(tmp_path, "record", str(cassette), "threads", "1,4"))
    with fd.Deck(cassette, mode="resume", on_harness_change="ignore") as deck:
        assert deck.call("tool", "work", {"i": 0}, lambda: {"i": 0}) == {"i": 0}
        with pytest.raises(fd.ReplayMiss, match="replay miss at seq 2"):
            deck.call("tool", "work", {"i": 99}, lambda: {"i": 99})


def killed_between_numbering_and_intent(cassette: Path, *, later: bool = False) -> None:
    """Seq 2 numbered but not yet written when the run dies; seq 3's intent already on disk.

    Under a thread pool this is a real interleaving: numbering is under the deck's lock, the
    intent is written just after it, so a later call's intent can reach the file first.
    """
    deck = fd.Deck(cassette, mode="record", on_harness_change="ignore")
    deck.open()
    with deck.begin("tool", "work", {"i": 0}) as first:
        first.start()
        first.result({"i": 0})
    deck.begin("tool", "work", {"i": 1})  # numbered; its thread had not reached start()
    deck.begin("tool", "work", {"i": 2}).start()  # its intent is on disk, then the kill
    if later:  # and a later call finished first
        with deck.begin("tool", "work", {"i": 3}) as fourth:
            fourth.start()
            fourth.result({"i": 3})
    deck.abandon()


def test_a_call_numbered_but_never_written_goes_live_on_resume(tmp_path: Path) -> None:
    cassette = tmp_path / "run.jsonl"
    killed_between_numbering_and_intent(cassette, later=True)
    killed = fd.load(cassette)
    assert (killed.begun, killed.unseen, len(killed.in_flight())) == (4, 1, 1)
    with fd.Deck(cassette, mode="resume", on_harness_change="ignore") as deck:
        outs: list[dict[str, int]] = [
            deck.call("tool", "work", {"i": i}, functools.partial(dict, i=i)) for i in range(4)
        ]
    assert outs == [{"i": i} for i in range(4)]
    assert [c.source for c in deck.calls] == ["replay", "live", "live", "replay"]
    assert sorted(e.args["i"] for e in fd.load(cassette).entries) == [0, 1, 2, 3]


def test_only_as_many_unwritten_calls_go_live_as_the_run_numbered(tmp_path: Path) -> None:
    cassette = tmp_path / "run.jsonl"
    killed_between_numbering_and_intent(cassette, later=True)
    assert fd.load(cassette).unseen == 1
    with fd.Deck(cassette, mode="resume", on_harness_change="ignore") as deck:
        assert deck.call("tool", "work", {"i": 0}, lambda: {"i": 0}) == {"i": 0}
        assert deck.call("tool", "work", {"i": 97}, lambda: {"i": 97}) == {"i": 97}
        with pytest.raises(fd.ReplayMiss, match="replay miss at seq 3"):
            deck.call("tool", "work", {"i": 98}, lambda: {"i": 98})


def killed_after_three(cassette: Path) -> None:
    """A killed run that numbered and wrote three calls: a, b, c."""
    deck = fd.Deck(cassette, mode="record", on_harness_change="ignore")
    deck.open()
    for name in "abc":
        deck.call("tool", name, {}, functools.partial(dict, name=name))
    deck.abandon()


def wait_for(deck: fd.Deck, names: set[str]) -> None:
    """Until the deck's finished calls include ``names`` (bounded), then a little longer."""
    for _ in range(2000):
        if names <= {c.name for c in deck.calls}:
            time.sleep(0.05)  # the other worker numbers its next call meanwhile
            return
        time.sleep(0.001)
    raise AssertionError(f"{names} never finished")


def test_a_worker_that_numbers_a_new_call_before_a_recorded_one_waits_its_turn(
    tmp_path: Path,
) -> None:
    # Worker one asks a, c and then d, a call the killed run never reached, numbered 3;
    # worker two asks b (recorded as seq 2) only after that: a reorder, not a divergence.
    cassette = tmp_path / "run.jsonl"
    killed_after_three(cassette)
    with fd.Deck(cassette, mode="resume", on_harness_change="ignore") as deck:

        def one() -> list[Any]:
            return [deck.call("tool", n, {}, functools.partial(dict, name=n)) for n in "acd"]

        def two() -> Any:
            wait_for(deck, {"a", "c"})
            return deck.call("tool", "b", {}, functools.partial(dict, name="b"))

        with ThreadPoolExecutor(2) as pool:
            first, second = pool.submit(one), pool.submit(two)
            assert first.result() == [{"name": n} for n in "acd"]
            assert second.result() == {"name": "b"}
    by_name = {c.name: c for c in deck.calls}
    assert [(n, by_name[n].seq, by_name[n].source) for n in "abcd"] == [
        ("a", 1, "replay"),
        ("b", 4, "replay"),
        ("c", 2, "replay"),
        ("d", 3, "live"),
    ]
    final = fd.load(cassette)
    assert sorted(e.name for e in final.entries) == ["a", "b", "c", "d"]
    assert not final.interrupted


def test_an_async_task_that_numbers_a_new_call_early_waits_its_turn(tmp_path: Path) -> None:
    cassette = tmp_path / "run.jsonl"
    killed_after_three(cassette)

    async def answer(name: str) -> dict[str, str]:
        return {"name": name}

    async def main(deck: fd.Deck) -> list[Any]:
        async def one() -> list[Any]:
            return [await deck.acall("tool", n, {}, functools.partial(answer, n)) for n in "acd"]

        async def two() -> Any:
            while not {"a", "c"} <= {c.name for c in deck.calls}:
                await asyncio.sleep(0.001)  # until the other task asked a and c
            await asyncio.sleep(0.05)
            return await deck.acall("tool", "b", {}, functools.partial(answer, "b"))

        return list(await asyncio.gather(one(), two()))

    with fd.Deck(cassette, mode="resume", on_harness_change="ignore") as deck:
        outs = asyncio.run(main(deck))
    assert outs == [[{"name": n} for n in "acd"], {"name": "b"}]
    assert {c.name: (c.seq, c.source) for c in deck.calls}["d"] == (3, "live")
    assert sorted(e.name for e in fd.load(cassette).entries) == ["a", "b", "c", "d"]


def test_a_call_ahead_of_the_recording_that_nobody_else_asks_for_is_a_miss(
    tmp_path: Path,
) -> None:
    # Another worker asks c, recorded after d's place, while d waits, but never b, which
    # the killed run numbered before it: after its bounded wait, d is a divergence.
    cassette = tmp_path / "run.jsonl"
    killed_after_three(cassette)
    idle = threading.Event()
    with fd.Deck(cassette, mode="resume", on_harness_change="ignore") as deck:

        def bystander() -> None:
            time.sleep(0.3)  # d is waiting by then
            deck.call("tool", "c", {}, functools.partial(dict, name="c"))
            idle.wait(30)

        worker = threading.Thread(target=bystander)
        worker.start()
        try:
            deck.call("tool", "a", {}, dict)
            with pytest.raises(fd.ReplayMiss, match="replay miss at seq 2") as missed:
                deck.call("tool", "d", {}, dict)
        finally:
            idle.set()
            worker.join()
    # It says what it waited for, which is what the user must look at.
    assert WAITED_FOR_B in str(missed.value)
    assert [(c.name, c.source) for c in deck.calls] == [
        ("a", "replay"),
        ("d", "miss"),
        ("c", "replay"),
    ]
    assert sorted(e.name for e in fd.load(cassette).entries) == ["a", "b", "c"]


WAITED_FOR_B = (
    "resumed, it waited 2 s for its turn, but the killed run's seq 2 (tool b), numbered "
    "before it, was never asked again"
)


def test_an_async_call_ahead_of_the_recording_that_no_task_asks_for_is_a_miss(
    tmp_path: Path,
) -> None:
    # acall's wait (catch_up) ends as the thread's does: another task asks c, never b.
    cassette = tmp_path / "run.jsonl"
    killed_after_three(cassette)

    async def answer(name: str) -> dict[str, str]:
        return {"name": name}

    async def main(deck: fd.Deck) -> None:
        async def bystander() -> None:
            await asyncio.sleep(0.3)  # d is waiting by then
            await deck.acall("tool", "c", {}, functools.partial(answer, "c"))

        other = asyncio.create_task(bystander())
        await deck.acall("tool", "a", {}, functools.partial(answer, "a"))
        try:
            await deck.acall("tool", "d", {}, functools.partial(answer, "d"))
        finally:
            await other

    with fd.Deck(cassette, mode="resume", on_harness_change="ignore") as deck:
        with pytest.raises(fd.ReplayMiss, match="replay miss at seq 2") as missed:
            asyncio.run(main(deck))
    assert WAITED_FOR_B in str(missed.value)
    assert [(c.name, c.source) for c in deck.calls] == [
        ("a", "replay"),
        ("d", "miss"),
        ("c", "replay"),
    ]


SENDER = textwrap.dedent(
    """
    import json, os, signal, sys
    import faultdeck as fd

    mode, cassette, effects, kill_at, how = sys.argv[1:6]
    deck = fd.Deck(cassette, mode=mode, allow_side_effects=True, on_harness_change="ignore")
    options = {"on_in_doubt": how} if how in ("rerun", "skip") else {}
    if how == "idempotent":
        options = {"idempotency_key": "key"}

    @deck.tool(side_effect=True, **options)
    def send(n, key=None):
        # The service applies a request once per idempotency key (Stripe-style).
        with open(effects, "a") as fh:
            fh.write(json.dumps({"n": n, "key": key}) + "\\n")
        if n == int(kill_at):
            os.kill(os.getpid(), signal.SIGKILL)  # dies after the effect, before its line
        return {"sent": n}

    with deck:
        for n in range(4):
            assert send(n) == {"sent": n} or how == "skip"
    print("finished")
    """
)


def sends(tmp_path: Path, mode: str, kill_at: int, how: str) -> subprocess.CompletedProcess[str]:
    args = [mode, str(tmp_path / "sends.jsonl"), str(tmp_path / "effects.txt"), str(kill_at), how]
    return run([*script(tmp_path / "sender.py", SENDER), *args])


def applied(tmp_path: Path) -> dict[int, int]:
    """How often the service applied each message: once per idempotency key."""
    seen: set[Any] = set()
    counts: dict[int, int] = {}
    for line in (tmp_path / "effects.txt").read_text("utf-8").splitlines():
        effect = json.loads(line)
        token = (effect["n"], effect["key"] or object())
        if token not in seen:
            seen.add(token)
            counts[effect["n"]] = counts.get(effect["n"], 0) + 1
    return counts


def test_a_side_effect_that_may_have_run_is_in_doubt_and_not_run_again(tmp_path: Path) -> None:
    killed = sends(tmp_path, "record", 2, "raise")
    assert killed.returncode == -signal.SIGKILL
    assert applied(tmp_path) == {0: 1, 1: 1, 2: 1}
    recording = fd.load(tmp_path / "sends.jsonl")
    [doubt] = recording.in_flight()
    assert doubt.side_effect
    assert doubt.name == "send"

    resumed = sends(tmp_path, "resume", -1, "raise")
    assert resumed.returncode == 1
    assert "CallInDoubt" in resumed.stderr
    assert "tool send" in resumed.stderr
    assert f"sends.jsonl:{doubt.line}" in resumed.stderr
    assert "on_in_doubt='rerun'" in resumed.stderr
    assert applied(tmp_path) == {0: 1, 1: 1, 2: 1}  # send(2) did not run again


@pytest.mark.parametrize("how", ["skip", "idempotent"])
def test_a_tool_that_says_how_resolves_its_doubt_and_runs_at_most_once(
    tmp_path: Path, how: str
) -> None:
    assert sends(tmp_path, "record", 2, how).returncode == -signal.SIGKILL
    resumed = sends(tmp_path, "resume", -1, how)
    assert resumed.returncode == 0, resumed.stderr
    assert "finished" in resumed.stdout
    assert applied(tmp_path) == {0: 1, 1: 1, 2: 1, 3: 1}
    final = fd.load(tmp_path / "sends.jsonl")
    assert not final.interrupted
    if how == "skip":
        assert [e.args for e in final.entries] == [{"n": n, "key": None} for n in range(4)]
        assert final.entries[2].value is None  # skipped: assumed to have run
    if how == "idempotent":
        assert [e.args for e in final.entries] == [{"n": n} for n in range(4)]  # not an arg
        lines = (tmp_path / "effects.txt").read_text("utf-8").splitlines()
        keys = [json.loads(line)["key"] for line in lines]
        assert keys[2] == keys[3]  # send(2) ran again with the key it had
        assert len(set(keys)) == 4


def test_rerun_runs_it_again_as_asked(tmp_path: Path) -> None:
    assert sends(tmp_path, "record", 2, "rerun").returncode == -signal.SIGKILL
    assert sends(tmp_path, "resume", -1, "rerun").returncode == 0
    assert applied(tmp_path) == {0: 1, 1: 1, 2: 2, 3: 1}


# -- the measurement ------------------------------------------------------------------------

TRIALS = textwrap.dedent(
    """
    import asyncio, json, os, random, signal, sys, time
    from concurrent.futures import ThreadPoolExecutor
    import faultdeck as fd

    folder, trials = sys.argv[1], int(sys.argv[2])
    N = 16

    def agent(mode, cassette, style, done_log, effects, seed, returned=None):
        deck = fd.Deck(cassette, mode=mode, allow_side_effects=True, on_harness_change="ignore")
        rng = random.Random(seed)
        delays = [rng.uniform(0, 0.006) for _ in range(N)]

        def work(i):
            time.sleep(delays[i])
            os.write(done_log, f"{i}\\n".encode())  # the call is complete here
            return {"i": i}

        def back(i, out):  # the call has returned to the caller: its line is written
            if returned is not None and i % 4:
                os.write(returned, f"{i}\\n".encode())
            return out

        @deck.tool(side_effect=True, idempotency_key="key")
        def charge(i, key=None):
            os.write(effects, (json.dumps({"i": i, "key": key}) + "\\n").encode())
            time.sleep(delays[i])
            return {"charged": i}

        with deck:
            if style == "threads":
                with ThreadPoolExecutor(2) as pool:
                    outs = list(pool.map(
                        lambda i: back(i, deck.call("tool", "work", {"i": i}, lambda: work(i)))
                        if i % 4 else charge(i), range(N)))
            else:
                async def one(i):
                    if i % 4 == 0:
                        return charge(i)
                    async def go():
                        await asyncio.sleep(delays[i])
                        os.write(done_log, f"{i}\\n".encode())
                        return {"i": i}
                    return back(i, await deck.acall("tool", "work", {"i": i}, go))
                async def main():
                    return await asyncio.gather(*(one(i) for i in range(N)))
                outs = asyncio.run(main())
        assert len(outs) == N
        return deck.report()

    def child(*args):
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                agent(*args)
            except BaseException as exc:
                sys.stderr.write(f"{type(exc).__name__}: {exc}\\n")
                code = 3
            os._exit(code)
        return pid

    # Warm what every child would otherwise do first (the git harness, the settings).
    for style in ("threads", "asyncio"):
        scratch = os.path.join(folder, f"warm-{style}.jsonl")
        sink = os.open(os.devnull, os.O_WRONLY)
        agent("record", scratch, style, sink, sink, 0)
        os.close(sink)

    results = []
    for t in range(trials):
        style = "threads" if t % 2 == 0 else "asyncio"
        cassette = os.path.join(folder, f"t{t}.jsonl")
        done = os.open(os.path.join(folder, f"t{t}.done"), os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        effects_path = os.path.join(folder, f"t{t}.effects")
        effects = os.open(effects_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        returned_path = os.path.join(folder, f"t{t}.returned")
        returned = os.open(returned_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        rng = random.Random(1000 + t)
        pid = child("record", cassette, style, done, effects, t, returned)
        # The kill lands mid-run whatever the machine's load: after a random number of the
        # work calls completed, plus a random part of one call's time.
        after = rng.randint(1, 10)
        done_path = os.path.join(folder, f"t{t}.done")
        for _ in range(5000):
            if open(done_path).read().count("\\n") >= after:
                break
            time.sleep(0.001)
        time.sleep(rng.uniform(0, 0.006))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        row = {"trial": t, "style": style}
        try:
            killed = fd.load(cassette)
            row["readable"] = True
            written = {e.args["i"] for e in killed.entries if e.name == "work"}
            row["entries"] = len(killed.entries)
            row["in_flight"] = len(killed.in_flight())
            row["in_doubt"] = sum(1 for i in killed.in_flight() if i.side_effect)
        except fd.CassetteNotFound:
            row["readable"] = True  # killed before the file was created: nothing to lose
            written = set()
            row["entries"] = row["in_flight"] = row["in_doubt"] = 0
        except Exception as exc:
            row["readable"] = False
            row["error"] = str(exc)
            written = set()
        completed = {int(x) for x in open(os.path.join(folder, f"t{t}.done")).read().split()}
        row["lost"] = len(completed - written)
        back = {int(x) for x in open(returned_path).read().split()}
        row["returned_unwritten"] = sorted(back - written)
        pid = child("resume", cassette, style, done, effects, t)
        _, status = os.waitpid(pid, 0)
        row["resumed"] = os.WEXITSTATUS(status) == 0 if os.WIFEXITED(status) else False
        final = fd.load(cassette)
        row["complete"] = sorted(e.args["i"] for e in final.entries) == list(range(N))
        seen, twice = set(), 0
        for line in open(effects_path).read().splitlines():
            effect = json.loads(line)
            token = (effect["i"], effect["key"])
            if token in seen:
                continue
            if any(i == effect["i"] for i, _ in seen):
                twice += 1  # the same charge applied under a second key: it ran twice
            seen.add(token)
        row["twice"] = twice
        results.append(row)
        os.close(done)
        os.close(effects)
        os.close(returned)
    print(json.dumps(results))
    """
)


def test_a_hundred_random_kills_lose_nothing_and_repeat_no_side_effect(tmp_path: Path) -> None:
    done = run([*script(tmp_path / "trials.py", TRIALS), str(tmp_path), "100"], timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = json.loads(done.stdout)
    assert len(rows) == 100
    assert {r["style"] for r in rows} == {"threads", "asyncio"}
    unreadable = [r for r in rows if not r["readable"]]
    assert unreadable == [], unreadable[:3]
    unfinished = [r for r in rows if not (r["resumed"] and r["complete"])]
    assert unfinished == [], (unfinished[:3], done.stderr[-2000:])
    # Every call that returned had its line written first; what a kill can lose is only a
    # call that completed but had not yet returned: one per thread running calls (the pool's
    # two), one under asyncio (one task runs at a time, and none awaits in that span).
    assert [r for r in rows if r["returned_unwritten"]] == []
    most = {"threads": 2, "asyncio": 1}
    assert [r for r in rows if r["lost"] > most[r["style"]]] == []
    assert sum(r["twice"] for r in rows) == 0, [r for r in rows if r["twice"]]
    # The kills land mid-run: with calls in flight, side effects in doubt among them (about
    # three runs in four and one in five over 400 runs here: the bounds leave a wide margin).
    assert sum(1 for r in rows if r["in_flight"] and r["entries"]) >= 30
    assert sum(1 for r in rows if r["in_doubt"]) >= 5
