"""A fork sent to another model: the calls after the fork point ask for the model it names.

``Deck(new, mode="fork", parent=old, at=N, model="other-model")`` (``faultdeck fork … --model
other-model``) sends every call after seq N whose request names a model (the ``model`` field
of its JSON body: OpenAI's chat completions, responses and embeddings, Anthropic's messages;
or its path: Gemini's ``…/models/{model}:generateContent``) to ``other-model``. Bedrock's
path names the model too, but is signed with it (SigV4): a fork cannot send it elsewhere.
The deck keys the call as it will be sent (``Retarget.apply``, in ``Run.begin``), and the
HTTP boundary rewrites the request before it goes live; so the
cassette holds what was really sent. The new cassette's header says so next to the fork
point (``"parent": {…, "at": N, "model": "other-model"}``), and a deck that replays it,
appends to it or resumes it sends the same calls to the same model: the program, unchanged,
still asks for its own model and replays offline.

A fork of such a fork keeps what its parent was sent: the calls it shares with it were
recorded under the parent's rewrite (``shared_models`` in the header, one ``{"after",
"model"}`` a rewrite), and its live calls go on to the parent's model unless it names
another. Only a caller that rewrites what it sends asks for this (``Deck.begin(…,
retarget=True)``: the HTTP boundary); a model call made in-process is keyed as it asks.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .._base.errors import CassetteCorrupt, ConfigError
from .._cassette.format import Entry
from .._cassette.summary import model_in_path, requested_model

MODEL_ENV = "FAULTDECK_FORK_MODEL"
"""The variable ``faultdeck fork --model`` names the model in, for ``Deck.from_env``."""


@dataclass(frozen=True, slots=True)
class Retarget:
    """Which calls are sent to which model: each step ``(after, model)`` sends the calls
    with a seq above ``after`` to ``model``, until a later step; oldest first."""

    steps: tuple[tuple[int, str], ...]

    def model_at(self, seq: int) -> str | None:
        """The model the call with ``seq`` is sent to, or ``None`` for the one it asks."""
        found = None
        for after, model in self.steps:
            if seq > after:
                found = model
        return found

    def apply(self, seq: int, kind: str, args: Any) -> tuple[Any, str | None]:
        """A call's args as it will be sent, and the model it is sent to (``None``: it goes
        as it asks, having no model field or no rewrite at its seq).

        Raises:
            ConfigError: the request names its model where it cannot be rewritten (Bedrock).
        """
        if kind != "model":
            return args, None
        model = self.model_at(seq)
        asked = requested_model(args) if model is not None else None
        if model is None or asked is None or asked == model:
            return args, None
        body = args.get("body")
        if type(body) is dict and body.get("model") == asked:
            return {**args, "body": {**body, "model": model}}, model
        refused = _unsendable(args)
        if refused is not None:
            why, instead = refused
            raise ConfigError(
                f"seq {seq}: this request {why}, so it cannot be sent to {model!r}; {instead}"
            )
        return {**args, "path": with_model(args["path"], model)}, model

    def header(self, at: int) -> dict[str, Any]:
        """The fields a fork at ``at`` writes into its header's ``parent``: ``model`` (the
        model its calls after ``at`` are sent to) and ``shared_models`` (the rewrites its
        shared calls were recorded under), each only when there is one."""
        fields: dict[str, Any] = {}
        model = self.model_at(at + 1)
        if model is not None:
            fields["model"] = model
        shared = [{"after": after, "model": m} for after, m in self.steps if after < at]
        if shared:
            fields["shared_models"] = shared
        return fields


def fork_retarget(
    parent: Retarget | None, at: int, model: str | None, first_live: Entry | None, path: str
) -> Retarget | None:
    """The rewrite of a fork at ``at`` of the cassette ``path``: its parent's (``parent``,
    from the parent's header) up to the fork point, then ``model`` when given, else the
    parent's model goes on.

    Raises:
        ConfigError: ``model`` is given but the parent's call after the fork point
            (``first_live``, the first that runs live) names no model in its request.
    """
    steps = [(after, m) for after, m in (parent.steps if parent else ()) if after <= at]
    if model is not None:
        refused = None if first_live is None else _unsendable(first_live.args)
        if first_live is not None and refused is not None:
            why, instead = refused
            raise ConfigError(
                f"seq {first_live.seq} of {path}, the first call after the fork point, is "
                f"{first_live.kind} {first_live.name}, whose recorded request {why}, so it "
                f"cannot be sent to {model!r}; {instead}"
            )
        steps = [(after, m) for after, m in steps if after < at] + [(at, model)]
    return Retarget(tuple(steps)) if steps else None


def with_model(path: str, model: str) -> str:
    """A Gemini path (``model_in_path``) naming ``model`` instead of the one it asks."""
    found = model_in_path(path)
    assert found is not None  # (``_unsendable`` said it is Gemini's)
    assert found.lastindex == 1
    return f"{path[: found.start(1)]}{model}{path[found.end(1) :]}"


def _unsendable(args: Any) -> tuple[str, str] | None:
    """Why a request cannot be sent to another model and what to do instead, or ``None``
    when it can."""
    if requested_model(args) is None:
        return (
            "names no model (a JSON body field 'model', or Gemini's path)",
            "fork at the seq just before a model request",
        )
    body = args.get("body")
    in_path = None if type(body) is dict and "model" in body else model_in_path(args.get("path"))
    if in_path is not None and in_path.lastindex == 2:
        return (
            "is Bedrock's, signed (SigV4) with the model in its path",
            "fork without --model and change the modelId the program asks for",
        )
    return None


def check_model(mode: str, model: str | None) -> None:
    """Refuse a deck's ``model=`` outside mode ``fork``, or one that names no model.

    Raises:
        ConfigError: as said.
    """
    if model is None:
        return
    if mode != "fork":
        raise ConfigError(
            f"model= is for mode 'fork', not {mode!r}: a fork sends its calls after the fork "
            "point to another model; pass mode='fork', parent= and at="
        )
    if type(model) is not str or not model.strip():
        raise ConfigError(f"model={model!r} names no model; give one, e.g. model='gpt-4o'")


def retarget_of(parent: Any, path: str) -> Retarget | None:
    """The rewrite a cassette's header says its calls were sent under (``parent`` is the
    header's ``parent`` field), or ``None`` for a cassette that has none.

    Raises:
        CassetteCorrupt: the header's ``model`` or ``shared_models`` is not as a fork
            writes it.
    """
    if not isinstance(parent, Mapping) or not ("model" in parent or "shared_models" in parent):
        return None
    at, model, shared = parent.get("at"), parent.get("model"), parent.get("shared_models", [])
    steps = [_step(step) for step in shared] if type(shared) is list else [None]
    named = "model" not in parent or (type(model) is str and bool(model))
    if type(at) is not int or not named or None in steps:
        raise CassetteCorrupt(
            path,
            1,
            "header: parent.model is not a model name, parent.shared_models not a list of "
            "{after, model}, or parent.at not a whole number",
            "restore it from version control or fork again",
        )
    found = [step for step in steps if step is not None]
    if model is not None:
        found.append((at, model))
    return Retarget(tuple(sorted(found))) if found else None


def _step(step: Any) -> tuple[int, str] | None:
    """One ``{"after", "model"}`` of a header's ``shared_models``, or ``None`` if it is not."""
    if type(step) is not dict:
        return None
    after, model = step.get("after"), step.get("model")
    if type(after) is not int or type(model) is not str or not model:
        return None
    return after, model
