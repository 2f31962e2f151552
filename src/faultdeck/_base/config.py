"""``[tool.faultdeck]`` settings, the project root, and the harness's git identity.

Settings are read once per pyproject file; the environment is passed in, never read
behind the caller's back (``Deck.from_env(environ=…)``).
"""

from __future__ import annotations

import functools
import os
import re
import stat
import subprocess
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar, get_args

from .errors import ConfigError
from .loading import load_attr

Mode = Literal["replay", "record", "once", "append", "resume", "off", "fork"]
"""How a deck uses its cassette; see the modes table in the README."""
Match = Literal["keyed", "strict"]
"""``keyed`` tolerates reordering of calls; ``strict`` wants each call at its recorded seq."""
Durability = Literal["flush", "fsync"]
"""``flush`` each line to the OS before the call returns, or ``fsync`` it to the disk."""
Repeats = Literal["miss", "last", "cycle"]
"""What a call asked more often than it was recorded gets: a miss, the last recorded answer
again, or its recorded answers again from the first."""
Latency = Literal["recorded"]
"""``recorded``: replayed calls take their recorded time on the deck's clock."""
OnHarnessChange = Literal["warn", "ignore"]
"""What replaying a cassette recorded at another git commit does."""
OnInDoubt = Literal["raise", "rerun", "skip"]
"""What ``resume`` does with a side effect that was in flight at a kill."""

MODES: tuple[Mode, ...] = tuple(m for m in get_args(Mode) if m != "fork")
"""The modes a setting or an option may name. ``fork`` is not one: it needs the cassette it
forks and where (``Deck(mode="fork", parent=…, at=…)``, ``faultdeck fork``)."""
MATCHES: tuple[Match, ...] = get_args(Match)
DURABILITIES: tuple[Durability, ...] = get_args(Durability)
REPEATS: tuple[Repeats, ...] = get_args(Repeats)
ON_HARNESS_CHANGE: tuple[OnHarnessChange, ...] = get_args(OnHarnessChange)
ON_IN_DOUBT: tuple[OnInDoubt, ...] = get_args(OnInDoubt)

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
    "max_age": str,
    "intercept": bool,
    "tools": dict,
}


@dataclass(frozen=True, slots=True)
class Settings:
    """The project's ``[tool.faultdeck]`` settings, with defaults filled in.

    Args:
        root: the project root (the folder of ``pyproject.toml``, else of ``.git``).
        cassette_dir: where the pytest plugin keeps each test's cassettes, relative to the
            root (``<cassette_dir>/<test file's path from the root>/<test name>.jsonl``);
            unset, a ``cassettes`` folder beside each test file.
        mode: the default mode, if the project sets one.
        match: ``keyed`` or ``strict``.
        volatile: field names whose values are volatile: stored as placeholders, at any
            depth, in args and answers (the answers' wall-clock placeholders derived from the
            call's seq), named in a new cassette's header and ignored by diffs.
        strip_headers: extra header or field names to strip before hashing.
        redact_patterns: extra ``(name, regex)`` redaction patterns.
        normalizers: per-call rules as ``name -> "module:function"``.
        public_env: environment variables whose values may be stored in clear.
        durability: ``flush`` or ``fsync``.
        max_age: how long ago a cassette may have been last committed before it is stale
            (``"90d"``, ``"12h"``, ``"2w"``), as written; ``None`` when unset.
        intercept: the pytest plugin routes the HTTP clients a test's code makes through
            its deck (``fd.intercept``), with no client wiring.
        tools: the tools that reach a service (``[tool.faultdeck.tools]``,
            ``NAME = { remote = true }``): a rehearsal lands network faults on them, as on
            ``@deck.tool(remote=True)``; for a program the command line runs.
        source: the pyproject file the settings came from, if any.
    """

    root: str
    cassette_dir: str | None = None
    mode: Mode | None = None
    match: Match = "keyed"
    volatile: tuple[str, ...] = ()
    strip_headers: tuple[str, ...] = ()
    redact_patterns: tuple[tuple[str, str], ...] = ()
    normalizers: Mapping[str, str] = field(default_factory=dict)
    public_env: tuple[str, ...] = ()
    durability: Durability = "flush"
    max_age: str | None = None
    intercept: bool = False
    tools: frozenset[str] = frozenset()
    source: str | None = None

    def rules(self) -> dict[str, Callable[[Any], Any]]:
        """Import the configured normalizers.

        Raises:
            ConfigError: a dotted path does not name a callable.
        """
        return {name: _import(name, spec, self.source) for name, spec in self.normalizers.items()}


def _project(start: str | os.PathLike[str] | None) -> tuple[str, int | None]:
    """The project root, the nearest folder at or above ``start`` holding ``pyproject.toml``
    or ``.git``, and the modification time of its ``pyproject.toml`` (``None`` when it has
    none). os.path rather than pathlib, one stat per folder, and the
    working folder as the system gives it (already resolved): every Deck asks."""
    here = folder = os.getcwd() if start is None else os.path.realpath(start)
    while True:
        try:
            found = os.stat(os.path.join(folder, "pyproject.toml"))
        except OSError:
            pass
        else:
            if stat.S_ISREG(found.st_mode):
                return folder, found.st_mtime_ns
        if os.path.exists(os.path.join(folder, ".git")):
            return folder, None
        parent = os.path.dirname(folder)
        if parent == folder:
            return here, None
        folder = parent


def load_settings(start: str | os.PathLike[str] | None = None) -> Settings:
    """Read ``[tool.faultdeck]`` from the project's pyproject.toml.

    Raises:
        ConfigError: the file cannot be parsed, or a key is unknown or of the wrong type.
    """
    root, mtime = _project(start)
    if mtime is None:
        return _defaults(root)
    return _load(os.path.join(root, "pyproject.toml"), mtime)


@functools.lru_cache(maxsize=16)
def _defaults(root: str) -> Settings:
    """The settings of a project with no pyproject.toml: one object per root, as ``_load``
    gives one per file, so that decks share what they build from them (``Deck``'s
    normalizer: a rehearsal makes a deck per cell)."""
    return Settings(root=root)


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
        mode = check_choice(f"{where}: mode", mode, MODES)
    cassette_dir = table.get("cassette_dir")
    if cassette_dir is not None and (not cassette_dir or os.path.isabs(cassette_dir)):
        raise ConfigError(
            f"{where}: cassette_dir {cassette_dir!r} must be a folder relative to the "
            f"project root ({os.path.dirname(pyproject)})"
        )
    return Settings(
        root=os.path.dirname(pyproject),
        cassette_dir=cassette_dir,
        mode=mode,
        match=check_choice(f"{where}: match", table.get("match", "keyed"), MATCHES),
        volatile=tuple(map(str, table.get("volatile", ()))),
        strip_headers=tuple(str(h).lower() for h in table.get("strip_headers", ())),
        redact_patterns=tuple(
            (str(k), str(v)) for k, v in table.get("redact_patterns", {}).items()
        ),
        normalizers={str(k): str(v) for k, v in table.get("normalizers", {}).items()},
        public_env=tuple(map(str, table.get("public_env", ()))),
        durability=check_choice(
            f"{where}: durability", table.get("durability", "flush"), DURABILITIES
        ),
        max_age=_max_age(table.get("max_age"), where),
        intercept=table.get("intercept", False),
        tools=_remote_tools(table.get("tools", {}), where),
        source=pyproject,
    )


def _remote_tools(tools: dict[str, Any], where: str) -> frozenset[str]:
    """The names ``[tool.faultdeck.tools]`` marks ``remote = true``."""
    remote = set()
    for name, spec in tools.items():
        if not isinstance(spec, dict) or set(spec) - {"remote"}:
            raise ConfigError(
                f"{where}: tools.{name} must be a table with one key, remote "
                f"(write {name} = {{ remote = true }})"
            )
        flag = spec.get("remote", False)
        if not isinstance(flag, bool):
            raise ConfigError(f"{where}: tools.{name}.remote must be true or false")
        if flag:
            remote.add(str(name))
    return frozenset(remote)


C = TypeVar("C", bound=str)


def check_choice(what: str, value: Any, choices: tuple[C, ...]) -> C:
    """Return ``value`` if it is one of ``choices``, else raise a ConfigError saying so."""
    if value not in choices:
        raise ConfigError(f"{what} {value!r} is not one of: {', '.join(choices)}")
    return value  # type: ignore[no-any-return]


def _import(name: str, spec: str, source: str | None) -> Callable[[Any], Any]:
    where = f"{source} [tool.faultdeck.normalizers] {name}" if source else f"normalizer {name}"
    target = load_attr(spec, what=where)
    if not callable(target):
        raise ConfigError(f"{where}: {spec!r} is not callable")
    return target  # type: ignore[no-any-return]


_AGE = re.compile(r"(\d+(?:\.\d+)?)([smhdw])")
_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_age(text: str) -> float:
    """An age such as ``"90d"``, ``"12h"`` or ``"2w"`` (units s, m, h, d, w) in seconds.

    Raises:
        ValueError: ``text`` is not such an age, or is zero.
    """
    match = _AGE.fullmatch(text.strip())
    if match is None or float(match.group(1)) <= 0:
        raise ValueError(f"{text!r} is not an age like 90d, 12h or 2w")
    return float(match.group(1)) * _UNIT[match.group(2)]


def _max_age(value: str | None, where: str) -> str | None:
    if value is None:
        return None
    try:
        parse_age(value)
    except ValueError as exc:
        raise ConfigError(f'{where}: max_age {exc}; write one, e.g. max_age = "90d"') from None
    return value.strip()


@dataclass(frozen=True, slots=True)
class Committed:
    """When a file was last committed to git.

    Attributes:
        in_git: the file lies in a git work tree (and git ran).
        at: the commit time (seconds since 1970) of the last commit touching it; ``None``
            when no commit holds it yet.
    """

    in_git: bool
    at: int | None


def last_commit(path: str | os.PathLike[str]) -> Committed:
    """When ``path`` was last committed (``git log -1 --format=%ct -- FILE``), read-only.

    The format keeps no wall-clock time, so a cassette's age is its file's in git.
    """
    folder, name = os.path.split(os.path.realpath(path))
    try:
        out = _git(folder, "log", "-1", "--format=%ct", "--", name).strip()
    except (OSError, subprocess.SubprocessError):
        return Committed(in_git=False, at=None)
    return Committed(in_git=True, at=int(out) if out.isdigit() else None)


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
