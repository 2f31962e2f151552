"""The public door: ``faultdeck.__all__`` is sorted, complete and documented.

Complete means a user never needs a private module: every error the package raises, every
class a public function takes or returns (and every class its public methods and fields
name), and every ``fd.<name>`` the docs and examples use, has a public name.
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
from faultdeck import faults, http, testing
from faultdeck._base import errors
from tests.support import ROOT

PUBLIC: dict[str, ModuleType] = {
    "faultdeck": fd,
    "faultdeck.faults": faults,
    "faultdeck.http": http,
    "faultdeck.testing": testing,
}


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
    """Every ``fd.<name>`` and ``faults.<name>`` in the README, the docs and the examples."""
    files = [ROOT / "README.md", *(ROOT / "docs").rglob("*.md"), *(ROOT / "examples").rglob("*.py")]
    for path in files:
        text = path.read_text("utf-8")
        for match in re.finditer(r"\b(fd|faults)\.([A-Za-z_]\w*)", text):
            line = text.count("\n", 0, match.start()) + 1
            yield f"{path.relative_to(ROOT)}:{line}", f"{match.group(1)}.{match.group(2)}"


def test_every_name_the_docs_use_is_public() -> None:
    unknown = {
        where: name
        for where, name in used_names()
        if name.partition(".")[2] not in (fd if name.startswith("fd.") else faults).__all__
        and not inspect.ismodule(getattr(fd, name.partition(".")[2], None))
    }
    assert unknown == {}


def test_importing_faultdeck_leaves_asyncio_and_rich_to_whoever_uses_them() -> None:
    """A command rehearsal starts a fresh Python per cell, and each imports faultdeck: the
    event loop's modules (with ssl) and rich's tables are imported where a clock is awaited
    or a table drawn, not by the import."""
    import subprocess

    probe = "import sys, faultdeck; print(sorted({'asyncio', 'rich', 'ssl'} & set(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert done.stdout.strip() == "[]"
