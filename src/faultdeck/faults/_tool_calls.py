"""A model's tool call broken the ways models break them: pure data, no provider shape.

A ``ToolCall`` is the first tool call of an answer as every provider has one: its name, its
arguments as JSON text (an Anthropic ``input``, dumped) and its id. A ``How`` (one row of
``HOWS`` per way ``bad_tool_call`` breaks it) turns it into the ``Broken`` call the answer
shows instead; ``length_stop`` cuts it (``cut``). The ways that break the tool's schema read
that schema from the request the call sent (``Tools``: OpenAI Chat's
``tools[].function.parameters``, Responses' ``tools[].parameters``, Anthropic's
``tools[].input_schema``), so that the arguments break the schema the program itself gave.
Where the request names no schema for the tool, they break the arguments as they are.
The provider shapes (``_tool_answers``, ``_tool_streams``) write the broken call back.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from ._checks import one_of

UNKNOWN_TOOL = "no_such_tool"
EXTRA_PROPERTY = "unexpected_argument"


@dataclass(frozen=True, slots=True)
class ToolCall:
    """The first tool call of an answer: its tool's name, its arguments as JSON text (as
    the model wrote them, valid or not) and its id."""

    name: str
    arguments: str
    id: str


@dataclass(frozen=True, slots=True)
class Broken:
    """The first tool call as the answer shows it under a fault.

    Attributes:
        call: the call, its name, arguments or id changed.
        twin: a second call follows it, the same in all (its id too).
        stopped: the answer stops inside it (out of tokens): no call or block comes after
            it, and the answer's stop reason says so.
    """

    call: ToolCall
    twin: bool = False
    stopped: bool = False


class Tools:
    """The tools the request offered, by name: their JSON schemas and names."""

    def __init__(self, request: Any) -> None:
        self.schemas: dict[str, Mapping[str, Any]] = {}
        tools = request.get("tools") if isinstance(request, Mapping) else None
        config = request.get("toolConfig") if isinstance(request, Mapping) else None
        if tools is None and isinstance(config, Mapping):  # Bedrock Converse
            tools = config.get("tools")
        for tool in tools if isinstance(tools, list) else ():
            if not isinstance(tool, Mapping):
                continue
            declared = tool.get("functionDeclarations")  # Gemini: many functions to a tool
            if isinstance(declared, list):
                for one in declared:
                    if isinstance(one, Mapping) and isinstance(one.get("name"), str):
                        schema = one.get("parametersJsonSchema") or _lowered(one.get("parameters"))
                        self.schemas[one["name"]] = schema if isinstance(schema, Mapping) else {}
                continue
            # Chat Completions nests the function, Bedrock the toolSpec; Responses and
            # Anthropic do not.
            function = tool.get("function", tool.get("toolSpec"))
            spec: Mapping[str, Any] = function if isinstance(function, Mapping) else tool
            schema = spec.get("parameters", spec.get("input_schema"))
            if schema is None and isinstance(spec.get("inputSchema"), Mapping):
                schema = spec["inputSchema"].get("json")
            if isinstance(spec.get("name"), str):
                self.schemas[spec["name"]] = schema if isinstance(schema, Mapping) else {}

    def schema(self, name: str) -> Mapping[str, Any]:
        """The tool's schema (``{}`` when the request sent none)."""
        return self.schemas.get(name, {})

    def unknown(self) -> str:
        """A tool name the request did not offer."""
        name = UNKNOWN_TOOL
        while name in self.schemas:
            name += "_"
        return name


def tool_input(broken: Broken, arguments: str) -> Any:
    """What an object-shaped arguments field (Anthropic's ``input``, Bedrock's
    ``toolUse.input``, Gemini's ``args``) holds of ``broken``'s arguments (``arguments`` are
    the call's own, before it broke): JSON, or the text of arguments that are not; a cut
    call the properties that fit whole."""
    if broken.stopped:
        return fitting(arguments, len(broken.call.arguments))
    try:
        return orjson.loads(broken.call.arguments)
    except orjson.JSONDecodeError:
        return broken.call.arguments  # not JSON: the shape shows it as its text


def _lowered(schema: Any) -> Any:
    """A Gemini schema (OpenAPI's, its types upper-case: ``STRING``) as JSON Schema's."""
    if isinstance(schema, Mapping):
        return {
            key: value.lower() if key == "type" and isinstance(value, str) else _lowered(value)
            for key, value in schema.items()
        }
    if isinstance(schema, list):
        return [_lowered(item) for item in schema]
    return schema


Breaker = Callable[[ToolCall, Tools], Broken]
"""How a fault breaks the first tool call: from the call and the tools offered."""


def break_function_call(calls: Any, breaker: Breaker, tools: Tools) -> Broken | None:
    """Break the first call of a ``tool_calls`` list shaped as OpenAI Chat's (``id``,
    ``function.name``, ``function.arguments`` as JSON text) in place: a twin right after
    it, the calls after it gone when the answer stops inside it (the caller says why the
    answer ended). ``None`` when the list holds no call."""
    if not calls or not isinstance(calls, list) or not isinstance(calls[0], dict):
        return None
    first = calls[0]
    function = first.setdefault("function", {})
    call = ToolCall(
        str(function.get("name", "")), str(function.get("arguments", "")), first.get("id", "")
    )
    broken = breaker(call, tools)
    function["name"], function["arguments"] = broken.call.name, broken.call.arguments
    first["id"] = broken.call.id
    if broken.twin:
        calls.insert(1, copy.deepcopy(first))
    if broken.stopped:
        del calls[1:]
    return broken


def break_input_call(
    content: list[Any],
    index: int,
    call: dict[str, Any],
    id_key: str,
    breaker: Breaker,
    tools: Tools,
) -> Broken:
    """Break in place the tool call ``call`` of the block ``content[index]`` (Anthropic's
    ``tool_use`` block itself, Bedrock's ``toolUse`` in its block), whose ``name``, id
    (``id_key``) and ``input`` (an object) it holds: a twin block right after it, the blocks
    after it gone when the answer stops inside it (the caller says why the answer ended)."""
    arguments = orjson.dumps(call.get("input", {})).decode()
    broken = breaker(ToolCall(str(call.get("name", "")), arguments, call.get(id_key, "")), tools)
    call["name"], call[id_key] = broken.call.name, broken.call.id
    call["input"] = tool_input(broken, arguments)
    if broken.twin:
        content.insert(index + 1, copy.deepcopy(content[index]))
    if broken.stopped:
        del content[index + 1 :]
    return broken


def _object(arguments: str) -> dict[str, Any]:
    """The arguments as an object; ``{}`` when they are not one."""
    try:
        value = orjson.loads(arguments)
    except orjson.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def _dumped(value: Any) -> str:
    return orjson.dumps(value).decode()


def _properties(schema: Mapping[str, Any]) -> dict[str, Any]:
    found = schema.get("properties")
    return {k: v for k, v in found.items() if isinstance(v, Mapping)} if found else {}


def _required(schema: Mapping[str, Any]) -> list[str]:
    found = schema.get("required")
    return [name for name in found if isinstance(name, str)] if isinstance(found, list) else []


def _target(arguments: dict[str, Any], schema: Mapping[str, Any]) -> str | None:
    """The property to break: the first required one, else the schema's first, else the
    arguments' first."""
    return next(iter((*_required(schema), *_properties(schema), *arguments)), None)


def missing_required(arguments: str, schema: Mapping[str, Any]) -> str:
    """A required property dropped (the first one the arguments hold; without a schema,
    their first)."""
    parsed = _object(arguments)
    required = [name for name in _required(schema) if name in parsed] or list(parsed)
    if required:
        del parsed[required[0]]
    return _dumped(parsed)


# Values of each JSON type, to give a property one its schema does not allow.
_TYPED: tuple[tuple[frozenset[str], Any], ...] = (
    (frozenset({"integer", "number"}), 12345),
    (frozenset({"string"}), "12345"),
    (frozenset({"array"}), ["12345"]),
    (frozenset({"object"}), {"value": "12345"}),
    (frozenset({"boolean"}), True),
)
_JSON_TYPES = {bool: "boolean", int: "integer", float: "number", str: "string"}
_JSON_TYPES.update({list: "array", dict: "object", type(None): "null"})


def _types(schema: Any, value: Any) -> set[str]:
    """The JSON types a property takes: its schema's, else its value's."""
    declared = schema.get("type") if isinstance(schema, Mapping) else None
    if isinstance(declared, str):
        return {declared}
    if isinstance(declared, list):
        return {str(t) for t in declared}
    return {_JSON_TYPES.get(type(value), "string")}


def wrong_type(arguments: str, schema: Mapping[str, Any]) -> str:
    """A property (the first required, else the first) given a value of a JSON type its
    schema does not allow (a string gets a number, a number a string)."""
    parsed = _object(arguments)
    name = _target(parsed, schema)
    if name is None:
        return _dumped([])  # no property to give a wrong type: the whole is one
    allowed = _types(_properties(schema).get(name), parsed.get(name))
    parsed[name] = next(value for types, value in _TYPED if not types & allowed)
    return _dumped(parsed)


def extra_property(arguments: str, schema: Mapping[str, Any]) -> str:
    """A property the schema does not have, added."""
    parsed = _object(arguments)
    name = EXTRA_PROPERTY
    while name in parsed or name in _properties(schema):
        name += "_"
    parsed[name] = True
    return _dumped(parsed)


def enum_mismatch(arguments: str, schema: Mapping[str, Any]) -> str:
    """A property with an ``enum`` given a value outside it; a schema without one cannot
    show it, so a property gets a value of the wrong type instead (``wrong_type``)."""
    parsed = _object(arguments)
    for name, spec in _properties(schema).items():
        allowed = spec.get("enum")
        if isinstance(allowed, list) and allowed:
            value = f"not_{allowed[0]}"
            while value in allowed:
                value = f"not_{value}"
            parsed[name] = value
            return _dumped(parsed)
    return wrong_type(arguments, schema)


def not_object(arguments: str, schema: Mapping[str, Any]) -> str:
    """The arguments as a JSON array of their values rather than an object."""
    return _dumped(list(_object(arguments).values()))


def cut(arguments: str) -> str:
    """The arguments' first half, as a model out of tokens leaves them."""
    return arguments[: max(1, len(arguments) // 2)]


def trailing_comma(arguments: str) -> str:
    """The arguments with a comma before their closing brace (``{"a": 1,}``)."""
    text = arguments.rstrip()
    if not text.endswith(("}", "]")):
        text = _dumped(_object(arguments))
    return f"{text[:-1]},{text[-1]}"


def single_quotes(arguments: str) -> str:
    """The arguments quoted as Python writes them (``{'a': 'b'}``)."""
    text = _dumped(_object(arguments)) if arguments.strip().startswith("{") else arguments
    return text.replace('"', "'") if '"' in text else f"'{text}'"


@dataclass(frozen=True, slots=True)
class How:
    """One way ``bad_tool_call`` breaks the first tool call.

    Attributes:
        text: what it breaks, for ``BadToolCall``'s message.
        arguments: its new arguments, from the old and the tool's schema, if it changes them.
        rename: the tool's name becomes one the request did not offer.
        twin: a second call follows under the same id.
    """

    text: str
    arguments: Callable[[str, Mapping[str, Any]], str] | None = None
    rename: bool = False
    twin: bool = False

    def __call__(self, call: ToolCall, tools: Tools) -> Broken:
        """The call as this way breaks it, given the tools the request offered (a
        ``Breaker``)."""
        if self.arguments is not None:
            arguments = self.arguments(call.arguments, tools.schema(call.name))
            call = dataclasses.replace(call, arguments=arguments)
        if self.rename:
            call = dataclasses.replace(call, name=tools.unknown())
        return Broken(call, twin=self.twin)


def _text(fn: Callable[[str], str]) -> Callable[[str, Mapping[str, Any]], str]:
    return lambda arguments, schema: fn(arguments)


_NOT_JSON = "the arguments are not valid JSON"
HOWS: Mapping[str, How] = {
    "missing_required": How("a required argument is missing", missing_required),
    "wrong_type": How("an argument has the wrong type", wrong_type),
    "extra_property": How("an argument the schema does not have", extra_property),
    "enum_mismatch": How("an argument is outside its enum", enum_mismatch),
    "not_object": How("the arguments are not a JSON object", not_object),
    "invalid_json": How(f"{_NOT_JSON} (cut short)", _text(cut)),
    "invalid_json:trailing_comma": How(f"{_NOT_JSON} (a trailing comma)", _text(trailing_comma)),
    "invalid_json:single_quotes": How(f"{_NOT_JSON} (single quotes)", _text(single_quotes)),
    "unknown_tool": How("the named tool does not exist", rename=True),
    "duplicate_id": How("a second tool call has the first's id", twin=True),
}
"""Every way ``bad_tool_call`` breaks a tool call, by its ``how``, simplest first."""

ALIASES: Mapping[str, str] = {
    "missing_field": "missing_required",
    "unparseable": "invalid_json",
    "invalid_json:truncated": "invalid_json",
}
"""Other names a ``how`` is accepted under (the first names, kept for old plans and
cassettes): a fault keeps the name it was given."""


how_of = one_of(tuple(HOWS), also=tuple(ALIASES))
"""The checker of ``bad_tool_call``'s ``how``: a way to break a tool call, or an alias."""


def how(name: str) -> How:
    """The way named ``name`` (or its alias)."""
    return HOWS[ALIASES.get(name, name)]


def length_stop(call: ToolCall, tools: Tools) -> Broken:
    """The answer runs out of tokens inside the call: its arguments cut."""
    return Broken(dataclasses.replace(call, arguments=cut(call.arguments)), stopped=True)


def fitting(arguments: str, size: int) -> dict[str, Any]:
    """The arguments' properties that fit whole into their first ``size`` characters: what
    a format that holds only objects (Anthropic's ``input``) shows of a cut call, as the
    SDK's partial JSON parser reads the cut text."""
    out: dict[str, Any] = {}
    for name, value in _object(arguments).items():
        if len(_dumped({**out, name: value})) - 1 > size:
            break
        out[name] = value
    return out


def pieces(text: str, count: int) -> Iterator[str]:
    """``text`` in ``count`` pieces of near equal length (empty ones where it is short)."""
    size, extra = divmod(len(text), max(1, count))
    start = 0
    for index in range(max(1, count)):
        end = start + size + (index < extra)
        yield text[start:end]
        start = end
