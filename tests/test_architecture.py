"""The layout is the pipeline: each stage imports only from the stages before it.

Read from the source text with ``ast``, so an import inside a function or under
``TYPE_CHECKING`` counts as much as one at the top of a module.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import SRC

PACKAGE = Path(SRC) / "faultdeck"

STAGES = ("_base", "_keys", "_cassette", "faults", "_deck", "_judge", "_diff", "_rehearse")
"""The stages in the order data flows; everything else in the package is an edge."""

EDGE = len(STAGES)
MAX_LINES = 400


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def stage(module: str) -> int:
    """The stage a module belongs to: its position in ``STAGES``, or ``EDGE``."""
    parts = module.split(".")
    if len(parts) > 1 and parts[1] in STAGES:
        return STAGES.index(parts[1])
    return EDGE


def imported(module: str) -> Iterator[tuple[int, str]]:
    """Every faultdeck module ``module`` imports, anywhere in its text, with the line."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    return imports_in(path.read_text("utf-8"), package)


def imports_in(text: str, package: str) -> Iterator[tuple[int, str]]:
    """The faultdeck modules a module of ``package`` with source ``text`` imports."""
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "faultdeck":
                    yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            if target.split(".")[0] != "faultdeck":
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                yield node.lineno, sub if sub in MODULES else target


def graph() -> dict[str, set[str]]:
    return {m: {t for _, t in imported(m) if t != m} for m in MODULES}


def test_every_stage_exists_and_every_module_is_placed() -> None:
    for name in STAGES:
        assert f"faultdeck.{name}" in MODULES, name
    edges = sorted({m.split(".")[1] for m in MODULES if "." in m and stage(m) == EDGE})
    assert edges == [
        "__main__",
        "_bootstrap",
        "attach",
        "cli",
        "config",
        "demo",
        "fake",
        "http",
        "mcp",
        "otel",
        "pytest_plugin",
        "render",
        "server",
        "testing",
        "types",
        "workshop",
    ]


def later(module: str, found: Iterator[tuple[int, str]]) -> list[str]:
    """The imports that reach a later stage than ``module``'s, or the package root."""
    return [
        f"{module}:{line} imports {target}"
        for line, target in found
        if stage(target) > stage(module) or target == "faultdeck"
    ]


@pytest.mark.parametrize("module", [m for m in MODULES if stage(m) < EDGE])
def test_a_stage_imports_only_from_itself_and_the_stages_before_it(module: str) -> None:
    assert later(module, imported(module)) == []


def test_no_module_imports_the_package_root_from_inside() -> None:
    # The root re-exports every stage; importing it from a stage would tie the stage to all.
    found = [
        f"{m}:{line}"
        for m in MODULES
        if m != "faultdeck"
        for line, t in imported(m)
        if t == "faultdeck"
    ]
    assert found == []


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                group.append(top)
                if top == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_no_import_cycle_anywhere() -> None:
    assert cycles(graph()) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_an_import_inside_a_function_or_under_type_checking_counts() -> None:
    text = (
        "from typing import TYPE_CHECKING\n"
        "from .ids import IdMap\n"
        "if TYPE_CHECKING:\n"
        "    from .._deck.deck import Deck\n"
        "def f():\n"
        "    from ..faults import FaultPlan\n"
        "    import faultdeck.cli\n"
        "    from faultdeck import _rehearse\n"
    )
    found = later("faultdeck._keys.x", imports_in(text, "faultdeck._keys"))
    assert found == [
        "faultdeck._keys.x:4 imports faultdeck._deck.deck",
        "faultdeck._keys.x:6 imports faultdeck.faults",
        "faultdeck._keys.x:7 imports faultdeck.cli",
        "faultdeck._keys.x:8 imports faultdeck._rehearse",
    ]


def test_no_module_is_over_400_lines() -> None:
    long = {
        str(path.relative_to(PACKAGE.parent)): n
        for path in MODULES.values()
        if (n := len(path.read_text("utf-8").splitlines())) > MAX_LINES
    }
    assert long == {}


def test_nothing_outside_the_deck_stage_touches_a_private_name_of_the_deck() -> None:
    private = re.compile(r"\bdeck\._\w+|\._run\b|\b_router\.")
    found = [
        f"{path.relative_to(PACKAGE.parent)}:{number}: {line.strip()}"
        for module, path in MODULES.items()
        if not module.startswith("faultdeck._deck")
        for number, line in enumerate(path.read_text("utf-8").splitlines(), 1)
        if private.search(line)
    ]
    assert found == []
