"""The ``faultdeck`` command. Exit codes: 0 ok, 1 a finding, 2 usage or input error."""

from __future__ import annotations

import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["demo"]:
        from .demo import main as demo

        return demo()
    print("usage: faultdeck demo", file=sys.stderr)
    return 2
