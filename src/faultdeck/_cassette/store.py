"""A shared store of cassettes: a cassette path may be an fsspec URL (``s3://…``,
``memory://…``, ``file://…``).

Replay reads the object's bytes; a recording is written to a local working copy and
uploaded only when it closes cleanly. The upload goes to a temporary key beside the
cassette and is then moved into place (object stores have no rename: copy, then delete),
so the cassette's key only ever holds a whole cassette. fsspec is an optional dependency
(``faultdeck[s3]``); without it a URL gives one line saying what to install. Credentials
are fsspec's business (the environment, its config): nothing here reads or writes them.
"""

from __future__ import annotations

import importlib
import logging
import os
import posixpath
import re
import shutil
import tempfile
import uuid
from typing import Any

from .._base import terms
from .._base.errors import CassetteError, CassetteNotFound, CassetteWriteError, ConfigError

__all__ = ["WorkingCopy", "exists", "install_hint", "is_url", "read_bytes", "upload"]

log = logging.getLogger("faultdeck")

# A scheme, then "://": what fsspec takes as a URL (a Windows drive "C:\" is not one).
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]+://")


def is_url(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` names a cassette in a store (an fsspec URL) rather than a file."""
    return isinstance(path, str) and _URL.match(path) is not None


def install_hint(url: str, missing: str = "fsspec") -> str:
    """The one line a URL gives when the store's library is not installed."""
    return f"{url} needs {missing}: pip install 'faultdeck[s3]'"


def _filesystem(url: str) -> tuple[Any, str]:
    """The fsspec filesystem that holds ``url``, and the path inside it."""
    try:
        # Optional, and untyped: imported by name, only when a URL is used.
        fsspec = importlib.import_module("fsspec")
    except ImportError:
        raise ConfigError(install_hint(url)) from None
    try:
        fs, inner = fsspec.core.url_to_fs(url)
    except ImportError as exc:
        # fsspec knows the scheme but its backend (s3fs, gcsfs, …) is not installed.
        missing = getattr(exc, "name", None) or _backend(url)
        raise ConfigError(install_hint(url, missing)) from None
    except ValueError as exc:
        raise ConfigError(f"{url}: not a store URL fsspec knows ({exc})") from None
    return fs, str(inner)


def _backend(url: str) -> str:
    scheme = url.split("://", 1)[0].lower()
    return {"s3": "s3fs", "s3a": "s3fs", "gs": "gcsfs", "gcs": "gcsfs"}.get(scheme, scheme)


def exists(url: str) -> bool:
    """Whether the store holds a cassette at ``url``.

    Raises:
        ConfigError: fsspec (or the scheme's backend) is not installed.
        CassetteError: the store cannot be reached.
    """
    fs, path = _filesystem(url)
    try:
        fs.invalidate_cache(path)  # another process may have written it since we looked
        return bool(fs.exists(path))
    except Exception as exc:  # the backend's own errors (botocore's) are not all OSError
        raise _unreachable(url, exc) from None


def read_bytes(url: str) -> bytes:
    """The bytes of the cassette at ``url``.

    Raises:
        ConfigError: fsspec (or the scheme's backend) is not installed.
        CassetteNotFound: the store holds no such object.
        CassetteError: the store cannot be reached or read.
    """
    fs, path = _filesystem(url)
    try:
        data = fs.cat_file(path)
    except FileNotFoundError:
        raise CassetteNotFound(
            url,
            None,
            "no such cassette",
            f"record it first with {terms.current().about(url).record}",
        ) from None
    except IsADirectoryError:
        raise CassetteNotFound(
            url, None, "is a folder, not a cassette", "pass the URL of a .jsonl object"
        ) from None
    except Exception as exc:  # the backend's own errors (botocore's) are not all OSError
        raise _unreachable(url, exc) from None
    return bytes(data)


def upload(local_path: str, url: str) -> None:
    """Put the finished cassette at ``local_path`` in the store at ``url``, atomically: it
    goes to a temporary key beside ``url`` first, then into place, and the temporary key is
    deleted whatever happens; ``url`` holds the old cassette or the new one, never a part.

    Raises:
        ConfigError: fsspec (or the scheme's backend) is not installed.
        CassetteWriteError: the store refused; ``url`` is as it was.
    """
    fs, path = _filesystem(url)
    temporary = f"{path}.partial-{uuid.uuid4().hex}"
    try:
        fs.put_file(local_path, temporary)
        if _is_local(fs):
            os.replace(temporary, path)  # a real rename: atomic on one disk
        else:
            fs.copy(temporary, path)  # one whole object, or none: S3 has no rename
    except Exception as exc:  # the backend's own errors (botocore's) are not all OSError
        raise CassetteWriteError(
            url,
            None,
            f"cannot be written to the store ({type(exc).__name__}: {exc})",
            f"the recording is kept in {local_path}; check the store, then record again",
        ) from None
    finally:
        _remove(fs, temporary)


def _is_local(fs: Any) -> bool:
    protocol = fs.protocol
    names = (protocol,) if isinstance(protocol, str) else tuple(protocol)
    return "file" in names or "local" in names


def _remove(fs: Any, path: str) -> None:
    try:
        if fs.exists(path):
            fs.rm_file(path)
    except OSError:  # pragma: no cover - the store went away; a stray temporary key stays
        pass


def _unreachable(url: str, exc: Exception) -> CassetteError:
    return CassetteError(
        url,
        None,
        f"cannot be read from the store ({type(exc).__name__}: {exc})",
        "check the URL, the store's endpoint and its credentials",
    )


class WorkingCopy:
    """The local copy of a store's cassette that a run writes, in a temporary folder of
    its own (the lock file is there too), uploaded when the run closes cleanly.

    Args:
        url: the cassette in the store.

    Attributes:
        url: as given.
        kept: the local copy, when it was kept (not uploaded: the caller decides later, or
            the upload failed).
    """

    def __init__(self, url: str) -> None:
        self.url = url
        self.kept: str | None = None
        self._folder: str | None = None

    def exists(self) -> bool:
        """Whether the store holds the cassette; see ``exists``."""
        return exists(self.url)

    def make(self, *, fetch: bool) -> str:
        """A fresh local path for the run to write; with ``fetch``, holding the store's
        cassette (to continue it)."""
        name = posixpath.basename(self.url.rstrip("/")) or "cassette.jsonl"
        self._folder = tempfile.mkdtemp(prefix="faultdeck-store-")
        local = os.path.join(self._folder, name)
        if fetch:
            try:
                with open(local, "wb") as fh:
                    fh.write(read_bytes(self.url))
            except BaseException:
                self.drop()
                raise
        return local

    def finish(self, working: str | None, *, ok: bool, replace: bool) -> None:
        """After the run closed its local copy: upload it when the run ended ``ok``
        (``replace``), keep it for the caller (not ``replace``), or leave the store as it
        was (not ``ok``). ``working`` is ``None`` when the run wrote nothing.

        Raises:
            CassetteWriteError: the upload failed; the store is as it was, the copy kept.
        """
        if working is None:
            self.drop()
        elif not ok:
            log.warning(
                "%s: the run did not finish cleanly, so the cassette in the store was left "
                "as it was",
                self.url,
            )
            self.drop()
        elif not replace:
            self.kept, self._folder = working, None
        else:
            try:
                upload(working, self.url)
            except BaseException:
                self.kept, self._folder = working, None  # the error says where it is
                raise
            self.drop()

    def drop(self) -> None:
        """Delete the local copy and its folder, if any."""
        folder, self._folder = self._folder, None
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)
