"""pytester runs inner pytest sessions for the plugin's tests."""

pytest_plugins = ["pytester"]
