"""faultdeck's bootstrap, run by Python at start-up for a program the command line runs.

``faultdeck record|replay|rehearse… -- python agent.py`` puts this folder first on the
program's ``PYTHONPATH`` with ``FAULTDECK_BOOTSTRAP=1`` set, as ``opentelemetry-instrument``
and coverage's ``COVERAGE_PROCESS_START`` do: the program gets its deck, and its HTTP
clients route through it, with no change to its code. A ``sitecustomize`` this one hides is
run after it.
"""

import os
import sys


def _start() -> None:
    try:
        from faultdeck._bootstrap import start
    except Exception as exc:  # the program still runs: say what and what to do, once
        sys.stderr.write(
            f"faultdeck: the bootstrap cannot import faultdeck in {sys.executable} ({exc}); "
            "the program runs without its deck: install faultdeck in the program's Python, "
            "or run the program with the Python faultdeck is installed in\n"
        )
        return
    start()


def _chain() -> None:
    """Run the ``sitecustomize`` that this one hides on the path, if there is one."""
    import importlib.machinery
    import importlib.util

    here = os.path.dirname(os.path.abspath(__file__))
    path = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is not None and spec.loader is not None:
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)


if os.environ.get("FAULTDECK_BOOTSTRAP") == "1":
    _start()
_chain()
