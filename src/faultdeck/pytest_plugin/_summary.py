"""The terminal summary's lines, and how they reach the controller under pytest-xdist.

After the run the plugin lists every deck that had misses, unused calls or repeats. Under
pytest-xdist the decks live in the workers while the summary is printed by the controller:
each worker puts its lines, as plain data (all that crosses execnet), into
``config.workeroutput`` when its session finishes, and the controller adds them to its own
in ``pytest_testnodedown``. ``Gather`` holds those two hooks; the plugin registers it only
when xdist is there, since without xdist ``pytest_testnodedown`` is not a hook at all.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from .._deck.report import Report

SUMMARY_KEY = pytest.StashKey[list["Off"]]()
"""The summary's lines, in the order the decks closed (a worker's after the one before)."""
WORKEROUTPUT_KEY = "faultdeck_summary"


@dataclass(frozen=True, slots=True)
class Off:
    """A deck the summary lists: it had misses, unused calls or repeats.

    Attributes:
        nodeid: the test's node id.
        missed: calls that had no answer.
        unused: recorded calls never asked for.
        repeated: keys asked more often than recorded.
        cassette: the deck's cassette.
    """

    nodeid: str
    missed: int
    unused: int
    repeated: int
    cassette: str

    @classmethod
    def of(cls, nodeid: str, report: Report) -> Off:
        """The line of the test ``nodeid`` whose deck reported ``report``."""
        return cls(
            nodeid, len(report.misses), len(report.unused), len(report.repeats), report.cassette
        )

    def line(self) -> str:
        """The line as the summary prints it."""
        return (
            f"{self.nodeid}: {self.missed} missed, {self.unused} unused, "
            f"{self.repeated} repeated ({self.cassette})"
        )

    def to_data(self) -> dict[str, Any]:
        """Plain data, as execnet carries it from a worker to the controller."""
        return {
            "nodeid": self.nodeid,
            "missed": self.missed,
            "unused": self.unused,
            "repeated": self.repeated,
            "cassette": self.cassette,
        }

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> Off:
        """The line ``to_data`` made."""
        return cls(
            str(data["nodeid"]),
            int(data["missed"]),
            int(data["unused"]),
            int(data["repeated"]),
            str(data["cassette"]),
        )


def is_worker(config: pytest.Config) -> bool:
    """Whether this session is an xdist worker (the controller prints the summary)."""
    return hasattr(config, "workeroutput")


class Gather:
    """The xdist hooks: a worker hands its summary on, the controller adds it to its own."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    # Last: after pytest has torn down what was left, so that every deck has closed.
    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self) -> None:
        """In a worker: put the summary in ``workeroutput``, which xdist sends on after this."""
        if is_worker(self.config):
            output: dict[str, Any] = self.config.workeroutput  # type: ignore[attr-defined]
            output[WORKEROUTPUT_KEY] = [off.to_data() for off in self.config.stash[SUMMARY_KEY]]

    def pytest_testnodedown(self, node: Any, error: object | None) -> None:
        """In the controller: add a finished worker's lines. A worker that crashed sent none;
        its tests are reported as crashed by xdist."""
        output: dict[str, Any] = getattr(node, "workeroutput", {})
        lines = [Off.from_data(data) for data in output.get(WORKEROUTPUT_KEY, [])]
        self.config.stash[SUMMARY_KEY].extend(lines)
