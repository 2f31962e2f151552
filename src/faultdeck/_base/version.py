"""faultdeck's version (``faultdeck.__version__``, ``faultdeck --version``): the one in
pyproject.toml."""

VERSION = "0.1.0"
