"""Hints in the caller's terms: how a message tells its reader to record, append or resume.

faultdeck is driven from Python (``mode="record"``), from the command line (``faultdeck
record CASSETTE -- CMD``) and from pytest (``--faultdeck-mode=record``), and a hint names
the way its reader is running it. The edges say which: the command line for itself and,
through ``FAULTDECK_TERMS``, for the program it runs; the pytest plugin around each test.
Python's terms hold everywhere else.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import NamedTuple

ENV = "FAULTDECK_TERMS"
"""The variable the command line passes its terms to the program in (JSON)."""
CASSETTE = "{cassette}"
"""Stands for the cassette in terms that do not know it yet (``Terms.about`` fills it)."""


class Terms(NamedTuple):
    """How a hint says each thing a user may do next.

    Attributes:
        record: how to record the cassette again, from the start.
        append: how to record only the calls the cassette lacks.
        resume: how to finish a recording that was interrupted.
    """

    record: str
    append: str
    resume: str

    def about(self, cassette: str) -> Terms:
        """The terms with ``{cassette}`` (in terms that name no cassette yet) filled in."""
        name = shlex.quote(cassette)
        return Terms(*(text.replace(CASSETTE, name) for text in self))

    def to_env(self) -> str:
        """The terms as ``FAULTDECK_TERMS`` carries them."""
        import orjson

        return orjson.dumps(self._asdict()).decode()


PYTHON = Terms(record='mode="record"', append='mode="append"', resume='mode="resume"')

_current = PYTHON


def current() -> Terms:
    """The terms hints are written in now."""
    return _current


def use(terms: Terms) -> None:
    """Write hints in ``terms`` from now on, in this process (a program the CLI runs)."""
    global _current
    _current = terms


@contextmanager
def speaking(terms: Terms) -> Iterator[None]:
    """Write hints in ``terms`` inside the block (one command, one test)."""
    before = current()
    use(terms)
    try:
        yield
    finally:
        use(before)


def from_env(env: Mapping[str, str]) -> Terms | None:
    """The terms ``FAULTDECK_TERMS`` names, or ``None`` when it is unset or unreadable."""
    raw = env.get(ENV)
    if not raw:
        return None
    import orjson

    try:
        data = orjson.loads(raw)
        return Terms(record=data["record"], append=data["append"], resume=data["resume"])
    except (orjson.JSONDecodeError, KeyError, TypeError):
        return None


def command_line(cassette: str | None, command: Sequence[str]) -> Terms:
    """The terms of ``faultdeck``, run on ``cassette`` (``None``: the one a message names)
    with the program ``command``."""
    name = CASSETTE if cassette is None else shlex.quote(cassette)
    tail = f"{name} -- {shlex.join(command) if command else 'CMD…'}"
    return Terms(
        record=f"faultdeck record {tail}",
        append=f"faultdeck record --mode append {tail}",
        resume=f"faultdeck resume {tail}",
    )


def pytest_run(nodeid: str, *, ci: bool) -> Terms:
    """The terms of one pytest test; with ``CI`` set, a recording is made locally."""
    test = shlex.quote(nodeid)
    where = " (locally: with CI set a test never records)" if ci else ""
    return Terms(
        record=f"pytest {test} --faultdeck-mode=record{where}",
        append=f"pytest {test} --faultdeck-mode=append",  # said after ``record``, note once
        resume=f"pytest {test} --faultdeck-mode=resume{where}",
    )
