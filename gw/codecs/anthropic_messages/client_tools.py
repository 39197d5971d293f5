"""Anthropic ``tools`` and ``tool_choice`` -> IR tool definitions and choice.

Custom tools (``type`` absent or ``custom``) carry ``name``, ``description``,
``input_schema`` (the IR's ``parameters``) and ``strict``. Anthropic-defined tools
(``bash_*``, ``text_editor_*``, ``web_search_*``, ``computer_*``, ``code_execution_*``,
``memory_*``, ...) run on Anthropic's side or follow its own schemas: the IR cannot carry
them, so any other ``type`` is refused naming it. ``cache_control`` becomes the tool's
``CacheMark``; ``eager_input_streaming`` is a hint and is dropped; ``defer_loading``,
``allowed_callers`` and ``input_examples`` change what the model sees and are refused.
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
from gw.ir import ToolChoice, ToolDefinition

# Anthropic tool_choice.type -> IR ToolChoice.mode.
TOOL_CHOICE_MODES: dict[str, Literal["auto", "none", "required", "tool"]] = {
    "auto": "auto",
    "any": "required",
    "tool": "tool",
    "none": "none",
}


def decode_tools(value: object) -> tuple[ToolDefinition, ...]:
    if value is None:
        return ()
    tools = tuple(_tool(item, f"tools[{i}]") for i, item in enumerate(as_list(value, "tools")))
    seen: set[str] = set()
    for i, tool in enumerate(tools):
        if tool.name in seen:
            raise InvalidRequestError(
                f"`tools[{i}].name`: tool names must be unique", param=f"tools[{i}].name"
            )
        seen.add(tool.name)
    return tools


def _tool(value: object, param: str) -> ToolDefinition:
    obj = as_object(value, param)
    kind = obj.get("type")
    if kind is not None and as_str(kind, f"{param}.type") != "custom":
        raise NativeFeatureUnsupportedError(
            f"`{param}.type`: Anthropic-defined tools "
            + (f"(`{kind}`) " if is_type_name(kind) else "")
            + "are not supported by gw; only custom tools are",
            param=f"{param}.type",
        )
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
    )


def _refuse_tool_features(obj: JSONObject, param: str) -> None:
    refused: str | None = None
    if optional_bool(obj, "defer_loading", f"{param}.defer_loading"):
        refused = "defer_loading"
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
    value: object, tools: tuple[ToolDefinition, ...]
) -> tuple[ToolChoice | None, bool | None]:
    """The choice and ``parallel_tool_calls`` (False when ``disable_parallel_tool_use``)."""
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
    _check_tool_choice(choice, tools)
    disable = optional_bool(
        obj, "disable_parallel_tool_use", "tool_choice.disable_parallel_tool_use"
    )
    return choice, None if disable is None or mode == "none" else not disable


def _check_tool_choice(choice: ToolChoice, tools: tuple[ToolDefinition, ...]) -> None:
    """A forced tool call needs tools, and a named tool must be one of them."""
    if choice.mode not in ("required", "tool"):
        return
    if not tools:
        raise InvalidRequestError(
            "`tool_choice` asks for a tool call but `tools` is empty", param="tool_choice"
        )
    if choice.name is not None and choice.name not in {tool.name for tool in tools}:
        raise InvalidRequestError(
            "`tool_choice.name` names a tool that is not in `tools`", param="tool_choice.name"
        )
