"""One error tree for faultdeck.

Exception
└── FaultdeckError                 anything faultdeck itself refuses
    ├── ConfigError                a bad mode, option, setting or fault plan
    ├── ArgumentError              args that are not JSON (names the field)
    ├── CassetteError              a cassette cannot be used (names file:line)
    │   ├── CassetteNotFound
    │   ├── CassetteCorrupt
    │   ├── CassetteVersionError
    │   ├── CassetteLocked
    │   └── CassetteWriteError     the disk refused a write (full, size limit, permissions)
    ├── SideEffectBlocked          a side-effecting tool that may not run here
    ├── CallInDoubt                resume: a side effect in flight at a kill may have run
    └── BoundaryError              what a boundary raises; loops catch these
        ├── QuotaExhausted
        ├── TransientError
        ├── BadToolCall
        └── RecordedError          a recorded error whose type is not loaded
BaseException
├── ReplayMiss                     a call with no recorded answer
└── ProcessKilled                  the crash fault: the process "dies" here

ReplayMiss is a BaseException, like pytest's own ``Failed``: it says the test harness no
longer matches the program, which no ``except Exception`` in the program (or in an SDK's
retry loop, which would retry it and report a "connection error") may swallow.

Warning
└── FaultdeckWarning
    ├── HarnessChanged             replaying under another git SHA
    ├── StaleCassette              last committed longer ago than max_age
    └── CassetteWarning            an interrupted run, a skipped truncated line
"""

from __future__ import annotations

import os
import sys
import warnings
from typing import Any


class FaultdeckError(Exception):
    """Base class of every error faultdeck raises on its own account."""


class ConfigError(FaultdeckError):
    """A mode, option, configuration value or fault plan that faultdeck cannot use."""


class ArgumentError(FaultdeckError, TypeError):
    """A boundary call's args (or a recorded output) hold a value that is not JSON.

    Args:
        path: where the value sits, like ``args.messages[2].content``.
        detail: what is wrong with it.
    """

    def __init__(self, path: str, detail: str) -> None:
        self.path = path
        self.detail = detail
        super().__init__(f"{path}: {detail}")


class CassetteError(FaultdeckError):
    """A cassette that cannot be read or written.

    Args:
        path: the cassette file.
        line: the 1-based line number, or ``None`` when the whole file is at fault.
        problem: what is wrong.
        hint: what to do about it.
    """

    def __init__(self, path: str, line: int | None, problem: str, hint: str) -> None:
        self.path = path
        self.line = line
        self.problem = problem
        self.hint = hint
        where = f"{path}:{line}" if line is not None else path
        super().__init__(f"{where}: {problem}; {hint}")


class CassetteNotFound(CassetteError):
    """The cassette file does not exist."""


class CassetteCorrupt(CassetteError):
    """A line of the cassette is not valid format v1."""


class CassetteVersionError(CassetteError):
    """The cassette was written in a format version this faultdeck does not read."""


class CassetteLocked(CassetteError):
    """Another writer holds the cassette's lock file."""


class CassetteWriteError(CassetteError):
    """The cassette could not be written (disk full, file size limit, permission denied).

    The deck stops writing and lets go of its lock; the calls made so far stay in its
    report, and a cassette it was replacing is left as it was.
    """


class ReplayMiss(BaseException):
    """A call that the cassette has no answer for.

    A ``BaseException``: ``except Exception`` in a loop or an SDK does not catch it.

    Attributes:
        seq: the call's position in this run (1-based).
        kind: ``model``, ``tool``, ``env`` or ``http``.
        name: the call's name.
        key: the call's key.
        agreed: how many calls of this run were answered from the cassette before this one.
        nearest: the recorded call of the same kind and name that looks most alike, as
            ``{"seq": …, "key": …, "args": …}``, or ``None`` when there is none.
        diff: field-by-field differences from ``nearest``'s args, as
            ``(path, recorded, asked)`` triples; missing sides are the string ``"<absent>"``.
    """

    def __init__(
        self,
        message: str,
        *,
        seq: int,
        kind: str,
        name: str,
        key: str,
        agreed: int,
        nearest: dict[str, Any] | None,
        diff: tuple[tuple[str, Any, Any], ...],
    ) -> None:
        self.seq = seq
        self.kind = kind
        self.name = name
        self.key = key
        self.agreed = agreed
        self.nearest = nearest
        self.diff = diff
        super().__init__(message)


class SideEffectBlocked(FaultdeckError):
    """A side-effecting tool was about to run where it must not."""


class CallInDoubt(FaultdeckError):
    """``resume`` met a side-effecting call that was in flight when the run was killed.

    It may have run (its intent was written) but its answer never was, so running it again
    could do it twice. It runs again only when the tool said how to resolve it:
    ``on_in_doubt="rerun"`` or ``"skip"``, or an idempotency key it receives.

    Attributes:
        seq: the call's seq in this run.
        kind: its kind.
        name: its name.
        key: its key.
        line: the line of its intent in the cassette.
    """

    def __init__(
        self, message: str, *, seq: int, kind: str, name: str, key: str, line: int
    ) -> None:
        self.seq = seq
        self.kind = kind
        self.name = name
        self.key = key
        self.line = line
        super().__init__(message)


class BoundaryError(FaultdeckError):
    """Something a boundary raised that an agent loop is expected to handle.

    Args:
        message: what happened.
        status: the HTTP status, where there is one.
        retry_after: seconds the server asked the caller to wait, where it said.
        code: a provider's error code, such as ``insufficient_quota``.
    """

    def __init__(
        self,
        message: str = "",
        *,
        status: int | None = None,
        retry_after: float | None = None,
        code: str | None = None,
    ) -> None:
        self.status = status
        self.retry_after = retry_after
        self.code = code
        super().__init__(message)


class QuotaExhausted(BoundaryError):
    """A quota or rate limit said no (HTTP 429)."""


class TransientError(BoundaryError):
    """A timeout or a server error that may pass (HTTP 5xx, 529)."""


class BadToolCall(BoundaryError):
    """The model's tool call broke the tool's JSON schema."""


class RecordedError(BoundaryError):
    """A recorded error whose original exception type is not loaded in this process.

    Attributes:
        type_name: the original type's qualified name, such as ``openai.RateLimitError``.
    """

    def __init__(
        self,
        type_name: str,
        message: str = "",
        *,
        status: int | None = None,
        retry_after: float | None = None,
        code: str | None = None,
    ) -> None:
        self.type_name = type_name
        super().__init__(
            f"{type_name}: {message}", status=status, retry_after=retry_after, code=code
        )


class ProcessKilled(BaseException):
    """The crash fault: the process dies at this call.

    A ``BaseException`` so that ``except Exception`` in a loop does not swallow it, just
    as nothing catches a real SIGKILL.
    """


class FaultdeckWarning(UserWarning):
    """Base class of faultdeck's warnings."""


class HarnessChanged(FaultdeckWarning):
    """The cassette was recorded under another git commit than the one replaying it."""


class SchemaChanged(FaultdeckWarning):
    """A tool's live schema differs from the one it was recorded under: its calls' keys
    change, so they miss their recorded answers until they are recorded again."""


class StaleCassette(FaultdeckWarning):
    """A cassette was last committed longer ago than the project's ``max_age``: the world it
    recorded may have moved (``faultdeck drift`` checks it against a live run)."""


class CassetteWarning(FaultdeckWarning):
    """A cassette is usable but not whole: an interrupted run or a skipped truncated line."""


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def in_faultdeck(filename: str) -> bool:
    """Whether ``filename`` is one of faultdeck's own modules (a frame to hide from users)."""
    return filename.startswith(_PACKAGE)


def warn(message: str, category: type[FaultdeckWarning]) -> None:
    """Warn, attributed to the first caller outside faultdeck (whichever path led here:
    ``with Deck(...)``, the first ``deck.call``, a tool, the HTTP transport, ``fd.load``)."""
    level, frame = 2, sys._getframe(1)  # level 2 is the frame that called warn()
    while frame is not None and in_faultdeck(frame.f_code.co_filename):
        level, frame = level + 1, frame.f_back  # type: ignore[assignment]
    warnings.warn(message, category, stacklevel=level)
