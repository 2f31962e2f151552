"""Bodies that are not server-sent events, on their way to a client: a live one teed (the
client reads each chunk as it arrives; the recording gets the body when it ends), a recorded
one replayed chunk by chunk with its recorded timing on the deck's clock.

A body is recorded with its chunks (``"chunks": [{"ms", "bytes"}, …]``) only where it came
in pieces apart in time: pieces less than ``MERGE_MS`` after the one before are one chunk,
so a download that came at once (its reads a few ms apart on a busy machine) is stored as
one body, and a trickle (``/drip``, NDJSON as a model writes it) keeps its timing.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

from .._base.clock import Clock

MERGE_MS = 25.0
"""Pieces that arrive closer together than this (in ms) are one chunk."""

Steps = Iterator[tuple[float, bytes]]
"""A replayed body as (seconds to let pass, the chunk's bytes)."""


class Tee:
    """A live body as the client reads it: each piece timed on the deck's clock, and the
    whole handed to ``done`` once, when it ends (``error``: it broke off)."""

    def __init__(
        self,
        clock: Clock,
        started: float,
        done: Callable[[list[tuple[float, bytes]], BaseException | None], None],
    ) -> None:
        self.clock = clock
        self.started = started
        self.done = done
        self.pieces: list[tuple[float, bytes]] = []
        self.finished = False

    def teed(self, piece: bytes) -> None:
        """A piece the client is about to read."""
        self.pieces.append((round((self.clock.now() - self.started) * 1000, 3), piece))

    def finish(self, error: BaseException | None = None) -> None:
        """The body ended (or the client closed it): recorded once."""
        if not self.finished:
            self.finished = True
            self.done(self.pieces, error)


def timed_chunks(pieces: list[tuple[float, bytes]]) -> list[dict[str, Any]] | None:
    """The chunks a body came in, as stored: pieces closer than ``MERGE_MS`` joined;
    ``None`` when it came as one."""
    chunks: list[dict[str, Any]] = []
    last = None
    for ms, piece in pieces:
        if not piece:
            continue
        if last is not None and ms - last < MERGE_MS:
            chunks[-1]["bytes"] += len(piece)
        else:
            chunks.append({"ms": ms, "bytes": len(piece)})
        last = ms
    return chunks if len(chunks) > 1 else None


def replayed_chunks(
    data: bytes,
    chunks: list[dict[str, Any]],
    *,
    clock: Clock,
    start: float,
    timed: bool,
) -> Steps:
    """``data`` split as it was recorded, each chunk at its recorded time after ``start``
    on ``clock`` (``timed``), else at once."""
    offset = 0
    for chunk in chunks:
        size = chunk["bytes"]
        wait = max(0.0, start + float(chunk["ms"]) / 1000 - float(clock.now())) if timed else 0.0
        yield wait, data[offset : offset + size]
        offset += size


class _Chunks:
    """What both byte streams hold: a live body's tee and upstream, or a replayed body's
    steps and clock (sync and async differ only in the loop around them)."""

    def __init__(
        self,
        *,
        tee: Tee | None = None,
        upstream: Any = None,
        steps: Steps | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.tee, self.upstream, self.steps, self.clock = tee, upstream, steps, clock


@functools.cache
def chunk_types(httpx: Any) -> tuple[type, type]:  # noqa: C901 - counts its nested classes' methods
    """Byte-stream classes for ``httpx``'s responses: a live body teed from ``upstream``
    (the inner transport's response, read raw: the client decodes it, as it would have),
    or a replayed one (``steps`` on ``clock``)."""

    class SyncChunks(_Chunks, httpx.SyncByteStream):  # type: ignore[misc]
        def __iter__(self) -> Iterator[bytes]:
            if self.steps is not None:
                for wait, piece in self.steps:
                    self.clock.advance(wait)  # type: ignore[union-attr]
                    yield piece
                return
            tee = self.tee
            assert tee is not None
            try:
                for piece in self.upstream.stream:
                    tee.teed(piece)
                    yield piece
            except Exception as exc:
                tee.finish(exc)
                raise
            tee.finish()

        def close(self) -> None:
            if self.upstream is not None:
                self.upstream.close()
            if self.tee is not None:
                self.tee.finish()

    class AsyncChunks(_Chunks, httpx.AsyncByteStream):  # type: ignore[misc]
        async def __aiter__(self) -> AsyncIterator[bytes]:
            if self.steps is not None:
                for wait, piece in self.steps:
                    await self.clock.aadvance(wait)  # type: ignore[union-attr]
                    yield piece
                return
            tee = self.tee
            assert tee is not None
            try:
                async for piece in self.upstream.stream:
                    tee.teed(piece)
                    yield piece
            except Exception as exc:
                tee.finish(exc)
                raise
            tee.finish()

        async def aclose(self) -> None:
            if self.upstream is not None:
                await self.upstream.aclose()
            if self.tee is not None:
                self.tee.finish()

    return SyncChunks, AsyncChunks
