"""Exceptions to cassette ``error`` objects and back.

A recorded error replays as the same type when that type can be had without importing
anything new: faultdeck's own, the builtins, and classes of modules the program has already
imported (httpx's, an SDK's). Anything else replays as ``RecordedError`` carrying the
original type's name, so a cassette never makes faultdeck import code.
"""

from __future__ import annotations

import builtins
import socket
import sys
from typing import Any

from .._base import errors as _errors
from .._base.errors import BoundaryError, RecordedError


def error_to_json(exc: BaseException) -> dict[str, Any]:
    """The cassette object of an exception: type, module, message and known fields."""
    cls = type(exc)
    obj: dict[str, Any] = {"type": cls.__qualname__, "module": cls.__module__}
    obj["message"] = str(exc)
    status = getattr(exc, "status", None) or getattr(exc, "status_code", None)
    if isinstance(status, int):
        obj["status"] = status
    retry_after = getattr(exc, "retry_after", None)
    if isinstance(retry_after, (int, float)):
        obj["retry_after"] = retry_after
    code = getattr(exc, "code", None)
    if isinstance(code, str):
        obj["code"] = code
    return obj


# Errors that mean the far side was never reached: no connection, no name. Matched by class
# name and module anywhere in the chain, so httpx's, httpx2's, httpcore's and the SDKs'
# wrappers (openai.APIConnectionError caused by an httpx.ConnectError) are all seen.
_UNREACHED = frozenset({"ConnectError", "ConnectTimeout"})
_UNREACHED_MODULES = ("httpx", "httpx2", "httpcore", "httpcore2")


def unreached(exc: BaseException) -> bool:
    """Whether ``exc`` says the call never reached the world (connection refused, DNS
    failure, no connection in time): an outage, not an answer to record."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, (ConnectionRefusedError, socket.gaierror)):
            return True
        cls = type(current)
        if cls.__name__ in _UNREACHED and cls.__module__.split(".")[0] in _UNREACHED_MODULES:
            return True
        current = current.__cause__ or current.__context__
    return False


def error_from_json(obj: dict[str, Any]) -> Exception:
    """Rebuild the exception a cassette ``error`` object describes."""
    type_name = str(obj.get("type", "Exception"))
    module = str(obj.get("module", "builtins"))
    message = str(obj.get("message", ""))
    status = obj.get("status") if isinstance(obj.get("status"), int) else None
    retry_after = obj.get("retry_after")
    if not isinstance(retry_after, (int, float)):
        retry_after = None
    code = obj.get("code") if isinstance(obj.get("code"), str) else None
    cls = _find(module, type_name)
    if cls is not None and issubclass(cls, BoundaryError) and cls is not RecordedError:
        return cls(message, status=status, retry_after=retry_after, code=code)
    if cls is not None and issubclass(cls, Exception) and not issubclass(cls, RecordedError):
        try:
            return cls(message)
        except Exception:
            pass
    qualified = type_name if module == "builtins" else f"{module}.{type_name}"
    return RecordedError(qualified, message, status=status, retry_after=retry_after, code=code)


def _find(module: str, type_name: str) -> type | None:
    if module == "builtins":
        target: Any = builtins
    elif module.startswith("faultdeck"):
        target = _errors
    else:
        target = sys.modules.get(module)
        if target is None:
            return None
    for part in type_name.split("."):
        target = getattr(target, part, None)
        if target is None:
            return None
    return target if isinstance(target, type) else None


def number(value: Any) -> float | None:
    """``value`` as a float when it is a number (not a bool), else ``None``."""
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
