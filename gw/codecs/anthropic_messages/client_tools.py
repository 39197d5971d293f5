"""Anthropic ``tools`` and ``tool_choice`` -> IR tool definitions and choice.

Custom tools (``type`` absent or ``custom``) carry ``name``, ``description``,
``input_schema`` (the IR's ``parameters``) and ``strict``. ``cache_control`` becomes the
tool's ``CacheMark``; ``eager_input_streaming`` is a hint and is dropped;
``allowed_callers`` and ``input_examples`` change what the model sees and are refused. A
custom tool with ``defer_loading`` (found through Anthropic's tool search, as Claude Code
does with many MCP tools) is a tool like any other, marked: Anthropic defers it, other
formats offer it up front (and the attempt says so).

Anthropic-defined tools (any other ``type``: ``web_search_*``, ``web_fetch_*``,
``code_execution_*``, ``bash_*``, ``text_editor_*``, ``computer_*``, ``memory_*``,
``tool_search_tool_*``, ``mcp_toolset``, ...) run on Anthropic's side or follow schemas
only Anthropic knows: each becomes a ``NativeBlock("anthropic", tool)`` in
``ChatRequest.native_tools``, kept verbatim, and routing sends the request only to
Anthropic targets.
"""

from __future__ import annotations

from typing import Literal

from gw.codecs.cache_marks import decode_cache_mark
from gw.codecs.fields import (
    JSONObject,
    as_list,
    as_object,
    as_str,
    invalid,
    is_type_name,
    optional_bool,
    optional_str,
    required,
)
from gw.errors import InvalidRequestError, NativeFeatureUnsupportedError
from gw.ir import NativeBlock, ToolChoice, ToolDefinition

# Anthropic tool_choice.type -> IR ToolChoice.mode.
TOOL_CHOICE_MODES: dict[str, Literal["auto", "none", "required", "tool"]] = {
    "auto": "auto",
    "any": "required",
    "tool": "tool",
    "none": "none",
}


def decode_tools(value: object) -> tuple[tuple[ToolDefinition, ...], tuple[NativeBlock, ...]]:
    """The custom tools, and the Anthropic-defined ones (verbatim), each in order."""
    if value is None:
        return (), ()
    tools: list[ToolDefinition] = []
    native: list[NativeBlock] = []
    seen: set[str] = set()
    for i, item in enumerate(as_list(value, "tools")):
        param = f"tools[{i}]"
        obj = as_object(item, param)
        kind = obj.get("type")
        if kind is not None and as_str(kind, f"{param}.type") != "custom":
            name = _native_tool_name(obj, kind, param)
            native.append(NativeBlock(format="anthropic", data=obj))
        else:
            tool = _tool(obj, param)
            tools.append(tool)
            name = tool.name
        if name in seen:
            raise InvalidRequestError(
                f"`{param}.name`: tool names must be unique", param=f"{param}.name"
            )
        seen.add(name)
    return tuple(tools), tuple(native)


def _native_tool_name(obj: JSONObject, kind: str, param: str) -> str:
    """An Anthropic-defined tool's ``name``, for the uniqueness check; an MCP toolset has
    none (its tools are named by its server), so it gets a key no name can equal."""
    if not is_type_name(kind):
        raise invalid(f"{param}.type", "a tool type name")
    name = obj.get("name")
    if name is None:
        return f"{param}.{kind}"
    return as_str(name, f"{param}.name")


def _tool(obj: JSONObject, param: str) -> ToolDefinition:
    _refuse_tool_features(obj, param)
    name = as_str(required(obj, "name", f"{param}.name"), f"{param}.name")
    if not name:
        raise invalid(f"{param}.name", "a non-empty string")
    return ToolDefinition(
        name=name,
        description=optional_str(obj, "description", f"{param}.description"),
        parameters=as_object(
            required(obj, "input_schema", f"{param}.input_schema"), f"{param}.input_schema"
        ),
        strict=optional_bool(obj, "strict", f"{param}.strict"),
        cache=decode_cache_mark(obj, param),
        defer_loading=bool(optional_bool(obj, "defer_loading", f"{param}.defer_loading")),
    )


def _refuse_tool_features(obj: JSONObject, param: str) -> None:
    refused: str | None = None
    callers = obj.get("allowed_callers")
    if callers is not None and as_list(callers, f"{param}.allowed_callers") != ["direct"]:
        refused = "allowed_callers"
    examples = obj.get("input_examples")
    if examples is not None and as_list(examples, f"{param}.input_examples"):
        refused = "input_examples"
    if refused is not None:
        raise NativeFeatureUnsupportedError(
            f"`{param}.{refused}` is not supported by gw", param=f"{param}.{refused}"
        )


def decode_tool_choice(
    value: object, tools: tuple[ToolDefinition, ...], native: tuple[NativeBlock, ...] = ()
) -> tuple[ToolChoice | None, bool | None]:
    """The choice and ``parallel_tool_calls`` (False when ``disable_parallel_tool_use``);
    ``native``: the Anthropic-defined tools, which a choice may name too."""
    if value is None:
        return None, None
    obj = as_object(value, "tool_choice")
    kind = as_str(required(obj, "type", "tool_choice.type"), "tool_choice.type")
    mode = TOOL_CHOICE_MODES.get(kind)
    if mode is None:
        raise invalid("tool_choice.type", "one of `auto`, `any`, `tool`, `none`")
    name = None
    if mode == "tool":
        name = as_str(required(obj, "name", "tool_choice.name"), "tool_choice.name")
    choice = ToolChoice(mode=mode, name=name)
    _check_tool_choice(choice, tools, native)
    disable = optional_bool(
        obj, "disable_parallel_tool_use", "tool_choice.disable_parallel_tool_use"
    )
    return choice, None if disable is None or mode == "none" else not disable


def _check_tool_choice(
    choice: ToolChoice, tools: tuple[ToolDefinition, ...], native: tuple[NativeBlock, ...]
) -> None:
    """A forced tool call needs tools, and a named tool must be one of them."""
    if choice.mode not in ("required", "tool"):
        return
    if not tools and not native:
        raise InvalidRequestError(
            "`tool_choice` asks for a tool call but `tools` is empty", param="tool_choice"
        )
    names = {tool.name for tool in tools} | {tool.data.get("name") for tool in native}
    if choice.name is not None and choice.name not in names:
        raise InvalidRequestError(
            "`tool_choice.name` names a tool that is not in `tools`", param="tool_choice.name"
        )
