"""``faultdeck init``: set a project up.

It adds what a project needs and never changes what it has: a commented
``[tool.faultdeck]`` section appended to ``pyproject.toml`` (or a new file holding only it),
and a ``conftest.py`` when there is none (else the snippet is printed, to paste). Every
check runs before the first write, so bad input writes nothing.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

import click

SECTION = """\
[tool.faultdeck]
# Every key faultdeck reads, commented out at its default: uncomment a line to change it.
# cassette_dir = "cassettes"  # the plugin's cassettes under this root folder (unset: beside tests)
# mode = "replay"             # a Deck's mode when none is given (record, once, append, resume, off)
# match = "keyed"             # or "strict": each call must come at its recorded position
# volatile = []               # never in a key, stored as placeholders, e.g. ["trace_id"]
# strip_headers = []          # header or field names removed before hashing, never stored
# public_env = []             # environment variables stored in clear (the others as hashes)
# durability = "flush"        # or "fsync": each line on the disk before its call returns
# redact_patterns = {}        # more secrets to mask: {internal_token = "itk_[A-Za-z0-9]{24}"}
# normalizers = {}            # per-call rules: {search_docs = "myproject.testing:drop_trace_id"}
# max_age = "90d"             # warn on cassettes last committed longer ago (unset: never)
# intercept = false           # pytest: a test's deck answers the HTTP clients its code makes
# tools = {}                  # tools that reach a service: {search_web = { remote = true }}
"""
"""The section ``init`` appends to pyproject.toml; commented out, so the defaults hold."""

CONFTEST = '''\
"""pytest set-up for faultdeck.

Installing faultdeck registers its pytest plugin: a test that asks for the `deck` fixture
gets a deck on cassettes/<module>/<test name>.jsonl beside the test file.
`pytest --faultdeck-mode=record` records; plain `pytest` replays, offline.
"""

import pytest


@pytest.fixture
def faultdeck_config():
    """The decks of the tests in this folder and below; a marker or the command line wins."""
    return {
        # "mode": "once",             # record a test that has no cassette yet, else replay
        # "strict": True,             # fail a test that leaves recorded calls unused
        # "faults": "plans/ci.toml",  # a fault plan injected into every test's deck
        # "clock": "system",          # real waits instead of the virtual clock
    }
'''
"""The conftest.py ``init`` writes when the project has none."""

NEXT = """\
next:
  faultdeck record runs/base.jsonl -- python agent.py        record a run (agent.py unchanged)
  pytest --block-network                                     replay it offline (the deck fixture)
  faultdeck rehearse runs/base.jsonl -- python agent.py      every fault at every call, judged"""
"""The next three commands: record, replay in pytest, rehearse."""


@click.command()
@click.option(
    "--dir",
    "folder",
    type=click.Path(exists=True, file_okay=False),
    default=".",
    show_default=True,
    help="The project folder (where pyproject.toml is or goes).",
)
def init(folder: str) -> None:
    """Add a commented [tool.faultdeck] section and a conftest.py to a project.

    The section is appended to pyproject.toml (created when there is none); a pyproject.toml
    that has [tool.faultdeck] already is left untouched. An existing conftest.py is never
    changed: the snippet is printed to paste instead.

    \b
    faultdeck init
    faultdeck init --dir path/to/project
    """
    root = Path(folder)
    pyproject = root / "pyproject.toml"
    conftest = root / "conftest.py"
    existing = read_pyproject(pyproject)
    appended = None if existing is None else with_section(pyproject, existing)
    if existing is None:
        with open(pyproject, "x", encoding="utf-8", newline="") as fh:
            fh.write(SECTION)
        click.echo(f"created {pyproject} with [tool.faultdeck] (every key at its default)")
    elif appended is None:
        click.echo(f"{pyproject} has [tool.faultdeck] already: left untouched")
    else:
        append(pyproject, existing, appended)
        click.echo(f"added [tool.faultdeck] to {pyproject} (every key at its default)")
    if os.path.lexists(conftest):
        click.echo(f"{conftest} exists: left untouched; to configure the plugin, paste this in:")
        click.echo("\n" + CONFTEST[CONFTEST.index("import pytest") :])
    else:
        with open(conftest, "x", encoding="utf-8") as fh:
            fh.write(CONFTEST)
        click.echo(f"wrote {conftest} (the faultdeck_config fixture)")
    click.echo(NEXT)


def read_pyproject(path: Path) -> bytes | None:
    """The file's bytes (``None`` when there is none), once they are known to be TOML."""
    if not os.path.lexists(path):
        return None
    if not path.is_file():
        raise click.ClickException(f"{path} is not a file; move it aside, then run init again")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise click.ClickException(
            f"{path}: cannot read it ({exc.strerror}); fix its permissions, then run init again"
        ) from None
    parse(path, data, "is not valid TOML")
    return data


def parse(path: Path, data: bytes, what: str) -> dict[str, object]:
    """``data`` as TOML, or a one-line error naming ``path``."""
    try:
        return tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise click.ClickException(f"{path} {what} ({exc}); fix it, then run init again") from None


def with_section(path: Path, data: bytes) -> bytes | None:
    """``data`` with the section appended, or ``None`` when it has ``[tool.faultdeck]``."""
    tool = parse(path, data, "is not valid TOML").get("tool")
    if isinstance(tool, dict) and "faultdeck" in tool:
        return None
    newline = b"\r\n" if b"\r\n" in data else b"\n"
    section = SECTION.encode("utf-8").replace(b"\n", newline)
    gap = b"" if not data.strip() else newline if data.endswith(newline) else newline * 2
    result = data + gap + section
    # A file whose `tool` is an inline table cannot take a [tool.faultdeck] header.
    parse(path, result, "would not be valid TOML with [tool.faultdeck] appended; add it by hand")
    return result


def append(path: Path, before: bytes, after: bytes) -> None:
    """Append what ``after`` adds to ``before``, unless the file changed since it was read."""
    with open(path, "r+b") as fh:
        if fh.read() != before:
            raise click.ClickException(f"{path} changed while init ran; run init again")
        fh.write(after[len(before) :])
