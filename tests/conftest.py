"""pytester runs inner pytest sessions for the plugin's tests.

CI runs this suite with ``CI`` set, which changes what the plugin does (a test
never records) and says (its hints add "locally:"). Every test starts with it
unset, as on a developer's machine; the tests about CI set it themselves.

The HTTP stacks are imported here, before any inner session: pytester takes back the
modules an in-process session imported, and an httpcore imported anew would no longer be
the one httpx maps its errors from (httpx and httpx2 import their httpcore lazily).
"""

import httpcore  # noqa: F401
import httpcore2  # noqa: F401
import httpx  # noqa: F401
import httpx2  # noqa: F401
import pytest

pytest_plugins = ["pytester"]


@pytest.fixture(autouse=True)
def _not_under_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
