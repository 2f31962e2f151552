"""A fake model on 127.0.0.1 that speaks the OpenAI and Anthropic APIs from a script.

Point an SDK's base URL at it and an agent runs with no API key and no network: a first
recording, the quickstart, the examples, a test. It answers ``POST …/chat/completions``,
``…/responses`` and ``…/messages`` (Anthropic), whole or streamed as the request asks, and
``GET …/models``; any key is accepted. What it says is a script of turns (``_script``):
``faultdeck fake --script turns.json``, or ``FakeModel(script=…)``::

    with FakeModel() as fake:
        client = openai.OpenAI(base_url=fake.openai_base_url, api_key="fake-key")

It is the standard library's threading HTTP server: nothing to install beyond faultdeck.
"""

from __future__ import annotations

import threading
from http.server import ThreadingHTTPServer
from types import TracebackType
from typing import Any

from ._script import DEFAULT_TEXT, Turn, load, parse
from ._server import Handler

__all__ = ["DEFAULT_TEXT", "FakeModel"]


class FakeModel:
    """The fake model, listening from construction; ``with`` serves it on a thread and
    stops it after.

    Args:
        script: a script file (JSON), a list of turns, or ``None`` for the default (each
            question gets ``"A scripted answer to: <question>"``).
        host: the address to listen on (loopback unless you mean otherwise).
        port: the port; 0 picks a free one.

    Raises:
        ConfigError: the script is not one (one line naming the turn and the field).
        OSError: the port cannot be listened on.
    """

    def __init__(
        self, script: str | list[Any] | None = None, *, host: str = "127.0.0.1", port: int = 0
    ) -> None:
        turns: tuple[Turn, ...] = (
            parse(script, "script") if isinstance(script, list) else load(script)
        )
        self.server = ThreadingHTTPServer((host, port), Handler)
        self.server.daemon_threads = True
        self.server.script = turns  # type: ignore[attr-defined]
        self.server.responses = {}  # type: ignore[attr-defined]  # response id -> its turn
        self.server.lock = threading.Lock()  # type: ignore[attr-defined]
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """``http://host:port``, the Anthropic SDK's base URL."""
        address = self.server.server_address
        host, port = str(address[0]), address[1]
        shown = f"[{host}]" if ":" in host else host
        return f"http://{shown}:{port}"

    @property
    def openai_base_url(self) -> str:
        """The OpenAI SDK's base URL: ``url`` + ``/v1``."""
        return f"{self.url}/v1"

    def serve_forever(self) -> None:
        """Answer until interrupted (the command's loop)."""
        with self.server:
            self.server.serve_forever()

    def __enter__(self) -> FakeModel:
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Stop answering and free the port."""
        if self._thread is not None:
            self.server.shutdown()
            self._thread.join()
            self._thread = None
        self.server.server_close()
