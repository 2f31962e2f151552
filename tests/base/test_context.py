"""The context a call runs in: its step label and the idempotency key of a side effect."""

from __future__ import annotations

import asyncio

from faultdeck._base.context import current_idempotency_key, idempotency, step, step_now


def test_a_key_holds_inside_its_block_only() -> None:
    assert current_idempotency_key() is None
    with idempotency("k1"):
        assert current_idempotency_key() == "k1"
    assert current_idempotency_key() is None


def test_a_call_without_a_key_inside_one_with_a_key_sees_none() -> None:
    with idempotency("outer"):
        with idempotency(None):
            assert current_idempotency_key() is None
        assert current_idempotency_key() == "outer"
        with idempotency("inner"):
            assert current_idempotency_key() == "inner"
        assert current_idempotency_key() == "outer"
    assert current_idempotency_key() is None


def test_a_key_is_restored_after_an_exception() -> None:
    try:
        with idempotency("k"):
            raise RuntimeError("boom")
    except RuntimeError:
        pass
    assert current_idempotency_key() is None


def test_tasks_see_their_own_key() -> None:
    async def task(key: str | None) -> str | None:
        with idempotency(key):
            await asyncio.sleep(0)
            return current_idempotency_key()

    async def both() -> list[str | None]:
        return list(await asyncio.gather(task("a"), task(None), task("b")))

    assert asyncio.run(both()) == ["a", None, "b"]


def test_a_step_labels_its_block() -> None:
    with step("plan"):
        assert step_now() == "plan"
        with step(2):
            assert step_now() == 2
        assert step_now() == "plan"
    assert step_now() is None
