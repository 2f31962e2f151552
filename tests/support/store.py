"""An S3 store for the tests: moto's server on 127.0.0.1, never a real endpoint."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from moto.server import ThreadedMotoServer

# fsspec has no type hints: imported by name.
fsspec: Any = importlib.import_module("fsspec")


@contextmanager
def moto_endpoint() -> Iterator[str]:
    """moto's S3 server on 127.0.0.1 for the block; yields its ``http://…`` endpoint."""
    # fsspec keeps one s3 filesystem per set of arguments; the endpoint comes from the
    # environment, so one made for another module's server must not be reused.
    s3fs = fsspec.get_filesystem_class("s3")
    s3fs.clear_instance_cache()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        yield f"http://{host}:{port}"
    finally:
        server.stop()
        s3fs.clear_instance_cache()
