"""``--block-network``: a replayed test that opens a network connection fails, saying so."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest


class NetworkBlocked(RuntimeError):
    """A test tried to open a network connection while its deck replays."""


@contextmanager
def blocking(nodeid: str) -> Iterator[None]:
    """Inside the block, an IPv4 or IPv6 connection raises ``NetworkBlocked``."""
    with pytest.MonkeyPatch.context() as patch:
        for name in ("connect", "connect_ex"):
            original = getattr(socket.socket, name)
            patch.setattr(socket.socket, name, _blocked(original, nodeid))
        yield


def _blocked(original: Any, nodeid: str) -> Any:
    def connect(self: socket.socket, address: Any) -> Any:
        if self.family in (socket.AF_INET, socket.AF_INET6):
            # Closed here: the caller never gets a connected socket to close.
            self.close()
            raise NetworkBlocked(
                f"{nodeid} tried to connect to {address!r} while replaying with "
                "--block-network; a replayed test needs no network (record with "
                "--faultdeck-mode=record, or route the call through the deck)"
            )
        return original(self, address)

    return connect
