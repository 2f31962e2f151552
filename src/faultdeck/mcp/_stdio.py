"""The process's stdin and stdout as the MCP wire, read without a thread.

The SDK's ``stdio_server()`` reads stdin in a worker thread, and a thread blocked reading
a pipe the host keeps open cannot be cancelled: SIGTERM would wait for the host's next
line. ``wire()`` reads stdin through the event loop instead (a pipe or a terminal), so a
signal's cancel ends the session at once. Like the SDK, it moves fd 0 to the null device
and fd 1 to stderr while serving, so a child process or a stray ``print`` cannot write on
the wire, and puts both back afterwards.
"""

from __future__ import annotations

import os
import stat
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, cast

import anyio
from mcp.server.stdio import stdio_server

_CHUNK = 1 << 16


class Lines:
    """A file descriptor's text, line by line, each read waiting on the event loop.

    Args:
        fd: a pipe or terminal, set non-blocking here; it is closed with ``close``.
    """

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._buffer = b""
        self._eof = False
        os.set_blocking(fd, False)

    def __aiter__(self) -> Lines:
        return self

    async def __anext__(self) -> str:
        while b"\n" not in self._buffer and not self._eof:
            await anyio.wait_readable(self.fd)
            try:
                chunk = os.read(self.fd, _CHUNK)
            except BlockingIOError:
                continue
            self._eof = not chunk
            self._buffer += chunk
        if not self._buffer:
            raise StopAsyncIteration
        line, newline, self._buffer = self._buffer.partition(b"\n")
        return (line + newline).decode("utf-8", errors="replace")

    def close(self) -> None:
        """Close the descriptor."""
        os.close(self.fd)


def _pollable(fd: int) -> bool:
    """Whether the event loop can wait on ``fd`` (a pipe, socket or terminal; not a file)."""
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)


@asynccontextmanager
async def wire() -> AsyncIterator[tuple[Any, Any]]:
    """The SDK's stdio streams ``(read, write)`` over this process's stdin and stdout."""
    if not _pollable(0):
        async with stdio_server() as streams:  # a regular file: the SDK's own reading
            yield streams
        return
    stdin, stdout = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    lines = Lines(stdin)
    out = anyio.wrap_file(open(stdout, "w", encoding="utf-8", closefd=False))  # noqa: SIM115
    try:
        async with stdio_server(stdin=cast("Any", lines), stdout=out) as streams:
            yield streams
    finally:
        await out.aclose()
        os.dup2(stdout, 1)
        os.close(stdout)
        os.set_blocking(stdin, True)
        os.dup2(stdin, 0)
        lines.close()
