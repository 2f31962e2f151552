"""``faultdeck extract``: one recorded call frozen as a fixture for a unit test."""

from __future__ import annotations

import os

import click
import orjson

from .._base import config as _config
from .._cassette.extract import extract as extract_cassette
from .._cassette.extract import extract_json, write_new
from .._cassette.store import is_url
from .._keys.redact import Redactor


def default_path(cassette: str, seq: int, fmt: str) -> str:
    """``runs/base.jsonl`` → ``runs/base-seq4.jsonl`` (``.json`` for ``--format json``)."""
    name = cassette.rstrip("/").rpartition("/")[2] if is_url(cassette) else cassette
    root, _ = os.path.splitext(name)
    return f"{root}-seq{seq}.{'json' if fmt == 'json' else 'jsonl'}"


@click.command()
@click.argument("cassette", type=click.Path(dir_okay=False))
@click.option("--seq", type=click.IntRange(min=1), required=True, help="The call to take.")
@click.option(
    "--line",
    type=click.IntRange(min=1),
    help="The line to take when several have that seq (calls an append run added).",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, allow_dash=True),
    help="Where to write it (- for stdout); default <stem>-seq<N>.jsonl beside the cassette.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["cassette", "json"]),
    default="cassette",
    help='cassette: a one-call cassette that replays; json: {"kind", "name", "args", "out"}.',
)
@click.option("--force", is_flag=True, help="Replace the output file if it exists.")
def extract(
    cassette: str, seq: int, line: int | None, output: str | None, fmt: str, force: bool
) -> None:
    """Write one recorded call alone, as a one-call cassette (or plain JSON).

    The one-call cassette keeps the header (noting where it came from), the call's line as
    recorded and an end line, so a unit test replays it:
    @pytest.mark.faultdeck(cassette="base-seq4.jsonl"). An existing file is never
    replaced without --force.

    \b
    faultdeck extract runs/base.jsonl --seq 4
    faultdeck extract runs/base.jsonl --seq 4 --format json -o tests/fixtures/patch.json
    faultdeck extract runs/base.jsonl --seq 5 --line 8 -o -
    """
    call = extract_json(cassette, seq, line=line)
    if fmt == "json":
        data = orjson.dumps(call, option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE)
    else:
        data = extract_cassette(cassette, seq, line=line)
    redactor = Redactor(extra_patterns=_config.load_settings().redact_patterns)
    found = redactor.scan_text(data.decode("utf-8", errors="replace"))
    if found:
        raise click.ClickException(
            f"{cassette}: seq {seq} holds a credential-shaped string ({', '.join(found)}); "
            "nothing was written; rotate it and re-record (faultdeck scan shows where)"
        )
    target = output or default_path(cassette, seq, fmt)
    if target == "-":
        click.echo(data.decode("utf-8"), nl=False)
        return
    try:
        write_new(target, data, force=force)
    except FileExistsError:
        raise click.ClickException(
            f"{target} exists already; pass --force to replace it, or -o another path"
        ) from None
    click.echo(f"wrote {target}: seq {seq} of {cassette}, {call['kind']} {call['name']}")
