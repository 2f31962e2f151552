"""Loading what a setting or an option names as ``"package.module:attribute"``.

One loader for every such name: the normalizers of ``[tool.faultdeck]``, a rehearsal's
entrypoint and the policy it is judged by. Whatever goes wrong is one ``ConfigError`` that
says what to write instead.
"""

from __future__ import annotations

import importlib
from typing import Any

from .errors import ConfigError

_MISSING = object()


def load_attr(spec: str, *, what: str, kind: str = "name") -> Any:
    """Import ``"package.module:attr"`` (``attr`` may be dotted) and return the attribute.

    Args:
        spec: the name, as written.
        what: what the name is for, to start each error message (``entrypoint``).
        kind: what the attribute is, for the messages (``function``).

    Raises:
        ConfigError: the spec is malformed, the module does not import, or it has no such
            attribute; one line saying what to write.
    """
    module_name, _, attr = spec.partition(":") if isinstance(spec, str) else ("", "", "")
    dotted = (module_name, attr)
    if not all(part and all(p.isidentifier() for p in part.split(".")) for part in dotted):
        raise ConfigError(f"{what} {spec!r} must look like 'package.module:{kind}'")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # whatever the module raises on import: one line, not a traceback
        hint = ""
        missing = getattr(exc, "name", None) or "?"
        if isinstance(exc, ModuleNotFoundError) and f"{module_name}.".startswith(f"{missing}."):
            hint = "; put the folder that holds it on PYTHONPATH, or install it"
        raise ConfigError(
            f"{what}: cannot import {module_name!r} ({type(exc).__name__}: {first_line(exc)}){hint}"
        ) from exc
    found: Any = module
    for part in attr.split("."):
        found = getattr(found, part, _MISSING)
        if found is _MISSING:
            raise ConfigError(
                f"{what}: {module_name!r} has no {attr!r}; write 'package.module:{kind}' with "
                f"a {kind} that module defines"
            )
    return found


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message, or its type's name."""
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__
