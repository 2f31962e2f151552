"""``faultdeck diff``: the call paths of two cassettes side by side, from the fork point
when one forked from the other."""

from __future__ import annotations

from pathlib import Path

import click
import orjson

from .._base import config as _config
from .._cassette.reader import load
from .._diff.align import diff_recordings
from .._diff.fork import forked
from .._diff.render import diff_html, diff_json, diff_text
from ._common import FORMAT_HELP, Finding, console


@click.command()
@click.argument("a", type=click.Path(dir_okay=False))
@click.argument("b", type=click.Path(dir_okay=False))
@click.option("--responses", is_flag=True, help="Compare outputs too, not only args.")
@click.option(
    "--ignore", multiple=True, metavar="FIELD", help="A field never compared (repeatable)."
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "html"]),
    default="text",
    help=f"{FORMAT_HELP[:-1]}; html: one self-contained page (with -o FILE).",
)
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write to a file.")
def diff(
    a: str, b: str, responses: bool, ignore: tuple[str, ...], fmt: str, output: str | None
) -> None:
    """Diff the call paths of two cassettes; exit 1 when they diverge.

    When one forked from the other (faultdeck fork), the calls up to the fork point are
    shared: the diff says so and compares from there.

    \b
    faultdeck diff runs/base.jsonl runs/new.jsonl
    faultdeck diff runs/base.jsonl runs/new.jsonl --responses --ignore trace_id
    faultdeck diff runs/base.jsonl runs/new.jsonl --format html -o diff.html
    """
    rec_a, rec_b = load(a), load(b)
    fork = forked(a, rec_a, b, rec_b, root=_config.load_settings().root)
    result = diff_recordings(rec_a, rec_b, responses=responses, ignore=ignore, forked=fork)
    if fmt == "json":
        text = orjson.dumps(diff_json(result), option=orjson.OPT_INDENT_2).decode()
    elif fmt == "html":
        text = diff_html(result)
    else:
        text = diff_text(result, width=max(60, console().width))
    if output:
        Path(output).write_text(text, "utf-8")
        click.echo(f"wrote {output}: {result.first_divergence()}")
    else:
        click.echo(text)
    if not result.identical:
        raise Finding
