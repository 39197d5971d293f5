"""Decode the body an OpenAI Responses client sends to ``POST /v1/responses`` into the IR.

``instructions`` and ``input`` become the messages (client_items), function tools the
IR's tools, ``text.format`` its response format, ``reasoning`` its effort and summary,
``max_output_tokens`` its limit. Tools that run on OpenAI's side (``web_search``,
``file_search``, ``code_interpreter``, ``mcp``, ``custom``, ``local_shell``, ...) become
``native_tools``, which only a ``kind: openai_responses`` upstream is given. Every other
top-level key (``previous_response_id``, ``store``, ``include``, ``truncation``,
``prompt_cache_key``, ``metadata``, ``service_tier``, ...) goes to
``extensions["openai_responses"]`` unchanged, as the other codecs keep theirs: a Responses
upstream gets them back, other formats leave them out and the attempt says so.
"""

from __future__ import annotations

from typing import Literal, get_args

from gw.codecs.fields import (
    JSONObject,
    as_int,
    as_list,
    as_number,
    as_object,
    as_str,
    decode_object,
    invalid,
    optional_bool,
    optional_str,
    required,
)
from gw.codecs.openai_responses.client_items import decode_input
from gw.codecs.openai_responses.namespaces import namespaced_functions
from gw.errors import InvalidRequestError, NativeFeatureUnsupportedError
from gw.ir import (
    ChatRequest,
    Effort,
    Message,
    NativeBlock,
    NativeFormat,
    Reasoning,
    ResponseFormat,
    Sampling,
    SystemMessage,
    TextPart,
    ToolChoice,
    ToolDefinition,
)

FORMAT: NativeFormat = "openai_responses"

# Keys read into IR fields; everything else lands in extensions["openai_responses"].
_CONSUMED = frozenset(
    {
        "model", "input", "instructions", "tools", "tool_choice", "parallel_tool_calls",
        "text", "reasoning", "max_output_tokens", "temperature", "top_p", "user", "stream",
        "stream_options",
    }
)  # fmt: skip
_EFFORTS: tuple[str, ...] = get_args(Effort)
_SUMMARIES = ("auto", "concise", "detailed")
_MODES: dict[str, Literal["auto", "none", "required"]] = {
    "auto": "auto",
    "none": "none",
    "required": "required",
}


def decode_responses_request(body: bytes) -> ChatRequest:
    """Parse a client Responses request. Raises ``InvalidRequestError`` (or
    ``NativeFeatureUnsupportedError``) with ``param`` naming the field."""
    obj = decode_object(body)
    _check_logprobs(obj)
    tools, native_tools = _tools(obj.get("tools"))
    extensions = {
        key: value for key, value in obj.items() if key not in _CONSUMED and value is not None
    }
    tool_choice = _tool_choice(obj.get("tool_choice"), extensions)
    text = _text(obj.get("text"), extensions)
    return ChatRequest(
        model=_model(obj),
        messages=_messages(obj),
        tools=tools,
        native_tools=native_tools,
        tool_choice=tool_choice,
        parallel_tool_calls=optional_bool(obj, "parallel_tool_calls", "parallel_tool_calls"),
        response_format=text,
        sampling=Sampling(
            temperature=_number(obj, "temperature", 0, 2),
            top_p=_number(obj, "top_p", 0, 1),
        ),
        max_tokens=_max_output_tokens(obj.get("max_output_tokens")),
        reasoning=_reasoning(obj.get("reasoning")),
        stream=bool(optional_bool(obj, "stream", "stream")),
        include_usage=True,
        user=optional_str(obj, "user", "user"),
        extensions={FORMAT: extensions} if extensions else {},
    )


def _check_logprobs(obj: JSONObject) -> None:
    """gw's answers carry no log probabilities (the IR has no place for them): asking for
    them is refused, as on /v1/chat/completions, not answered with none."""
    top = obj.get("top_logprobs")
    include = obj.get("include")
    if (top is not None and as_int(top, "top_logprobs") > 0) or (
        isinstance(include, list) and "message.output_text.logprobs" in include
    ):
        param = "top_logprobs" if top else "include"
        raise NativeFeatureUnsupportedError(
            f"`{param}`: gw does not return log probabilities; leave them out", param=param
        )


def _model(obj: JSONObject) -> str:
    model = as_str(required(obj, "model", "model"), "model")
    if not model:
        raise invalid("model", "a non-empty string")
    return model


def _messages(obj: JSONObject) -> tuple[Message, ...]:
    instructions = obj.get("instructions")
    value = obj.get("input")
    if value is None and obj.get("previous_response_id") is None:
        raise InvalidRequestError("`input` is required", param="input")
    messages = () if value is None else decode_input(value)
    if instructions is None:
        return messages
    text = as_str(instructions, "instructions")
    return (SystemMessage(content=(TextPart(text=text),)), *messages)


def _tools(value: object) -> tuple[tuple[ToolDefinition, ...], tuple[NativeBlock, ...]]:
    """Function tools for the IR; the rest stay native. A ``namespace``'s functions are
    offered under joined names too (namespaces.py), so any upstream can call them."""
    if value is None:
        return (), ()
    functions: list[tuple[str, JSONObject]] = []
    native: list[NativeBlock] = []
    for i, raw in enumerate(as_list(value, "tools")):
        param = f"tools[{i}]"
        obj = as_object(raw, param)
        kind = as_str(required(obj, "type", f"{param}.type"), f"{param}.type")
        if kind == "function":
            functions.append((param, obj))
            continue
        native.append(NativeBlock(format=FORMAT, data=obj))
        if kind == "namespace":
            inner = namespaced_functions(obj)
            functions += [(f"{param}.tools[{j}]", tool) for j, tool in enumerate(inner)]
    tools = [_function(obj, param) for param, obj in functions]
    names: set[str] = set()
    for tool, (param, _) in zip(tools, functions, strict=True):
        if tool.name in names:
            raise InvalidRequestError(
                f"`{param}.name`: tool names must be unique", param=f"{param}.name"
            )
        names.add(tool.name)
    return tuple(tools), tuple(native)


def _function(obj: JSONObject, param: str) -> ToolDefinition:
    name = as_str(required(obj, "name", f"{param}.name"), f"{param}.name")
    if not name:
        raise invalid(f"{param}.name", "a non-empty string")
    parameters = obj.get("parameters")
    return ToolDefinition(
        name=name,
        description=optional_str(obj, "description", f"{param}.description"),
        parameters=None if parameters is None else as_object(parameters, f"{param}.parameters"),
        strict=optional_bool(obj, "strict", f"{param}.strict"),
    )


def _tool_choice(value: object, extensions: JSONObject) -> ToolChoice | None:
    """A mode or one function; a choice of a built-in tool (``{"type": "web_search"}``,
    ``allowed_tools``, ...) stays for a Responses upstream."""
    if value is None:
        return None
    if isinstance(value, str):
        mode = _MODES.get(value)
        if mode is None:
            raise invalid("tool_choice", "one of auto, none, required, or an object", value)
        return ToolChoice(mode=mode)
    obj = as_object(value, "tool_choice")
    if obj.get("type") == "function":
        name = as_str(required(obj, "name", "tool_choice.name"), "tool_choice.name")
        return ToolChoice(mode="tool", name=name)
    extensions["tool_choice"] = obj
    return None


def _text(value: object, extensions: JSONObject) -> ResponseFormat | None:
    """``text.format``; the rest of ``text`` (``verbosity``) stays for a Responses upstream."""
    if value is None:
        return None
    obj = as_object(value, "text")
    rest = {key: item for key, item in obj.items() if key != "format"}
    if rest:
        extensions["text"] = rest
    raw = obj.get("format")
    if raw is None:
        return None
    fmt = as_object(raw, "text.format")
    kind = as_str(required(fmt, "type", "text.format.type"), "text.format.type")
    if kind == "text":
        return None
    if kind == "json_object":
        return ResponseFormat(type="json_object")
    if kind != "json_schema":
        raise invalid("text.format.type", "one of text, json_object, json_schema")
    return ResponseFormat(
        type="json_schema",
        name=as_str(required(fmt, "name", "text.format.name"), "text.format.name"),
        json_schema=as_object(required(fmt, "schema", "text.format.schema"), "text.format.schema"),
        strict=optional_bool(fmt, "strict", "text.format.strict"),
        description=optional_str(fmt, "description", "text.format.description"),
    )


def _reasoning(value: object) -> Reasoning | None:
    if value is None:
        return None
    obj = as_object(value, "reasoning")
    effort = obj.get("effort")
    if effort == "max":
        effort = "xhigh"  # the IR's highest level (as Anthropic's output_config.effort max)
    if effort is not None and effort not in _EFFORTS:
        raise invalid("reasoning.effort", f"one of {', '.join(_EFFORTS)}, max", effort)
    # generate_summary: the older name of summary, which clients still send.
    summary = obj.get("summary", obj.get("generate_summary"))
    if summary is not None and summary not in _SUMMARIES:
        raise invalid("reasoning.summary", "one of auto, concise, detailed", summary)
    if effort is None and summary is None:
        return None
    return Reasoning(effort=effort, summary=summary)


def _max_output_tokens(value: object) -> int | None:
    if value is None:
        return None
    result = as_int(value, "max_output_tokens")
    if result < 1:
        raise invalid("max_output_tokens", "a positive integer")
    return result


def _number(obj: JSONObject, key: str, low: float, high: float) -> float | None:
    value = obj.get(key)
    return None if value is None else as_number(value, key, low, high)
