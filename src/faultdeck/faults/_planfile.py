"""Plan files: reading a fault plan from JSON, TOML or a dict.

This is where plan-file syntax meets ``Fault`` and ``Selector``: it reads and decodes the
file, and walks the table field by field so that every error names the file and the field
path (``plan.toml: faults[2].on.nth``) and suggests a close match for a typo.
``FaultPlan.load`` and ``FaultPlan.from_dict`` build their plans from what it returns;
``Fault.to_json`` writes the same syntax back.

A plan file holds ``seed`` and one of ``faults`` or ``sequence``::

    seed = 7

    [[faults]]
    fault = "quota"
    retry_after = 2
    at = 3                                  # or at = {seq = 3}
    on = {kind = "tool", name = "read_*", nth = 2}
    every = 5
    random = {p = 0.1, seed = 7}
    times = 2

A ``sequence`` entry is a fault table without selector fields (entry i is call seq i+1),
or an empty table for no fault at that call.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any

import orjson

from .._base.errors import ConfigError
from ._checks import (
    SELECTOR_CHECKS,
    check_params,
    check_value,
    hint,
    integer,
    shown,
)
from ._fault import ANY, Fault, Selector
from ._kinds import FAULT_KINDS, KINDS

_SELECTOR_KEYS = ("at", "on", "every", "random", "times", "burst", "always")
_STRATEGIES = ("on.nth", "every", "random", "burst")
"""What ``always`` rules out: each narrows the matching calls a fault lands on."""


def load_data(where: str) -> Any:
    """A plan file's data, parsed from JSON or TOML; the start of ``FaultPlan.load``.

    Raises:
        ConfigError: the file is missing, unreadable, or not JSON/TOML (naming the file).
    """
    suffix = Path(where).suffix.lower()
    if suffix not in (".json", ".toml"):
        raise ConfigError(
            f"{where}: a fault plan is a .json or .toml file, not {suffix or 'no suffix'!r}"
        )
    try:
        raw = Path(where).read_bytes()
    except FileNotFoundError:
        raise ConfigError(
            f"{where}: no such fault plan; check the path (relative to {os.getcwd()})"
        ) from None
    except OSError as exc:
        raise ConfigError(f"{where}: cannot read the fault plan ({exc})") from None
    data: Any
    if suffix == ".json":
        try:
            data = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise ConfigError(f"{where}: not valid JSON ({exc}); fix the file") from None
    else:
        try:
            data = tomllib.loads(raw.decode("utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{where}: not valid TOML ({exc}); fix the file") from None
        except RecursionError:
            raise ConfigError(
                f"{where}: nested too deeply to be a fault plan; fix the file"
            ) from None
        except ValueError as exc:  # a number too long for int(): Python's digit limit
            raise ConfigError(f"{where}: not a valid plan ({exc}); fix the file") from None
    return data


def parse_plan(data: Any, *, source: str) -> tuple[list[Fault | None], int, bool]:
    """A plan's faults, its seed, and whether it is a sequence, from its plan-file form;
    the body of ``FaultPlan.from_dict``.

    Args:
        data: the parsed JSON or TOML.
        source: what to call the plan in error messages, usually its file name.

    Raises:
        ConfigError: naming ``source`` and the field path, and saying what was expected.
    """
    if not isinstance(data, dict):
        raise ConfigError(
            f"{source}: expected a table with 'faults' or 'sequence', got {shown(data)}"
        )
    known = ("seed", "faults", "sequence")
    for key in data:
        if key not in known:
            raise ConfigError(
                f"{source}: unknown field {key!r}; known: {', '.join(known)}{hint(key, known)}"
            )
    seed = check_value(integer, data.get("seed", 0), f"{source}: seed")
    if "faults" in data and "sequence" in data:
        raise ConfigError(
            f"{source}: has both 'faults' and 'sequence'; keep one ('faults' picks calls "
            "by selector, 'sequence' gives one entry per call)"
        )
    if "faults" in data:
        entries = _list(data["faults"], f"{source}: faults")
        faults: list[Fault | None] = [
            parse_fault(e, f"{source}: faults[{i}]") for i, e in enumerate(entries)
        ]
        return faults, seed, False
    if "sequence" in data:
        entries = _list(data["sequence"], f"{source}: sequence")
        steps = [
            None
            if e is None or e == {}
            else parse_fault(e, f"{source}: sequence[{i}]", in_sequence=True)
            for i, e in enumerate(entries)
        ]
        return steps, seed, True
    raise ConfigError(
        f"{source}: neither 'faults' nor 'sequence' is given; a plan needs one of them"
    )


def _list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise ConfigError(f"{where}: expected a list of fault tables, got {shown(value)}")
    return value


def _table(value: Any, where: str, known: tuple[str, ...]) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: expected a table with {', '.join(known)}, got {shown(value)}")
    for key in value:
        if key not in known:
            raise ConfigError(
                f"{where}: unknown field {key!r}; known: {', '.join(known)}{hint(key, known)}"
            )
    return value


def parse_fault(entry: Any, path: str, *, in_sequence: bool = False) -> Fault:
    """One fault from its plan-file table (``{"fault": "quota", "retry_after": 2, "at": 3}``).

    Raises:
        ConfigError: naming ``path`` and the field.
    """
    if not isinstance(entry, dict):
        raise ConfigError(
            f'{path}: expected a table like {{"fault": "timeout"}}, got {shown(entry)}'
        )
    kinds = ", ".join(FAULT_KINDS)
    if "fault" not in entry:
        raise ConfigError(f"{path}.fault: missing; expected one of: {kinds}")
    kind = entry["fault"]
    if not isinstance(kind, str) or kind not in FAULT_KINDS:
        raise ConfigError(
            f"{path}.fault: unknown fault {shown(kind)}; known: {kinds}{hint(kind, FAULT_KINDS)}"
        )
    spec = KINDS[kind].params
    known = ("fault", *spec, *(() if in_sequence else _SELECTOR_KEYS))
    for key in entry:
        if key in known:
            continue
        if in_sequence and key in _SELECTOR_KEYS:
            raise ConfigError(
                f"{path}: {key!r} does not belong in a sequence entry (entry i is call seq "
                "i+1); use 'faults' to select calls"
            )
        raise ConfigError(
            f"{path}: unknown field {key!r}; known: {', '.join(known)}{hint(key, known)}"
        )
    given = {k: v for k, v in entry.items() if k in spec}
    params = check_params(spec, given, lambda n: f"{path}.{n}", path)
    return Fault(kind, params, ANY if in_sequence else _parse_selector(entry, path))


def _parse_selector(entry: dict[str, Any], path: str) -> Selector:
    fields: dict[str, Any] = {}

    def put(name: str, value: Any, where: str) -> None:
        fields[name] = check_value(SELECTOR_CHECKS[name], value, where)

    if "at" in entry:
        put("seq", *_seq_at(entry["at"], path))
    if "on" in entry:
        on = _table(entry["on"], f"{path}.on", ("kind", "name", "nth", "after"))
        for key, value in on.items():
            put(key, value, f"{path}.on.{key}")
    for key in ("every", "times", "burst"):
        if key in entry:
            put(key, entry[key], f"{path}.{key}")
    if "random" in entry:
        drawn = _table(entry["random"], f"{path}.random", ("p", "seed"))
        if "p" not in drawn:
            raise ConfigError(f"{path}.random.p: missing; expected a probability from 0 to 1")
        for key, value in drawn.items():
            put(key, value, f"{path}.random.{key}")
    if "always" in entry:
        _always(entry, fields, path)
    return Selector(**fields)


def _seq_at(at: Any, path: str) -> tuple[Any, str]:
    """The seq ``"at": 3`` or ``"at": {"seq": 3}`` names, and where it was.

    Raises:
        ConfigError: a table without ``seq``, or with another field.
    """
    if not isinstance(at, dict):
        return at, f"{path}.at"
    _table(at, f"{path}.at", ("seq",))
    if "seq" not in at:
        raise ConfigError(f"{path}.at.seq: missing; expected an integer >= 1")
    return at["seq"], f"{path}.at.seq"


def _always(entry: dict[str, Any], fields: dict[str, Any], path: str) -> None:
    """``"always": true``: every matching call (the default, said out loud); it cannot go
    with a strategy that lands on fewer.

    Raises:
        ConfigError: ``always`` is not ``true``, or comes with ``nth``, ``every``, ``random``
            or ``burst``.
    """
    if entry["always"] is not True:
        raise ConfigError(
            f"{path}.always: expected true (every matching call), got {shown(entry['always'])}; "
            "drop it for the same"
        )
    given = {"on.nth": "nth" in fields, **{k: k in entry for k in _STRATEGIES[1:]}}
    clash = next((k for k in _STRATEGIES if given[k]), None)
    if clash is not None:
        raise ConfigError(
            f"{path}: always lands on every matching call, {clash} on fewer; keep one of them"
        )
