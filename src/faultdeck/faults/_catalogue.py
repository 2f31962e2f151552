"""The catalogue of fault kinds: every kind of ``KINDS``, where it applies, its parameters,
and what a program sees of it at each surface.

One list (``catalogue()``) feeds ``faultdeck faults`` (its JSON is that list) and the fault
table of docs/rehearsal.md (``catalogue_markdown()``, between the ``MARKERS``), so that the
command, the docs and the kinds cannot drift apart: a kind added to ``_kinds`` is listed
with no change here, its words per surface coming from ``_shows``. What an in-process call
raises is read off the kind's ``error``, never written twice.

``python -m faultdeck.faults._catalogue`` prints the docs' table;
``python -m faultdeck.faults._catalogue --write docs/rehearsal.md`` puts it in place.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .._keys.canonical import KINDS as CALL_KINDS
from ._checks import REQUIRED, expected
from ._kinds import KINDS, SURFACES, FaultKind, num
from ._shows import PARAMS

SURFACE_CALLS: Mapping[str, str] = {
    "openai.chat": "model",
    "openai.responses": "model",
    "anthropic.messages": "model",
    "gemini": "model",
    "http": "http",
    "tool": "tool",
    "mcp": "tool",
}
"""The boundary call kind each surface is: a kind reaches a surface when it applies there."""

MARKERS = ("<!-- faults: begin -->", "<!-- faults: end -->")
"""The comments docs/rehearsal.md holds its generated fault table between."""

# Values a required parameter is tried with when the in-process error is read off a kind.
_SAMPLES: tuple[Any, ...] = (1, "x", 1.0, True)
_LATE = "no error: the call succeeds, later on the deck's clock"


def reaches(kind: FaultKind) -> tuple[str, ...]:
    """The surfaces ``kind`` can land at, in ``SURFACES`` order."""
    return tuple(s for s in SURFACES if SURFACE_CALLS[s] in kind.applies_to)


def _sample(check: Callable[[Any], Any]) -> Any:
    choices = getattr(check, "choices", None)
    if choices:
        return choices[0]
    for value in _SAMPLES:
        try:
            return check(value)
        except Exception:  # not this one: try the next
            continue
    return None


def _error(kind: FaultKind, **given: Any) -> BaseException | None:
    """What an in-process call raises under ``kind`` with its defaults (a required
    parameter sampled) and ``given``; ``None`` for a kind that raises nothing."""
    if kind.error is None:
        return None
    params = {
        name: _sample(check) if default is REQUIRED else default
        for name, (check, default) in kind.params.items()
    }
    params = {name: value for name, value in {**params, **given}.items() if value is not None}
    try:
        return kind.error(params)
    except (KeyError, TypeError, ValueError):
        return None


def _public(exc: BaseException) -> str:
    cls = type(exc)
    return f"fd.{cls.__name__}" if cls.__module__.startswith("faultdeck") else cls.__qualname__


def raises(kind: FaultKind) -> dict[str, Any] | None:
    """The exception an in-process call (``deck.call``, ``@deck.tool``) raises, with the
    defaults: its public name and its ``status``, ``retry_after`` and ``code`` where set,
    and ``code_from``, the parameter whose value the code is (``how``), if one's is."""
    exc = _error(kind)
    if exc is None:
        return None
    out: dict[str, Any] = {"error": _public(exc)}
    for field in ("status", "retry_after", "code"):
        value = getattr(exc, field, None)
        if value is not None:
            out[field] = value
    for name, (check, _) in kind.params.items():
        choices = getattr(check, "choices", ())
        codes = [getattr(_error(kind, **{name: c}), "code", None) for c in choices]
        if choices and codes == list(choices):
            out["code_from"] = name
    return out


def in_process(kind: FaultKind) -> str:
    """What an in-process call meets, in words: the kind's own for ``tool`` if it has one,
    else read off its error."""
    if "tool" in kind.shows:
        return kind.shows["tool"]
    found = raises(kind)
    if found is None:
        return _LATE if kind.delays else "nothing raised"
    error: str = found["error"]
    detail = [f"{field} {found[field]}" for field in ("status", "code") if field in found]
    if "code_from" in found:
        detail[-1] = f"code: the {found['code_from']}"
    return error + (f" ({', '.join(detail)})" if detail else "")


def shows(kind: FaultKind) -> dict[str, str]:
    """What a program sees at each surface ``kind`` reaches, ``tool`` read off its error
    where the kind says nothing else."""
    out = {s: kind.shows[s] for s in reaches(kind) if s in kind.shows}
    if "tool" in reaches(kind):
        out["tool"] = in_process(kind)
    return {s: out[s] for s in SURFACES if s in out}


def _param(kind: FaultKind, name: str) -> dict[str, Any]:
    check, default = kind.params[name]
    entry: dict[str, Any] = {"name": name, "required": default is REQUIRED}
    if default is not REQUIRED:
        entry["default"] = default
    entry["takes"] = expected(check)
    choices = getattr(check, "choices", None)
    if choices:
        entry["choices"] = list(choices)
    about = PARAMS.get(kind.name, {}).get(name)
    if about:
        entry["about"] = about
    return entry


def entry(kind: FaultKind) -> dict[str, Any]:
    """One kind's catalogue entry (plain JSON)."""
    return {
        "name": kind.name,
        "summary": kind.summary,
        "applies_to": sorted(kind.applies_to),
        "network": kind.network,
        "streamed_only": kind.needs_stream,
        "params": [_param(kind, name) for name in kind.params],
        "raises": raises(kind),
        "in_process": in_process(kind),
        "shows": shows(kind),
    }


def catalogue() -> list[dict[str, Any]]:
    """Every kind of ``KINDS``, in its order, as ``entry`` has it."""
    return [entry(kind) for kind in KINDS.values()]


def where(item: Mapping[str, Any]) -> str:
    """Where an entry's kind applies, in words: ``model, tool (reaching a service), http``."""
    calls = [call for call in CALL_KINDS if call in item["applies_to"]]
    if item["network"] and "tool" in calls:
        calls[calls.index("tool")] = "tool (reaching a service)"
    return ", ".join(calls) + (", streamed answers only" if item["streamed_only"] else "")


def shown_default(value: Any) -> str:
    """A default as a plan file writes it: ``"cut"``, ``1``, ``null``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return num(value)
    return f'"{value}"'


def param_text(param: Mapping[str, Any]) -> str:
    """What a parameter takes, its default and what it means, in words (its name apart)."""
    parts = [param["takes"]]
    parts.append("required" if param["required"] else f"default {shown_default(param['default'])}")
    if "about" in param:
        parts.append(param["about"])
    return "; ".join(parts)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def catalogue_markdown() -> str:
    """The fault table of docs/rehearsal.md, between its ``MARKERS``: one table of the
    kinds (parameters, where they apply, what an in-process call raises), one of what each
    SDK, a plain HTTP client and an MCP client sees (``·``: the kind does not reach it)."""
    items = catalogue()
    lines = [
        MARKERS[0],
        "<!-- generated from faultdeck.faults.KINDS: faultdeck faults --format markdown -->",
        "",
        "| kind | parameters | applies to | in-process (`deck.call`, `@deck.tool`) |",
        "| --- | --- | --- | --- |",
    ]
    for item in items:
        params = " ".join(f"`{p['name']}`: {param_text(p)}." for p in item["params"])
        lines.append(
            f"| `{item['name']}` | {_cell(params) or 'none'} | {_cell(where(item))} "
            f"| {_cell(item['in_process'])} |"
        )
    seen = [s for s in SURFACES if s != "tool"]
    lines += [
        "",
        "| kind | " + " | ".join(f"`{s}`" for s in seen) + " |",
        "| --- |" + " --- |" * len(seen),
    ]
    for item in items:
        cells = [_cell(item["shows"].get(s, "·")) for s in seen]
        lines.append(f"| `{item['name']}` | " + " | ".join(cells) + " |")
    lines.append(MARKERS[1])
    return "\n".join(lines) + "\n"


def with_table(text: str, table: str) -> str:
    """``text`` with what stands between the ``MARKERS`` (they included) replaced by
    ``table``.

    Raises:
        ValueError: ``text`` lacks a marker, or has them out of order.
    """
    begin, end = (text.find(marker) for marker in MARKERS)
    if begin < 0 or end < begin:
        raise ValueError(f"expected {MARKERS[0]} and then {MARKERS[1]}, each on a line")
    after = end + len(MARKERS[1])
    return text[:begin] + table.rstrip("\n") + text[after:]


def main(argv: Sequence[str] | None = None) -> int:
    """Print the docs' fault table, or (``--write FILE``) put it between FILE's markers."""
    parser = argparse.ArgumentParser(
        prog="python -m faultdeck.faults._catalogue", description=main.__doc__
    )
    parser.add_argument("--write", metavar="FILE", help="the markdown file to update in place")
    args = parser.parse_args(argv)
    table = catalogue_markdown()
    if args.write is None:
        sys.stdout.write(table)
        return 0
    path = Path(args.write)
    path.write_text(with_table(path.read_text("utf-8"), table), "utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
