"""The normalizer a deck keys its calls with, under the project's settings.

A deck that takes the project's settings as they are shares its normalizer (and redactor)
with every such deck while the settings stay the same object (they are read again when
pyproject.toml changes): building them compiles the patterns and imports the rules, and a
rehearsal builds a deck per cell.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import NamedTuple

from .._base.config import Settings
from .._keys.normalize import NormalizeConfig, Normalizer
from .._keys.redact import Redactor


def default_normalize(settings: Settings) -> NormalizeConfig:
    """The normalization rules of the project's settings."""
    base = NormalizeConfig()
    return replace(
        base,
        strip_fields=base.strip_fields | frozenset(settings.strip_headers),
        volatile=frozenset(settings.volatile),
        root=settings.root,
        rules=settings.rules(),
    )


class _Shared(NamedTuple):
    settings: Settings
    redactor: Redactor
    normalizer: Normalizer


_shared: list[_Shared] = []  # the most recent first; a few at most
_shared_lock = threading.Lock()


def deck_normalizer(
    settings: Settings, redactor: Redactor | None, normalize: NormalizeConfig | None
) -> tuple[Redactor, Normalizer]:
    """The redactor and normalizer of a deck given ``redactor`` and ``normalize`` (each by
    default from the project's ``settings``)."""
    if redactor is None and normalize is None:
        return project_normalizer(settings)
    redactor = redactor or Redactor(extra_patterns=settings.redact_patterns)
    return redactor, Normalizer(normalize or default_normalize(settings), redactor)


def project_normalizer(settings: Settings) -> tuple[Redactor, Normalizer]:
    """The normalizer (and its redactor) of a deck that takes the project's settings as
    they are, shared by every such deck while the settings stay the same object (they are
    read again when pyproject.toml changes).

    Building them compiles the patterns and imports the rules; a rehearsal builds a deck per
    cell. Both are pure but for caches of what each field name means, which stay right
    for the same settings and are warm for the next deck.
    """
    with _shared_lock:
        for shared in _shared:
            if shared.settings is settings:
                return shared.redactor, shared.normalizer
    redactor = Redactor(extra_patterns=settings.redact_patterns)
    normalizer = Normalizer(default_normalize(settings), redactor)
    with _shared_lock:
        _shared.insert(0, _Shared(settings, redactor, normalizer))
        del _shared[_SHARED_MAX:]
    return redactor, normalizer


_SHARED_MAX = 4
