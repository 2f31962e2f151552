"""``faultdeck completion``: click's shell completion script for ``faultdeck``."""

from __future__ import annotations

import click
from click.shell_completion import get_completion_class

from ._common import cli

SHELLS = ("bash", "zsh", "fish")


@click.command()
@click.argument("shell", type=click.Choice(SHELLS))
def completion(shell: str) -> None:
    """Print the shell completion script for SHELL (click's own, for `faultdeck`).

    \b
    eval "$(faultdeck completion bash)"     # in ~/.bashrc
    eval "$(faultdeck completion zsh)"      # in ~/.zshrc
    faultdeck completion fish > ~/.config/fish/completions/faultdeck.fish
    """
    complete = get_completion_class(shell)
    if complete is None:  # click has a class for each of SHELLS
        raise click.UsageError(f"no completion for {shell}")
    script = complete(cli, {}, "faultdeck", "_FAULTDECK_COMPLETE").source()
    click.echo(script)
