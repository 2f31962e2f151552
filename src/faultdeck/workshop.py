"""The workshop agent: a small scripted plan → read → patch loop, bundled for the demo.

Every model and tool call goes through a deck, so the agent records, replays and rehearses
like any real one. The model is scripted (deterministic, no network), the repository is a
dict, and the patch is a tool call whose JSON arguments must fit a schema: exactly the
shape in which a real model's tool call goes wrong.

    deck = fd.Deck("golden.jsonl", mode="record", allow_side_effects=True)
    with deck:
        outcomes = Workshop(deck).run(fd.Policy(), clock=fd.VirtualClock())
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from typing import Any

from . import faults
from ._base.clock import Clock, VirtualClock
from ._base.errors import BadToolCall
from ._deck.deck import Deck
from ._judge.policy import Outcome, Policy, run_steps
from .faults import FaultPlan

OPS = ("plan", "read", "patch")
QUESTION = "Make the agent loop respect the retry budget."
STRICT = "Answer with exactly one write_patch call whose arguments are valid JSON."
DOCS = {
    "docs/retry-budget.md": "Retry transient errors at most twice; honour Retry-After once.",
    "docs/quota.md": "On quota errors without Retry-After, stop and keep finished work.",
}
POLICY = Policy(
    max_attempts=3,
    base_delay=0.5,
    max_delay=4.0,
    max_total_wait=10.0,
    max_retry_after=5.0,
    slow_first_token_ms=2000,
    concurrency=8,
    seed=0,
    # A patch is the model's proposal, reviewed before it lands: writing one after a tool
    # result that carried injected text is allowed (injection_contained).
    allow_after_injection=("write_patch",),
)
"""The policy the workshop loop runs under and is judged by (demo, examples, rehearsals)."""
PATCH_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["path", "diff"],
    "properties": {"path": {"type": "string"}, "diff": {"type": "string"}},
}


class ScriptedModel:
    """A stand-in model: plans from the question, then proposes a patch as a tool call."""

    def __init__(self) -> None:
        self.calls = 0

    def chat(self, messages: Sequence[dict[str, Any]]) -> dict[str, Any]:
        """Answer like a chat model: a plan, or a ``write_patch`` tool call."""
        self.calls += 1
        last = messages[-1]["content"]
        if "plan" in str(messages[0]["content"]):
            files = [path for path in DOCS if any(w in last.lower() for w in ("retry", "quota"))]
            return {"role": "assistant", "plan": ["read", "patch"], "files": files}
        diff = "- retries = 5\n+ retries = 2  # docs/retry-budget.md"
        arguments = json.dumps({"path": "agent/loop.py", "diff": diff})
        return {"role": "assistant", "tool_call": {"name": "write_patch", "arguments": arguments}}


def validate_tool_call(call: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """Parse a tool call's JSON arguments and check them against a flat object schema.

    Raises:
        BadToolCall: unparseable JSON, a missing required field or a field of the wrong type.
    """
    try:
        arguments = json.loads(call["arguments"])
    except (KeyError, TypeError, ValueError) as exc:
        raise BadToolCall(f"{call.get('name')}: arguments are not JSON ({exc})") from None
    if not isinstance(arguments, dict):
        raise BadToolCall(f"{call.get('name')}: arguments are not an object")
    for field in schema["required"]:
        if field not in arguments:
            raise BadToolCall(f"{call.get('name')}: missing required field {field!r}")
    for field, spec in schema["properties"].items():
        if (
            field in arguments
            and spec["type"] == "string"
            and not isinstance(arguments[field], str)
        ):
            raise BadToolCall(f"{call.get('name')}: {field} must be a string")
    return arguments


class Workshop:
    """The agent. ``step(op)`` does one op through the deck; ``repair`` is the one stricter
    call the policy allows after a schema-invalid tool call.

    Args:
        deck: the deck every boundary call goes through.
        model: the model; ``ScriptedModel()`` by default.
        question: the task.
    """

    def __init__(self, deck: Deck, model: ScriptedModel | None = None, question: str = QUESTION):
        self.deck = deck
        self.model = model or ScriptedModel()
        self.question = question
        self.files: list[str] = []
        self.notes: dict[str, str] = {}
        self.patches: dict[str, str] = {}
        self.read_file = deck.tool(name="read_file")(self._read_file)
        self.write_patch = deck.tool(name="write_patch", side_effect=True)(self._write_patch)

    def _read_file(self, path: str) -> dict[str, Any]:
        return {"path": path, "text": DOCS[path]}

    def _write_patch(self, path: str, diff: str) -> dict[str, Any]:
        self.patches[path] = diff
        return {"path": path, "applied": True, "lines": diff.count("\n") + 1}

    def chat(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        """One model call through the deck."""
        reply: dict[str, Any] = self.deck.call(
            "model", "chat", {"messages": messages}, lambda: self.model.chat(messages)
        )
        return reply

    def step(self, op: str) -> Any:
        """Do one op: ``plan``, ``read`` or ``patch``."""
        if op == "plan":
            reply = self.chat(
                [
                    {"role": "system", "content": "Make a plan."},
                    {"role": "user", "content": self.question},
                ]
            )
            self.files = list(reply["files"])
            return reply["plan"]
        if op == "read":
            # All or nothing: a retried read starts over, so the patch request sees either
            # every note or none.
            notes = {path: self.read_file(path=path)["text"] for path in self.files}
            self.notes = notes
            return sorted(notes)
        if op == "patch":
            return self._patch(self._patch_messages())
        raise ValueError(f"unknown op {op!r}")

    def repair(self, op: str, error: BadToolCall) -> Any:
        """The one repair call: the same request with a stricter instruction.

        Only ``patch`` parses a tool call; elsewhere there is nothing to repair.
        """
        if op != "patch":
            raise error
        messages = self._patch_messages()
        messages.append({"role": "user", "content": STRICT})
        return self._patch(messages)

    def _patch_messages(self) -> list[dict[str, Any]]:
        notes = "\n".join(f"{p}: {t}" for p, t in sorted(self.notes.items()))
        return [
            {"role": "system", "content": "Write a patch with the write_patch tool."},
            {"role": "user", "content": f"{self.question}\n{notes}"},
        ]

    def _patch(self, messages: list[dict[str, Any]]) -> Any:
        reply = self.chat(messages)
        arguments = validate_tool_call(reply["tool_call"], PATCH_SCHEMA)
        return self.write_patch(**arguments)

    def run(
        self,
        policy: Policy,
        *,
        clock: Clock,
        runner: Callable[..., list[Outcome]] = run_steps,
    ) -> list[Outcome]:
        """Run the three ops under ``policy`` (with ``runner``, for a loop of your own)."""
        return runner(self.step, OPS, policy, clock=clock, repair=self.repair)


GOLDEN_PATHS = {
    "repair": FaultPlan([faults.bad_tool_call().on(kind="model", name="chat", nth=2)]),
    "patch without notes": FaultPlan([faults.transient().on(kind="tool", name="read_file")]),
}
"""The degraded paths recorded after the clean run, each under the fault that takes it."""


def record_golden(path: str | os.PathLike[str], *, question: str = QUESTION) -> None:
    """Record the golden cassette: the clean run, then (appended) the degraded paths.

    A repair call only happens after a schema-invalid tool call, and a patch request
    without notes only after the read degraded, so a clean run never makes them; recording
    each once, under the fault that takes that path, lets rehearsals replay them too.
    """
    clock = VirtualClock()
    with Deck(path, mode="record", allow_side_effects=True, clock=clock) as deck:
        Workshop(deck, question=question).run(Policy(), clock=clock)
    for plan in GOLDEN_PATHS.values():
        with Deck(path, mode="append", allow_side_effects=True, clock=clock, faults=plan) as deck:
            Workshop(deck, question=question).run(Policy(), clock=clock)
