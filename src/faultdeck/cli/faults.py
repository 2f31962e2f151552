"""``faultdeck faults``: the catalogue of fault kinds, for people or machines.

Every kind of ``faultdeck.faults.KINDS``: where it applies, its parameters, what an
in-process call raises, and what a program sees at each surface (an SDK's API, a plain
HTTP client, an MCP client). The words are the catalogue's (``faults._catalogue``), which
docs/rehearsal.md's table is made from too.
"""

from __future__ import annotations

from typing import Any

import click
from rich.table import Table
from rich.text import Text

from ..faults._catalogue import catalogue, catalogue_markdown, param_text, where
from ._common import FORMAT_HELP, console, emit_json


@click.command()
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "markdown"]),
    default="text",
    help=f"{FORMAT_HELP} markdown: the tables of docs/rehearsal.md.",
)
def faults(fmt: str) -> None:
    """List every fault kind: where it applies, its parameters, what each SDK sees.

    For each kind: the calls it can happen at, its parameters (what each takes, its
    default), what an in-process call raises, and what a program sees at each surface it
    reaches: the openai SDK's Chat Completions and Responses, the anthropic SDK's
    Messages, a plain HTTP client, a tool called in-process, an MCP client. A plan file
    names a kind by its name ({"fault": "quota", "retry_after": 2}).

    \b
    faultdeck faults
    faultdeck faults --format json | jq '.[] | select(.name == "quota") | .shows'
    faultdeck faults --format markdown
    """
    if fmt == "markdown":
        click.echo(catalogue_markdown(), nl=False)
        return
    items = catalogue()
    if fmt == "json":
        emit_json(items)
        return
    out = console()
    with out.capture() as captured:
        out.print(faults_table(items))
    # A table pads each line to its width: piped, that is a line of spaces after each row.
    click.echo("\n".join(line.rstrip() for line in captured.get().splitlines()))


def faults_table(items: list[dict[str, Any]]) -> Table:
    """The catalogue as a two-column table: a kind's name and summary, then its facts and
    each surface's words, indented under it; long words wrap in their column."""
    table = Table(box=None, show_header=False, pad_edge=False, expand=False)
    table.add_column(no_wrap=True)
    table.add_column(overflow="fold")
    for index, item in enumerate(items):
        if index:
            table.add_row("", "")
        table.add_row(Text(item["name"], style="bold"), Text(item["summary"]))
        table.add_row("  applies to", Text(where(item)))
        for param in item["params"]:
            table.add_row(f"  {param['name']}", Text(param_text(param)))
        if not item["params"]:
            table.add_row("  parameters", "none")
        table.add_row("  in-process", Text(item["in_process"]))
        for surface, text in item["shows"].items():
            if surface != "tool":  # the in-process row says it
                table.add_row(f"  {surface}", Text(text))
    return table
