"""``faultdeck fake``: a scripted model on 127.0.0.1, so an agent runs with no API key."""

from __future__ import annotations

import contextlib
import signal
import sys

import click

from ._common import cannot_listen, listening

DEFAULT_PORT = 8767


@click.command()
@click.option(
    "--script",
    type=click.Path(dir_okay=False),
    help='A JSON list of turns: {"text": "…"} or {"tool_calls": [{"name", "arguments"}]}.',
)
@listening(DEFAULT_PORT)
def fake(script: str | None, host: str, port: int) -> None:
    """Serve a fake model that answers from a script: no API key, no network.

    It speaks OpenAI's Chat Completions and Responses and Anthropic's Messages, whole or
    streamed, so the openai and anthropic SDKs (and what is built on them) run against it
    unchanged once their base URL points at it. A request's answer is the script's turn
    its conversation has reached (how many model turns it already holds); past the last
    turn, the last answers again. A text may say {question} (the user's last words) and
    {tool_result} (the last tool result). Without --script each question gets "A
    scripted answer to: <question>". Ctrl-C stops it.

    \b
    faultdeck fake &
    export OPENAI_BASE_URL=http://127.0.0.1:8767/v1 OPENAI_API_KEY=fake-key
    faultdeck record runs/base.jsonl -- python agent.py
    faultdeck fake --script turns.json --port 0
    """
    from ..fake import FakeModel

    try:
        model = FakeModel(script, host=host, port=port)
    except OSError as exc:
        raise cannot_listen(host, port, exc) from None
    which = f"script {script}" if script else 'each question gets "A scripted answer to: …"'
    click.echo(f"faultdeck: a fake model at {model.url} ({which}); Ctrl-C stops it")
    click.echo(f"  export OPENAI_BASE_URL={model.openai_base_url} OPENAI_API_KEY=fake-key")
    click.echo(f"  export ANTHROPIC_BASE_URL={model.url} ANTHROPIC_API_KEY=fake-key")
    sys.stdout.flush()
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # a stop is a clean stop
    with contextlib.suppress(KeyboardInterrupt):
        model.serve_forever()
