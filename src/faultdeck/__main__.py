"""``python -m faultdeck``: the ``faultdeck`` command."""

from .cli import entry

entry()
