"""The public door: ``faultdeck.__all__`` is small, sorted, complete and documented.

Small means at most 61 names: what a user calls, catches or gets back; the rest is in the
public modules beside it (``PUBLIC``), each name in one of them. Complete means a user never
needs a private module: every error the package raises, every class a public function takes
or returns (and every class its public methods and fields name), every public name
``faultdeck/__init__.py`` binds, and every ``fd.<name>`` the docs and examples use, has a
public name.
"""

from __future__ import annotations

import ast
import inspect
import re
import sys
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pytest

import faultdeck as fd
from faultdeck import attach, faults, http, testing
from faultdeck._base import errors
from tests.support import ROOT

PUBLIC: dict[str, ModuleType] = {
    "faultdeck": fd,
    "faultdeck.attach": attach,
    "faultdeck.config": fd.config,
    "faultdeck.faults": faults,
    "faultdeck.http": http,
    "faultdeck.render": fd.render,
    "faultdeck.testing": testing,
    "faultdeck.types": fd.types,
}

MOST_AT_THE_DOOR = 61
"""The most names ``faultdeck`` itself exports: what a user calls, catches or gets back;
the rest goes in a public submodule."""


def exported() -> Iterator[tuple[str, Any]]:
    for prefix, module in PUBLIC.items():
        for name in module.__all__:
            yield f"{prefix}.{name}", getattr(module, name)


EXPORTED_IDS = {id(value) for _, value in exported()}


@pytest.mark.parametrize("module", PUBLIC.values(), ids=PUBLIC.keys())
def test_all_is_sorted_and_every_name_exists(module: ModuleType) -> None:
    assert module.__all__ == sorted(module.__all__)
    missing = [name for name in module.__all__ if not hasattr(module, name)]
    assert missing == []


def test_every_name_imported_when_first_read_is_exported() -> None:
    # A name the package imports when first read (its table) but leaves out of __all__
    # would be public, undocumented and unchecked.
    assert set(fd._LAZY) - set(fd.__all__) == set()


def test_the_door_stays_small() -> None:
    assert len(fd.__all__) <= MOST_AT_THE_DOOR


SHORTCUTS = [
    ["faultdeck.Fault", "faultdeck.faults.Fault"],
    ["faultdeck.FaultPlan", "faultdeck.faults.FaultPlan"],
    ["faultdeck.intercept", "faultdeck.attach.intercept"],
]
"""The names exported from two places: the door's short way to what every plan is made of."""


def test_every_other_name_is_exported_from_one_public_place() -> None:
    places: dict[int, list[str]] = {}
    for name, value in exported():
        if not name.rpartition(".")[2].startswith("__") and not inspect.ismodule(value):
            places.setdefault(id(value), []).append(name)
    assert sorted(names for names in places.values() if len(names) > 1) == SHORTCUTS


def unlisted(source: str, module: ModuleType) -> list[str]:
    """The public names ``source`` (the text of ``module``) defines or imports at its top
    level that ``module.__all__`` leaves out; modules are not counted."""
    bound: list[str] = []
    for node in ast.parse(source).body:
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            bound += [(a.asname or a.name).partition(".")[0] for a in node.names]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.append(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            bound += [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
    return [
        name
        for name in dict.fromkeys(bound)
        if not name.startswith("_")
        and not inspect.ismodule(getattr(module, name, None))
        and name not in module.__all__
    ]


def test_every_public_name_the_door_binds_is_exported() -> None:
    assert unlisted(inspect.getsource(fd), fd) == []


def test_the_door_checker_finds_a_name_left_out() -> None:
    module = ModuleType("faultdeck_fake")
    module.faults = faults  # type: ignore[attr-defined]
    module.__all__ = ["Deck"]  # type: ignore[attr-defined]
    source = (
        "from __future__ import annotations\n"
        "from . import faults\n"
        "from ._deck.deck import Deck\n"
        "from ._base.config import Mode as Mode, _private\n"
        "LIMIT: int = 3\n"
        "a, (b, _c) = 1, (2, 3)\n"
        "def helper() -> None: ...\n"
        "class Hidden: ...\n"
    )
    assert unlisted(source, module) == ["Mode", "LIMIT", "a", "b", "helper", "Hidden"]


def test_public_names_are_documented_and_come_from_the_package() -> None:
    for name, value in exported():
        if name.rpartition(".")[2].startswith("__") or inspect.ismodule(value):
            continue
        if not (inspect.isclass(value) or inspect.isroutine(value)):
            continue
        assert inspect.getdoc(value), f"{name} has no docstring"
        assert value.__module__.startswith("faultdeck"), name


def test_every_error_the_package_raises_is_exported() -> None:
    raised = {
        name
        for name, value in vars(errors).items()
        if inspect.isclass(value)
        and issubclass(value, (Exception, Warning))
        and value.__module__ == errors.__name__
    }
    assert raised - set(fd.__all__) == set()


def annotations_of(value: Any) -> Iterator[tuple[str, str, ModuleType]]:
    """``(where, annotation text, the module it was written in)`` for a public function or
    class and its public parts."""
    if inspect.isfunction(value):
        yield from function_annotations(value, value.__qualname__)
    if not inspect.isclass(value):
        return
    for klass in value.__mro__:
        if not klass.__module__.startswith("faultdeck"):
            continue
        module = sys.modules[klass.__module__]
        for field, text in vars(klass).get("__annotations__", {}).items():
            if not field.startswith("_"):
                yield f"{klass.__qualname__}.{field}", text, module
        for member, attr in vars(klass).items():
            if not member.startswith("_") or member == "__init__":
                found = attr.fget if isinstance(attr, property) else attr
                found = getattr(found, "__func__", found)  # staticmethod, classmethod
                if inspect.isfunction(found):
                    yield from function_annotations(found, f"{klass.__qualname__}.{member}")


def function_annotations(fn: Any, where: str) -> Iterator[tuple[str, str, ModuleType]]:
    module = sys.modules[fn.__module__]
    for arg, text in fn.__annotations__.items():
        if not arg.startswith("_"):
            yield f"{where}({arg})", text, module


def named_classes(text: Any, module: ModuleType) -> Iterator[type]:
    """The faultdeck classes an annotation names, looked up where it was written."""
    if not isinstance(text, str):
        return
    for node in ast.walk(ast.parse(text, mode="eval")):
        if isinstance(node, ast.Name):
            found = getattr(module, node.id, None) or getattr(fd, node.id, None)
            if inspect.isclass(found) and found.__module__.startswith("faultdeck."):
                yield found


def test_every_class_the_public_api_names_has_a_public_name() -> None:
    unnamed: dict[str, str] = {}
    for name, value in exported():
        if not (inspect.isclass(value) or inspect.isfunction(value)):
            continue
        for where, text, module in annotations_of(value):
            for part in named_classes(text, module):
                if id(part) not in EXPORTED_IDS:
                    unnamed[f"{part.__module__}.{part.__qualname__}"] = f"{name}: {where}"
    assert unnamed == {}


def test_the_checker_finds_a_class_with_no_public_name() -> None:
    class Hidden:
        pass

    module = ModuleType("faultdeck._fake")
    module.Hidden = Hidden  # type: ignore[attr-defined]
    Hidden.__module__ = "faultdeck._fake"
    assert list(named_classes("list[Hidden] | None", module)) == [Hidden]
    assert id(Hidden) not in EXPORTED_IDS


def used_names() -> Iterator[tuple[str, str]]:
    """Every ``fd.<name>`` and ``faults.<name>`` in the README, the docs and the examples,
    with the names after it (``fd.render.diff_text``)."""
    files = [ROOT / "README.md", *(ROOT / "docs").rglob("*.md"), *(ROOT / "examples").rglob("*.py")]
    for path in files:
        text = path.read_text("utf-8")
        for match in re.finditer(r"\b(?:fd|faults)(?:\.[A-Za-z_]\w*)+", text):
            line = text.count("\n", 0, match.start()) + 1
            yield f"{path.relative_to(ROOT)}:{line}", match.group()


def is_public(dotted: str) -> bool:
    """Whether ``fd.a.b`` (or ``faults.a``) names what a public module exports, followed
    for as long as it goes through public modules; a module the package has, as ``fd.mcp``
    once imported, is public too."""
    first, *parts = dotted.split(".")
    module = fd if first == "fd" else faults
    for part in parts:
        found = getattr(module, part, None)
        if part not in module.__all__:
            return inspect.ismodule(found)
        inner = next((m for m in PUBLIC.values() if m is found), None)
        if inner is None:
            return True
        module = inner
    return True


def test_every_name_the_docs_use_is_public() -> None:
    unknown = {where: name for where, name in used_names() if not is_public(name)}
    assert unknown == {}


def test_the_docs_checker_follows_public_modules() -> None:
    assert is_public("fd.render.diff_text")
    assert is_public("fd.Deck.from_env")
    assert is_public("faults.quota")
    assert not is_public("fd.render.make_key")
    assert not is_public("fd.Mode")
    assert not is_public("faults.Mode")


def test_importing_faultdeck_leaves_the_edges_to_whoever_uses_them() -> None:
    """A command rehearsal starts a fresh Python per cell, and each imports faultdeck: the
    event loop's modules (with ssl), rich's tables, click, the HTTP edge and the HTTP
    clients, the diffs and the rehearsals are imported where they are used, not by the
    import: ``import faultdeck`` alone imports none of faultdeck's stages but the base
    (the errors and the version), and a deck
    imports what it needs to open and answer. Each public name is still there when first
    read."""
    import subprocess

    edges = (
        "asyncio", "rich", "ssl", "click", "httpx", "httpx2", "faultdeck.http",
        "faultdeck.cli", "faultdeck._diff.align", "faultdeck._rehearse.inprocess",
    )  # fmt: skip
    probe = (
        "import sys, faultdeck; print(sorted(m for m in sys.modules if 'faultdeck._' in m"
        " and not m.startswith('faultdeck._base')));"
        "from faultdeck import Deck; Deck('x.jsonl', mode='replay');"
        f"print(sorted(set({edges!r}) & set(sys.modules)));"
        "print(faultdeck.http.Transport.__name__, faultdeck.rehearse.__name__);"
        "print('faultdeck.http' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert done.stdout.splitlines() == ["[]", "[]", "Transport rehearse", "True"]
