"""Starting the command line: ``--version`` and ``--help`` answer without importing the
commands (or, for ``--version``, click), and every command listed is there when named."""

from __future__ import annotations

import subprocess
import sys
from importlib import metadata

import pytest

from faultdeck.cli._common import COMMANDS
from tests.support import ROOT


def python(code: str) -> list[str]:
    """What ``code`` printed, run in a fresh Python, line by line."""
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    return done.stdout.splitlines()


LOADED = (
    "import sys; print(sorted(m for m in sys.modules if m == 'click' or m == 'rich' "
    "or m.startswith(('faultdeck.cli.', 'faultdeck._deck', 'faultdeck.demo'))))"
)


def test_version_is_the_distributions_and_needs_no_click() -> None:
    out = python(f"from faultdeck.cli import main; main(['--version']); {LOADED}")
    assert out == [f"faultdeck, version {metadata.version('faultdeck')}", "[]"]


def test_version_after_another_option_says_the_same() -> None:
    out = python("from faultdeck.cli import main; main(['--debug', '--version'])")
    assert out == [f"faultdeck, version {metadata.version('faultdeck')}"]


@pytest.mark.parametrize("args", [["--help"], []], ids=["--help", "no arguments"])
def test_the_listing_names_every_command_and_imports_none(args: list[str]) -> None:
    out = python(f"from faultdeck.cli import main; main({args!r}); {LOADED}")
    assert out[-1] == "['click', 'faultdeck.cli._common']"
    listed = {line.split()[0] for line in out if line.startswith("  ") and line[2] != " "}
    assert set(COMMANDS) <= listed
    for name, (_, summary) in COMMANDS.items():
        assert any(line.split(maxsplit=1) == [name, summary] for line in out), name


def test_every_listed_command_is_there_when_named() -> None:
    out = python(
        "import click; from faultdeck.cli import cli; ctx = click.Context(cli)\n"
        "for name in cli.list_commands(ctx):\n"
        "    command = cli.get_command(ctx, name)\n"
        "    print(name, type(command).__name__, bool(command.help))"
    )
    assert [line.split()[0] for line in out] == sorted(COMMANDS)
    assert all(line.split()[1] in {"Command", "Group", "BeforeTheProgram"} for line in out)
    assert all(line.endswith("True") for line in out)


def test_a_command_named_is_the_only_one_imported() -> None:
    out = python(
        "from faultdeck.cli import main; import sys; "
        "print(main(['show', 'missing.jsonl'])); "
        "print(sorted(m for m in sys.modules if m.startswith('faultdeck.cli.')))"
    )
    assert out[-2:] == ["2", "['faultdeck.cli._common', 'faultdeck.cli.show']"]
