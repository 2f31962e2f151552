"""Patching the table's libraries, and undoing it: the ones imported now at once, the others
when they are first imported (a finder on ``sys.meta_path`` waits for them), so that a
program pays nothing for a library it never imports.

Installs are counted: the first patches, the last undoes, and nothing stays patched after.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
import threading
from collections.abc import Sequence
from types import ModuleType
from typing import Any

from ._table import ADAPTERS, Adapter, Undo

_LOCK = threading.RLock()
_undo: dict[str, Undo] = {}
_users = 0


def install() -> None:
    """Route every installed library of the table, now or on its import."""
    global _users
    with _LOCK:
        _users += 1
        if _users > 1:
            return
        for adapter in ADAPTERS:
            module = sys.modules.get(adapter.module)
            if module is not None:
                _route(adapter, module)
            elif _installed(adapter.module):
                _WATCHER.waiting[adapter.module] = adapter
        if _WATCHER.waiting and _WATCHER not in sys.meta_path:
            sys.meta_path.insert(0, _WATCHER)


def uninstall() -> None:
    """Undo ``install``; the last one puts every original back."""
    global _users
    with _LOCK:
        _users -= 1
        if _users > 0:
            return
        _users = 0
        _WATCHER.waiting.clear()
        if _WATCHER in sys.meta_path:
            sys.meta_path.remove(_WATCHER)
        for undo in reversed(list(_undo.values())):
            undo()
        _undo.clear()


def routed() -> tuple[str, ...]:
    """The modules routed now."""
    return tuple(_undo)


def _installed(name: str) -> bool:
    """Whether ``name``'s top-level package can be imported (without importing it)."""
    top = name.partition(".")[0]
    return top in sys.modules or importlib.util.find_spec(top) is not None


def _route(adapter: Adapter, module: ModuleType) -> None:
    with _LOCK:
        if adapter.module in _undo:
            return
        unknown = adapter.unknown_version()
        if unknown is not None:
            sys.stderr.write(unknown + "\n")
            _undo[adapter.module] = _nothing
            return
        try:
            _undo[adapter.module] = adapter.routing(module)
        except Exception as exc:  # the program's import goes on: the library left as it was
            sys.stderr.write(
                f"faultdeck: {adapter.name} could not be routed ({type(exc).__name__}: {exc}); "
                "its requests are not recorded: give its client fd.http.Transport yourself\n"
            )
            _undo[adapter.module] = _nothing


def _nothing() -> None:
    """The undo of a library left as it was."""


class _Watcher(importlib.abc.MetaPathFinder):
    """Finds nothing itself: for a module the table waits for, it wraps the loader that the
    finders after it give, so that the module is routed once it has run."""

    def __init__(self) -> None:
        self.waiting: dict[str, Adapter] = {}

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        adapter = self.waiting.get(fullname)
        if adapter is None:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        if spec.loader is not None:
            spec.loader = _Then(spec.loader, adapter, self)
        return spec


class _Then(importlib.abc.Loader):
    """A module's own loader, then routing the module (the module keeps its own loader)."""

    def __init__(self, loader: Any, adapter: Adapter, watcher: _Watcher) -> None:
        self._loader = loader
        self._adapter = adapter
        self._watcher = watcher

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        create = getattr(self._loader, "create_module", None)
        return create(spec) if create is not None else None

    def exec_module(self, module: ModuleType) -> None:
        module.__loader__ = self._loader
        if module.__spec__ is not None:
            module.__spec__.loader = self._loader
        self._loader.exec_module(module)
        # What the import system does once this returns, done first: routing imports the
        # adapter, whose imports may reach this module through its package.
        parent, _, child = module.__name__.rpartition(".")
        if parent in sys.modules:
            setattr(sys.modules[parent], child, module)
        with _LOCK:
            if self._watcher.waiting.pop(self._adapter.module, None) is not None:
                _route(self._adapter, module)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)


_WATCHER = _Watcher()
