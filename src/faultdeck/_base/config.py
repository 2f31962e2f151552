"""``[tool.faultdeck]`` settings, the project root, and the harness's git identity.

Settings are read once per pyproject file; the environment is passed in, never read
behind the caller's back (``Deck.from_env(environ=…)``).
"""

from __future__ import annotations

import functools
import importlib
import os
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import ConfigError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

MODES = ("replay", "record", "once", "append", "resume", "off")
MATCHES = ("keyed", "strict")
DURABILITIES = ("flush", "fsync")

_KEYS = {
    "cassette_dir": str,
    "mode": str,
    "match": str,
    "volatile": list,
    "strip_headers": list,
    "redact_patterns": dict,
    "normalizers": dict,
    "public_env": list,
    "durability": str,
}


@dataclass(frozen=True, slots=True)
class Settings:
    """The project's ``[tool.faultdeck]`` settings, with defaults filled in.

    Args:
        root: the project root (the folder of ``pyproject.toml``, else of ``.git``).
        cassette_dir: where cassettes live, relative to the root.
        mode: the default mode, if the project sets one.
        match: ``keyed`` or ``strict``.
        volatile: field names whose values are volatile.
        strip_headers: extra header or field names to strip before hashing.
        redact_patterns: extra ``(name, regex)`` redaction patterns.
        normalizers: per-call rules as ``name -> "module:function"``.
        public_env: environment variables whose values may be stored in clear.
        durability: ``flush`` or ``fsync``.
        source: the pyproject file the settings came from, if any.
    """

    root: str
    cassette_dir: str = "cassettes"
    mode: str | None = None
    match: str = "keyed"
    volatile: tuple[str, ...] = ()
    strip_headers: tuple[str, ...] = ()
    redact_patterns: tuple[tuple[str, str], ...] = ()
    normalizers: Mapping[str, str] = field(default_factory=dict)
    public_env: tuple[str, ...] = ()
    durability: str = "flush"
    source: str | None = None

    def rules(self) -> dict[str, Callable[[Any], Any]]:
        """Import the configured normalizers.

        Raises:
            ConfigError: a dotted path does not name a callable.
        """
        return {name: _import(name, spec, self.source) for name, spec in self.normalizers.items()}


def find_root(start: str | os.PathLike[str] | None = None) -> Path:
    """The nearest folder at or above ``start`` holding ``pyproject.toml`` or ``.git``."""
    here = Path(start or os.getcwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / "pyproject.toml").is_file() or (folder / ".git").exists():
            return folder
    return here


def load_settings(start: str | os.PathLike[str] | None = None) -> Settings:
    """Read ``[tool.faultdeck]`` from the project's pyproject.toml.

    Raises:
        ConfigError: the file cannot be parsed, or a key is unknown or of the wrong type.
    """
    root = find_root(start)
    pyproject = root / "pyproject.toml"
    if not pyproject.is_file():
        return Settings(root=str(root))
    return _load(str(pyproject), pyproject.stat().st_mtime_ns)


@functools.lru_cache(maxsize=16)
def _load(pyproject: str, _mtime: int) -> Settings:
    try:
        with open(pyproject, "rb") as fh:
            data = tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{pyproject}: not valid TOML ({exc}); fix the file") from None
    table = data.get("tool", {}).get("faultdeck", {})
    where = f"{pyproject} [tool.faultdeck]"
    for key, value in table.items():
        expected = _KEYS.get(key)
        if expected is None:
            raise ConfigError(f"{where}: unknown key {key!r}; known keys: {', '.join(_KEYS)}")
        if not isinstance(value, expected):
            raise ConfigError(f"{where}: {key} must be a {expected.__name__}")
    mode = table.get("mode")
    if mode is not None:
        check_choice(f"{where}: mode", mode, MODES)
    check_choice(f"{where}: match", table.get("match", "keyed"), MATCHES)
    check_choice(f"{where}: durability", table.get("durability", "flush"), DURABILITIES)
    return Settings(
        root=os.path.dirname(pyproject),
        cassette_dir=table.get("cassette_dir", "cassettes"),
        mode=mode,
        match=table.get("match", "keyed"),
        volatile=tuple(map(str, table.get("volatile", ()))),
        strip_headers=tuple(str(h).lower() for h in table.get("strip_headers", ())),
        redact_patterns=tuple(
            (str(k), str(v)) for k, v in table.get("redact_patterns", {}).items()
        ),
        normalizers={str(k): str(v) for k, v in table.get("normalizers", {}).items()},
        public_env=tuple(map(str, table.get("public_env", ()))),
        durability=table.get("durability", "flush"),
        source=pyproject,
    )


def check_choice(what: str, value: Any, choices: tuple[str, ...]) -> str:
    """Return ``value`` if it is one of ``choices``, else raise a ConfigError saying so."""
    if value not in choices:
        raise ConfigError(f"{what} {value!r} is not one of: {', '.join(choices)}")
    return str(value)


def _import(name: str, spec: str, source: str | None) -> Callable[[Any], Any]:
    where = f"{source} [tool.faultdeck.normalizers] {name}" if source else f"normalizer {name}"
    module_name, _, attr = spec.partition(":")
    if not attr:
        raise ConfigError(f"{where}: {spec!r} must look like 'package.module:function'")
    try:
        target = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"{where}: cannot import {spec!r} ({exc})") from None
    if not callable(target):
        raise ConfigError(f"{where}: {spec!r} is not callable")
    return target  # type: ignore[no-any-return]


@functools.lru_cache(maxsize=8)
def harness(root: str) -> dict[str, Any]:
    """The git commit (short SHA) and dirty flag of the program under ``root``, if in git."""
    try:
        sha = _git(root, "rev-parse", "--short=12", "HEAD").strip()
        status = _git(root, "status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        return {}
    return {"git_sha": sha, "dirty": bool(status.strip())}


def _git(root: str, *args: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=root, capture_output=True, text=True, timeout=10, check=True
    )
    return done.stdout
