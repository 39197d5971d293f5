"""Decode the body the OpenAI SDK sends to ``POST /v1/chat/completions`` into the IR.

Strict like OpenAI itself on what the IR carries (types, ranges, required fields; ``"9"``
is not an integer and ``true`` is not a number). Every top-level key the IR has no field
for goes to ``extensions["openai"]`` unchanged, whether OpenAI defines it (``logprobs``,
``metadata``, ``reasoning_effort``, ...) or not (``top_k`` for vLLM, ...): OpenAI itself
rejects unknown keys, but OpenAI-compatible servers take extra ones and clients send them
with ``extra_body``, so gw passes them to OpenAI-shaped upstreams and lets those decide.
Other codecs ignore them.
"""

from __future__ import annotations

from typing import Any, Literal

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
from gw.codecs.openai_chat.client_messages import decode_messages
from gw.errors import InvalidRequestError, NativeFeatureUnsupportedError
from gw.ir import ChatRequest, Reasoning, ResponseFormat, Sampling, ToolChoice, ToolDefinition

# Keys read into IR fields; everything else lands in extensions["openai"].
_CONSUMED = frozenset(
    {
        "model", "messages", "tools", "tool_choice", "parallel_tool_calls", "response_format",
        "temperature", "top_p", "frequency_penalty", "presence_penalty", "seed", "stop",
        "max_tokens", "max_completion_tokens", "stream", "stream_options", "user", "n",
        "reasoning_effort",
    }
)  # fmt: skip
# (name, low, high) as the OpenAI API documents them.
_SAMPLING_RANGES: tuple[tuple[str, float, float], ...] = (
    ("temperature", 0.0, 2.0),
    ("top_p", 0.0, 1.0),
    ("frequency_penalty", -2.0, 2.0),
    ("presence_penalty", -2.0, 2.0),
)
_EFFORTS: dict[object, Literal["minimal", "low", "medium", "high"]] = {
    "minimal": "minimal",
    "low": "low",
    "medium": "medium",
    "high": "high",
}
_LEGACY = {"functions": "tools", "function_call": "tool_choice"}
_TOOL_CHOICE_MODES: dict[str, Literal["auto", "none", "required"]] = {
    "auto": "auto",
    "none": "none",
    "required": "required",
}
_PLAIN_FORMATS: dict[str, Literal["text", "json_object"]] = {
    "text": "text",
    "json_object": "json_object",
}


def decode_chat_request(body: bytes) -> ChatRequest:
    """Parse a client chat request.

    Raises ``InvalidRequestError`` (or ``NativeFeatureUnsupportedError`` for OpenAI features
    the IR cannot carry, such as ``n`` > 1 or audio parts) with ``param`` naming the field.
    """
    obj = decode_object(body)
    for legacy, replacement in _LEGACY.items():
        if obj.get(legacy) is not None:
            raise InvalidRequestError(
                f"`{legacy}` is deprecated and not supported; use `{replacement}`", param=legacy
            )
    _check_n(obj.get("n"))
    _check_logprobs(obj)
    stream_options = _stream_options(obj.get("stream_options"))
    extensions = {
        key: value for key, value in obj.items() if key not in _CONSUMED and value is not None
    }
    if stream_options:
        extensions["stream_options"] = stream_options
    tools = _tools(obj.get("tools"))
    tool_choice = _tool_choice(obj.get("tool_choice"))
    _check_tool_choice(tool_choice, tools)
    return ChatRequest(
        model=_model(obj),
        messages=decode_messages(required(obj, "messages", "messages")),
        tools=tools,
        tool_choice=tool_choice,
        parallel_tool_calls=optional_bool(obj, "parallel_tool_calls", "parallel_tool_calls"),
        response_format=_response_format(obj.get("response_format")),
        sampling=_sampling(obj),
        stop=_stop(obj.get("stop")),
        max_tokens=_max_tokens(obj),
        reasoning=_reasoning(obj.get("reasoning_effort")),
        stream=bool(optional_bool(obj, "stream", "stream")),
        include_usage=_include_usage(obj.get("stream_options")),
        user=optional_str(obj, "user", "user"),
        extensions={"openai": extensions} if extensions else {},
    )


def _reasoning(effort: object) -> Reasoning | None:
    if effort is None:
        return None
    if effort not in _EFFORTS:
        raise invalid("reasoning_effort", "one of minimal, low, medium, high", effort)
    return Reasoning(effort=_EFFORTS[effort])


def _model(obj: JSONObject) -> str:
    model = as_str(required(obj, "model", "model"), "model")
    if not model:
        raise invalid("model", "a non-empty string")
    return model


def _check_logprobs(obj: JSONObject) -> None:
    """gw's answers carry no log probabilities (the IR has no place for them): asking for
    them is refused, rather than answered with ``logprobs: null`` as if there were none."""
    if obj.get("logprobs") is True or obj.get("top_logprobs") is not None:
        param = "logprobs" if obj.get("logprobs") is True else "top_logprobs"
        raise NativeFeatureUnsupportedError(
            f"`{param}`: gw does not return log probabilities; leave it out", param=param
        )


def _check_n(value: object) -> None:
    if value is not None and as_int(value, "n") != 1:
        raise NativeFeatureUnsupportedError(
            "`n` must be 1: gw returns exactly one choice", param="n"
        )


def _max_tokens(obj: JSONObject) -> int | None:
    # Both fields may come; max_completion_tokens wins because it is the newer field
    # (OpenAI deprecated max_tokens in its favour), not because it is smaller.
    result: int | None = None
    for key in ("max_tokens", "max_completion_tokens"):
        value = obj.get(key)
        if value is None:
            continue
        result = as_int(value, key)
        if result < 1:
            raise invalid(key, "a positive integer")
    return result


def _sampling(obj: JSONObject) -> Sampling:
    values: dict[str, float | None] = {}
    for name, low, high in _SAMPLING_RANGES:
        value = obj.get(name)
        values[name] = None if value is None else as_number(value, name, low, high)
    seed = obj.get("seed")
    return Sampling(
        temperature=values["temperature"],
        top_p=values["top_p"],
        frequency_penalty=values["frequency_penalty"],
        presence_penalty=values["presence_penalty"],
        seed=None if seed is None else as_int(seed, "seed"),
    )


def _stop(value: object) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    items = as_list(value, "stop")
    return tuple(as_str(item, f"stop[{i}]") for i, item in enumerate(items))


def _stream_options(value: object) -> JSONObject:
    """The stream options other than include_usage, kept for OpenAI-shaped upstreams."""
    if value is None:
        return {}
    obj = as_object(value, "stream_options")
    return {key: item for key, item in obj.items() if key != "include_usage"}


def _include_usage(value: object) -> bool:
    if value is None:
        return False
    return bool(
        optional_bool(
            as_object(value, "stream_options"), "include_usage", "stream_options.include_usage"
        )
    )


def _tools(value: object) -> tuple[ToolDefinition, ...]:
    if value is None:
        return ()
    items = as_list(value, "tools")
    return tuple(_tool(item, f"tools[{i}]") for i, item in enumerate(items))


def _tool(value: object, param: str) -> ToolDefinition:
    obj = as_object(value, param)
    kind = as_str(required(obj, "type", f"{param}.type"), f"{param}.type")
    if kind != "function":
        if kind == "custom":
            raise NativeFeatureUnsupportedError(
                f"`{param}.type`: custom tools are not supported", param=f"{param}.type"
            )
        raise invalid(f"{param}.type", "`function`")
    fn = as_object(required(obj, "function", f"{param}.function"), f"{param}.function")
    parameters = fn.get("parameters")
    return ToolDefinition(
        name=as_str(required(fn, "name", f"{param}.function.name"), f"{param}.function.name"),
        description=optional_str(fn, "description", f"{param}.function.description"),
        parameters=None
        if parameters is None
        else as_object(parameters, f"{param}.function.parameters"),
        strict=optional_bool(fn, "strict", f"{param}.function.strict"),
    )


def _check_tool_choice(choice: ToolChoice | None, tools: tuple[ToolDefinition, ...]) -> None:
    """A forced tool must be one of the tools offered (OpenAI answers 400 too)."""
    if choice is None or choice.mode not in ("required", "tool"):
        return
    if not tools:
        raise InvalidRequestError(
            "`tool_choice` asks for a tool call but `tools` is empty", param="tool_choice"
        )
    if choice.name is not None and choice.name not in {tool.name for tool in tools}:
        raise InvalidRequestError(
            f"`tool_choice` names function {choice.name!r}, which is not in `tools`",
            param="tool_choice.function.name",
        )


def _tool_choice(value: object) -> ToolChoice | None:
    if value is None:
        return None
    if isinstance(value, str):
        mode = _TOOL_CHOICE_MODES.get(value)
        if mode is None:
            raise invalid("tool_choice", "`auto`, `none`, `required` or a function object")
        return ToolChoice(mode=mode)
    obj = as_object(value, "tool_choice")
    kind = obj.get("type")
    if kind != "function":
        if kind in ("allowed_tools", "custom"):
            raise NativeFeatureUnsupportedError(
                f"`tool_choice.type`: `{kind}` is not supported", param="tool_choice.type"
            )
        raise invalid("tool_choice.type", "`function`")
    fn = as_object(required(obj, "function", "tool_choice.function"), "tool_choice.function")
    name = as_str(required(fn, "name", "tool_choice.function.name"), "tool_choice.function.name")
    return ToolChoice(mode="tool", name=name)


def _response_format(value: object) -> ResponseFormat | None:
    if value is None:
        return None
    obj = as_object(value, "response_format")
    kind = as_str(required(obj, "type", "response_format.type"), "response_format.type")
    plain = _PLAIN_FORMATS.get(kind)
    if plain is not None:
        return ResponseFormat(type=plain)
    if kind != "json_schema":
        raise invalid("response_format.type", "`text`, `json_object` or `json_schema`")
    spec = as_object(
        required(obj, "json_schema", "response_format.json_schema"), "response_format.json_schema"
    )
    schema: Any = spec.get("schema")
    return ResponseFormat(
        type="json_schema",
        name=as_str(
            required(spec, "name", "response_format.json_schema.name"),
            "response_format.json_schema.name",
        ),
        json_schema=None
        if schema is None
        else as_object(schema, "response_format.json_schema.schema"),
        strict=optional_bool(spec, "strict", "response_format.json_schema.strict"),
        description=optional_str(spec, "description", "response_format.json_schema.description"),
    )
