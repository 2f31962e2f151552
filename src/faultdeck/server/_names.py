"""Cassette names in URLs, and the only way from a name to a file: ``cassette_path``.

A name is what follows ``/c/`` (or ``/api/cassettes/``): words, dots, dashes and ``/`` for
sub-folders, without ``.jsonl``. Anything that could lead outside the cassettes folder is
refused before a file is touched: ``..``, an absolute path, a backslash, NUL or another
control character, a percent sign (an escape that survived decoding), an empty segment,
a hidden segment, and a symlink whose target lies outside the folder.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

_SEGMENT = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")
_LONGEST = 512


class NameRefused(ValueError):
    """A cassette name that may not be used.

    Args:
        status: the HTTP status to answer with (400 a malformed name, 404 one that leads
            nowhere the server may go).
        reason: one line saying why.
    """

    def __init__(self, status: int, reason: str) -> None:
        self.status = status
        self.reason = reason
        super().__init__(reason)


def cassette_path(root: Path, name: str) -> Path:
    """The cassette file ``name`` stands for under ``root``: ``root/name.jsonl``.

    Raises:
        NameRefused: the name is malformed (400) or resolves outside ``root`` (404).
    """
    if not name or len(name) > _LONGEST:
        raise NameRefused(400, "a cassette name is 1 to 512 characters")
    if name.endswith(".jsonl"):
        name = name[: -len(".jsonl")]
    for segment in name.split("/"):
        if not _SEGMENT.fullmatch(segment) or segment.endswith("."):
            raise NameRefused(
                400,
                f"cassette name {name!r}: each part is letters, digits, '_', '-' or '.' "
                "(not first, not last), parts joined by '/'",
            )
    base = os.path.realpath(root)
    path = os.path.realpath(os.path.join(base, f"{name}.jsonl"))
    if os.path.commonpath([base, path]) != base:
        raise NameRefused(404, f"cassette {name!r} is not in the cassettes folder")
    return Path(path)


def cassette_name(root: Path, path: Path) -> str:
    """The name of the cassette file ``path`` under ``root`` (the inverse of ``cassette_path``)."""
    relative = Path(os.path.relpath(path, os.path.realpath(root)))
    return relative.with_suffix("").as_posix()
