"""Where a stream's end falls among the requests of one transport, kept on replay.

A long-lived stream (MCP's GET stream for server messages, a watch, a long poll) stays
open while the client makes other requests, and its end comes from the upstream when
something later happens (MCP ends it when the client's DELETE ends the session). Replayed
at once, it would end before those requests: a client that reconnects on a stream's end
(MCP's does, a second later) then makes requests the recording never saw. So a recorded
stream that ended after later requests had begun stores how many had begun
(``meta["ends_after"]``), and an async replay holds its end until as many have begun
again, or until the client closes it. Requests are counted per transport, before the deck
decides them, so a miss or a fault still counts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import asyncio

ENDS_AFTER = "ends_after"


class Order:
    """Counts the requests through one transport and wakes streams waiting for a count."""

    def __init__(self) -> None:
        self.count = 0
        self._waiters: list[tuple[int, asyncio.Future[None]]] = []

    def next(self) -> int:
        """Count one more request; return its ordinal (1-based)."""
        self.count += 1
        if self._waiters:
            self._wake()
        return self.count

    def ends_after(self, ordinal: int, meta: Any) -> Any:
        """``meta`` for a stream (request ``ordinal``) that ends now: with the count, when
        later requests began while it was open."""
        if self.count <= ordinal:
            return meta
        return {**(meta if isinstance(meta, dict) else {}), ENDS_AFTER: self.count}

    async def reach(self, ordinal: int, meta: Any) -> None:
        """Wait until the requests a recorded stream ended after (per its ``meta``) have
        begun again; at once when it has no such mark."""
        target = meta.get(ENDS_AFTER) if isinstance(meta, dict) else None
        if type(target) is not int or target <= max(ordinal, self.count):
            return
        import asyncio  # (awaited: imported)

        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append((target, future))
        try:
            await future
        finally:
            self._waiters = [w for w in self._waiters if w[1] is not future]

    def _wake(self) -> None:
        for target, future in self._waiters:
            if target <= self.count and not future.done():
                future.set_result(None)
