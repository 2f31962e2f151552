"""``python -m faultdeck.demo``: record a small scripted agent run, replay it offline, show it.

Runs in a temporary folder on embedded defaults; nothing to start, nothing left behind.
"""

from __future__ import annotations

import functools
import sys
import tempfile
from pathlib import Path
from typing import Any, TextIO

import faultdeck as fd

DOCS = {
    "docs/retry-budget.md": "Retry at most twice; honour Retry-After; stop on quota.",
    "docs/timeouts.md": "Every call has a deadline; backoff is capped.",
}


class ScriptedModel:
    """A stand-in model: plans, reads the docs it found, then writes a patch."""

    def __init__(self) -> None:
        self.turns = 0

    def chat(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        self.turns += 1
        if self.turns == 1:
            return {"tool": "search_docs", "args": {"q": "retry budget", "top_k": 2}}
        if self.turns == 2:
            return {"tool": "read_file", "args": {"path": "docs/retry-budget.md"}}
        return {"answer": "patch: cap retries at 2 and honour Retry-After"}


def run_agent(deck: fd.Deck, model: ScriptedModel, question: str) -> str:
    """The loop under test: every model and tool call goes through the deck."""

    @deck.tool
    def search_docs(q: str, top_k: int) -> list[str]:
        words = q.split()
        return [p for p, text in DOCS.items() if any(w in text.lower() for w in words)][:top_k]

    @deck.tool
    def read_file(path: str) -> dict[str, Any]:
        return {"path": path, "text": DOCS[path]}

    tools = {"search_docs": search_docs, "read_file": read_file}
    messages: list[dict[str, Any]] = [{"role": "user", "content": question}]
    for step in range(5):
        asked = list(messages)
        reply: dict[str, Any] = deck.call(
            "model", "chat", {"messages": asked}, functools.partial(model.chat, asked), step=step
        )
        if "answer" in reply:
            return str(reply["answer"])
        result = tools[reply["tool"]](**reply["args"])
        messages = [*messages, {"role": "tool", "name": reply["tool"], "content": result}]
    return "gave up"


def main(out: TextIO = sys.stdout) -> int:
    """Record, replay, show, and diverge; return the exit code."""
    with tempfile.TemporaryDirectory(prefix="faultdeck-demo-") as folder:
        cassette = Path(folder) / "base.jsonl"
        question = "How should the loop retry?"
        print(f"1. record a run into {cassette.name}", file=out)
        model = ScriptedModel()
        with fd.Deck(cassette, mode="record") as deck:
            answer = run_agent(deck, model, question)
        print(f"   answer: {answer!r} ({model.turns} model calls made live)", file=out)

        print("\n2. the cassette", file=out)
        recording = fd.load(cassette)
        for entry in recording.entries:
            print(
                f"   seq {entry.seq:>2}  {entry.kind:<5} {entry.name:<12} {entry.key}  "
                f"{entry.ms:7.3f} ms",
                file=out,
            )
        print(f"   end: {recording.end}", file=out)

        print("\n3. replay it offline, 20 times", file=out)
        answers = set()
        for _ in range(20):
            offline = ScriptedModel()
            with fd.Deck(cassette, mode="replay") as deck:
                answers.add(run_agent(deck, offline, question))
            assert offline.turns == 0, "replay must not call the model"
        print(
            f"   20/20 replays gave the same answer, 0 live calls: {answers == {answer}}", file=out
        )
        print(f"   report: {deck.report()}", file=out)

        print("\n4. change the prompt and replay: the miss says where and what", file=out)
        try:
            with fd.Deck(cassette, mode="replay") as deck:
                run_agent(deck, ScriptedModel(), "How should the loop retry on 429?")
        except fd.ReplayMiss as miss:
            for line in str(miss).splitlines():
                print(f"   {line}", file=out)
        else:
            print("   (no miss: the demo is broken)", file=out)
            return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
