"""A Gemini client's ``tools`` and ``toolConfig`` -> IR tool definitions and tool choice.

- ``tools[i].functionDeclarations[j]`` -> ``ToolDefinition``: ``parameters`` (a Gemini
  ``Schema``, converted to JSON Schema by ``client_schema``) or ``parametersJsonSchema``
  (JSON Schema already, kept as sent). ``response`` / ``responseJsonSchema`` (what the
  function returns) and ``behavior`` (Live API only) have no IR field and are not sent on.
- Every other key of a tool object (``googleSearch``, ``codeExecution``, ``urlContext``,
  ``fileSearch``, ...) is a tool that runs on Google's side: it becomes one
  ``NativeBlock(format="gemini")`` in ``native_tools``, so routing keeps the request to
  Gemini targets.
- ``toolConfig.functionCallingConfig.mode``: ``AUTO`` -> auto, ``ANY`` -> required (or
  the one function ``allowedFunctionNames`` names), ``NONE`` -> none, ``VALIDATED`` ->
  auto (the IR has no schema-validated mode; the schemas still go with the tools).
  Several allowed names have no IR form and are refused.
"""

from __future__ import annotations

from gw.codecs.fields import (
    JSONObject,
    as_list,
    as_object,
    as_str,
    invalid,
    optional_str,
    required,
)
from gw.codecs.gemini.client_schema import json_schema
from gw.codecs.gemini.proto_json import message
from gw.errors import InvalidRequestError, NativeFeatureUnsupportedError
from gw.ir import NativeBlock, ToolChoice, ToolDefinition

_MODES: dict[str, ToolChoice | None] = {
    "MODE_UNSPECIFIED": None,
    "AUTO": ToolChoice(mode="auto"),
    "VALIDATED": ToolChoice(mode="auto"),
    "ANY": ToolChoice(mode="required"),
    "NONE": ToolChoice(mode="none"),
}


def decode_tools(value: object) -> tuple[tuple[ToolDefinition, ...], tuple[NativeBlock, ...]]:
    """The functions a client declared, and its Google-side tools, in order."""
    if value is None:
        return (), ()
    functions: list[ToolDefinition] = []
    native: list[NativeBlock] = []
    for i, item in enumerate(as_list(value, "tools")):
        tool = message(item, f"tools[{i}]")
        declarations = tool.get("functionDeclarations")
        if declarations is not None:
            where = f"tools[{i}].functionDeclarations"
            functions.extend(
                _declaration(declaration, f"{where}[{j}]")
                for j, declaration in enumerate(as_list(declarations, where))
            )
        others = {key: spec for key, spec in tool.items() if key != "functionDeclarations"}
        if others:
            native.append(NativeBlock(format="gemini", data=others))
    _check_unique(functions)
    return tuple(functions), tuple(native)


def _declaration(value: object, param: str) -> ToolDefinition:
    declaration = message(value, param)
    name = as_str(required(declaration, "name", f"{param}.name"), f"{param}.name")
    if not name:
        raise invalid(f"{param}.name", "a non-empty string")
    schema = declaration.get("parameters")
    raw_schema = declaration.get("parametersJsonSchema")
    if schema is not None and raw_schema is not None:
        raise InvalidRequestError(
            f"`{param}` sets both `parameters` and `parametersJsonSchema`; send one of them",
            param=f"{param}.parametersJsonSchema",
        )
    parameters: JSONObject | None = None
    if schema is not None:
        parameters = json_schema(schema, f"{param}.parameters")
    elif raw_schema is not None:
        parameters = as_object(raw_schema, f"{param}.parametersJsonSchema")
    return ToolDefinition(
        name=name,
        description=optional_str(declaration, "description", f"{param}.description"),
        parameters=parameters,
    )


def _check_unique(functions: list[ToolDefinition]) -> None:
    seen: set[str] = set()
    for function in functions:
        if function.name in seen:
            # A name is the client's identifier, not prompt text: safe to quote.
            raise InvalidRequestError(
                f"`tools` declares the function {function.name!r} more than once",
                param="tools",
            )
        seen.add(function.name)


def decode_tool_config(value: object, tools: tuple[ToolDefinition, ...]) -> ToolChoice | None:
    """``toolConfig`` as the IR's tool choice; None when it leaves the choice to the model."""
    if value is None:
        return None
    config = message(value, "toolConfig")
    for key in config:
        if key != "functionCallingConfig":
            raise NativeFeatureUnsupportedError(
                f"`toolConfig.{key}` is not supported by gw", param=f"toolConfig.{key}"
            )
    calling = config.get("functionCallingConfig")
    if calling is None:
        return None
    where = "toolConfig.functionCallingConfig"
    calling = message(calling, where)
    mode = optional_str(calling, "mode", f"{where}.mode") or "MODE_UNSPECIFIED"
    if mode.upper() not in _MODES:
        raise invalid(f"{where}.mode", "one of AUTO, ANY, NONE, VALIDATED")
    choice = _MODES[mode.upper()]
    names = calling.get("allowedFunctionNames")
    if names is None:
        return choice
    allowed = [
        as_str(name, f"{where}.allowedFunctionNames[{i}]")
        for i, name in enumerate(as_list(names, f"{where}.allowedFunctionNames"))
    ]
    return _allowed(choice, allowed, tools, f"{where}.allowedFunctionNames")


def _allowed(
    choice: ToolChoice | None, names: list[str], tools: tuple[ToolDefinition, ...], param: str
) -> ToolChoice | None:
    if not names:
        return choice
    if choice is None or choice.mode != "required":
        raise InvalidRequestError(f"`{param}` may be set only with mode ANY", param=param)
    declared = {tool.name for tool in tools}
    for i, name in enumerate(names):
        if name not in declared:
            raise InvalidRequestError(
                f"`{param}[{i}]` names no function declared in `tools`", param=f"{param}[{i}]"
            )
    if len(set(names)) > 1:
        raise NativeFeatureUnsupportedError(
            f"`{param}` with more than one function is not supported by gw; name one, or "
            "declare only the functions the model may call with mode ANY",
            param=param,
        )
    return ToolChoice(mode="tool", name=names[0])
