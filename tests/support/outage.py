"""Real outages on loopback: a port where nothing listens (the connection is refused) and
a server that accepts connections and never answers (the client's read times out)."""

from __future__ import annotations

import contextlib
import socket
import threading
from types import TracebackType


class Refused:
    """A port on 127.0.0.1 held bound but not listening while the block runs, so that no
    other test's server takes it: a connection there is refused."""

    def __init__(self) -> None:
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self.port: int = self._sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> Refused:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._sock.close()


class Silent:
    """A server on 127.0.0.1 that accepts every connection, reads nothing and never answers,
    holding each connection open until it stops: a client with a read timeout times out."""

    def __init__(self) -> None:
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(16)
        self._held: list[socket.socket] = []
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}"

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:  # closed: the server stops
                return
            self._held.append(conn)

    def __enter__(self) -> Silent:
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)  # wakes the accept waiting in the thread
        self._sock.close()
        for conn in self._held:
            conn.close()
        self._thread.join(timeout=5)
