"""What a call made through ``Deck.call`` or ``Deck.acall`` waits before its answer."""

from __future__ import annotations

from .call import Call


def waits(call: Call, latency: str | None) -> tuple[float, ...]:
    """What ``call`` and ``acall`` share before an answer: the fault raised if it raises,
    and the waits on the clock: the fault's delay, then the recorded time when ``latency``
    is ``"recorded"`` (less a delay the recording was made under: its ms hold it)."""
    fault, recorded = call.fault, call.recorded
    call.inject()
    found: tuple[float, ...] = (call.delay,) if fault is not None else ()
    if recorded is not None and latency == "recorded":
        delay = call.delay if call.fault_applied else 0.0
        found += (max(0.0, recorded.ms / 1000 - delay),)
    return found
