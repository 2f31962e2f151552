"""faultdeck's version (``faultdeck.__version__``, ``faultdeck --version``): the one in
pyproject.toml."""

VERSION = "0.1.0"

VERSION_LINE = f"faultdeck, version {VERSION}"
"""What ``faultdeck --version`` prints, whether the command line answers it before loading
click (``faultdeck --version`` alone) or click does (after another option)."""
