"""``botocore`` (boto3): every client made while routed gets faultdeck's ``before-send``
handler (``fd.http.attach_botocore``'s), which answers through the deck that routes
requests when one does, and otherwise lets botocore send as it would. botocore's own
sends go through urllib3, so a request the handler lets pass is urllib3's to route.

The patch is ``ClientCreator.create_client`` (where every client, boto3's included, is
made); a client made while routed keeps its handler after the block, where it answers
nothing.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

from ._state import deciding, send
from ._table import Undo, replace


def route(client_module: ModuleType) -> Undo:
    """Route the clients ``botocore.client`` makes from now on; the undo."""
    httpx = importlib.import_module("httpx")
    from ..http._botocore import Handler, register
    from ..http._transport import live_transport

    def answer(request: Any) -> Any:
        deck = deciding()
        if deck is None:
            return None
        return send(deck, httpx, request, live_transport(httpx).handle_request)

    creator = client_module.ClientCreator
    create = creator.create_client

    def create_client(self: Any, *args: Any, **kwargs: Any) -> Any:
        client = create(self, *args, **kwargs)
        register(client, Handler(answer, httpx, client.meta.config))
        return client

    return replace(creator, "create_client", create_client)
