"""IR request -> the JSON body for Anthropic's ``POST /v1/messages``.

Field by field (the conversation itself: ``upstream_messages``):

- ``max_tokens``: the request's, else ``default_max_tokens`` (Anthropic requires one;
  DESIGN.md invariant 7).
- ``temperature``, ``top_p``, ``top_k`` as given, under API version 2023-06-01; version
  2026-10-21 removed them (Anthropic answers 400), so there they are refused.
  ``stop`` -> ``stop_sequences``; ``user`` -> ``metadata.user_id``.
- tools -> ``{name, description, input_schema, strict, cache_control}``; a tool without
  parameters gets the empty object schema Anthropic requires. Anthropic-defined tools
  (``native_tools`` of format anthropic: web search, code execution, ...) follow them,
  verbatim. ``tool_choice``
  auto/required/tool/none -> ``{"type": auto/any/tool/none}``;
  ``parallel_tool_calls=False`` -> ``disable_parallel_tool_use``. Without tools, auto/none
  choices are left out.
- ``reasoning.budget_tokens`` -> ``thinking: {type: enabled, budget_tokens}`` (0 ->
  ``{type: disabled}``); ``reasoning.adaptive`` -> ``{type: adaptive}`` (an Anthropic
  client's effort stays in its ``output_config``); an ``effort`` alone -> a budget by
  ``EFFORT_BUDGET_SHARE`` (``none``: disabled).
- ``response_format`` json_schema -> ``output_config.format`` (structured outputs), from
  an Anthropic client's ``output_config.format`` or an OpenAI client's ``response_format``.
- Refused with ``NativeFeatureUnsupportedError`` naming the field, never dropped:
  ``frequency_penalty``, ``presence_penalty``, ``seed`` and ``response_format`` json_object
  (Anthropic has no such parameters; its JSON output needs a schema).
- ``extensions["anthropic"]`` is merged in last; keys gw computed win (inside
  ``output_config`` too), but inside ``thinking`` the client's own words win: what it
  keeps there is what the IR cannot say (``display``; the types ``disabled`` and
  ``between_tools``). Other providers' extensions are ignored.
"""

from __future__ import annotations

from typing import Any

import msgspec

from gw.codecs.anthropic_messages.upstream_messages import JSONObject, encode_conversation
from gw.codecs.cache_marks import encode_cache_mark
from gw.errors import InvalidRequestError, NativeFeatureUnsupportedError
from gw.ir import ChatRequest, Reasoning, ResponseFormat, ToolChoice, ToolDefinition

_ENCODER = msgspec.json.Encoder()

# The ``anthropic-version`` gw speaks unless a provider's ``api_version`` says otherwise: the
# last one that takes temperature, top_p and top_k, which clients still send.
DEFAULT_API_VERSION = "2023-06-01"
# The first API version without temperature, top_p and top_k (versions are ISO dates).
SAMPLING_REMOVED_IN = "2026-10-21"

# Anthropic's smallest thinking budget; a budget must also stay below max_tokens.
MIN_THINKING_BUDGET = 1024
# reasoning.effort -> share of max_tokens given to thinking, at least MIN_THINKING_BUDGET:
# with the 4096 default, minimal/low 1024, medium 2048, high 3276 tokens.
EFFORT_BUDGET_SHARE: dict[str, float] = {
    "minimal": 0.0, "low": 0.25, "medium": 0.5, "high": 0.8, "xhigh": 0.9,
}  # fmt: skip
_TOOL_CHOICE_TYPES = {"auto": "auto", "required": "any", "tool": "tool", "none": "none"}
_EMPTY_SCHEMA: JSONObject = {"type": "object", "properties": {}}


def encode_upstream_request(
    request: ChatRequest,
    *,
    model: str,
    stream: bool,
    default_max_tokens: int,
    api_version: str = DEFAULT_API_VERSION,
) -> bytes:
    """The request body for ``api_version`` (the ``anthropic-version`` header sent with it);
    raises ``NativeFeatureUnsupportedError`` for what Anthropic lacks."""
    _refuse_unsupported(request, api_version)
    system, messages = encode_conversation(request.messages)
    max_tokens = request.max_tokens if request.max_tokens is not None else default_max_tokens
    body: JSONObject = {
        "model": model,
        "messages": messages,
        "max_tokens": max_tokens,
        "stream": stream,
    }
    if system is not None:
        body["system"] = system
    sampling = request.sampling
    for key, value in (
        ("temperature", sampling.temperature),
        ("top_p", sampling.top_p),
        ("top_k", sampling.top_k),
    ):
        if value is not None:
            body[key] = value
    if request.stop:
        body["stop_sequences"] = list(request.stop)
    if request.tools or request.native_tools:
        body["tools"] = [_tool(tool) for tool in request.tools] + [
            tool.data for tool in request.native_tools if tool.format == "anthropic"
        ]
    choice = _tool_choice(request)
    if choice is not None:
        body["tool_choice"] = choice
    if request.reasoning is not None:
        thinking = _thinking(request.reasoning, max_tokens)
        if thinking is not None:
            body["thinking"] = thinking
    if request.response_format is not None:
        output_format = _output_format(request.response_format)
        if output_format is not None:
            body["output_config"] = {"format": output_format}
    if request.user is not None:
        body["metadata"] = {"user_id": request.user}
    _merge_extensions(body, request.extensions.get("anthropic", {}))
    return _ENCODER.encode(body)


def _refuse_unsupported(request: ChatRequest, api_version: str) -> None:
    sampling = request.sampling
    fields = [
        ("frequency_penalty", sampling.frequency_penalty),
        ("presence_penalty", sampling.presence_penalty),
        ("seed", sampling.seed),
    ]
    if api_version >= SAMPLING_REMOVED_IN:
        fields += [
            ("temperature", sampling.temperature),
            ("top_p", sampling.top_p),
            ("top_k", sampling.top_k),
        ]
    for field, value in fields:
        if value is not None:
            raise NativeFeatureUnsupportedError(
                f"`{field}` is not supported by Anthropic (API version {api_version}); leave "
                "it out or route this request to a provider that has it",
                param=field,
            )
    if request.response_format is not None and request.response_format.type == "json_object":
        raise NativeFeatureUnsupportedError(
            "`response_format` json_object is not supported by Anthropic, whose JSON output "
            "needs a schema; send a json_schema response format instead",
            param="response_format",
        )


def _tool(tool: ToolDefinition) -> JSONObject:
    out: JSONObject = {"name": tool.name}
    if tool.description is not None:
        out["description"] = tool.description
    # OpenAI clients send no parameters (or {}) for a tool without input.
    out["input_schema"] = tool.parameters or _EMPTY_SCHEMA
    if tool.strict is not None:
        out["strict"] = tool.strict
    if tool.cache is not None:
        out["cache_control"] = encode_cache_mark(tool.cache)
    if tool.defer_loading:
        out["defer_loading"] = True
    return out


def _tool_choice(request: ChatRequest) -> JSONObject | None:
    choice = request.tool_choice or ToolChoice(mode="auto")
    no_parallel = request.parallel_tool_calls is False
    if not request.tools and not request.native_tools and choice.mode in ("auto", "none"):
        return None  # nothing to choose from; Anthropic refuses a tool_choice without tools
    if request.tool_choice is None and not no_parallel:
        return None
    out: JSONObject = {"type": _TOOL_CHOICE_TYPES[choice.mode]}
    if choice.mode == "tool":
        if not choice.name:
            raise InvalidRequestError("tool_choice names no tool", param="tool_choice")
        out["name"] = choice.name
    if no_parallel and choice.mode != "none":
        out["disable_parallel_tool_use"] = True
    return out


def request_notes(request: ChatRequest) -> list[str]:
    """What of ``request``'s own settings Anthropic has no place for: a reasoning summary
    asked alone (Anthropic's thinking comes summarized whenever it is on, and nothing
    turned it on), a response schema's description."""
    notes = []
    reasoning = request.reasoning
    if (
        reasoning is not None
        and reasoning.summary is not None
        and reasoning.effort is None
        and reasoning.budget_tokens is None
        and not reasoning.adaptive
    ):
        notes.append("reasoning.summary: not sent (no thinking was asked for)")
    fmt = request.response_format
    if fmt is not None and fmt.description is not None:
        notes.append("response_format.json_schema.description: not sent (no Anthropic field)")
    return notes


def _thinking(reasoning: Reasoning, max_tokens: int) -> JSONObject | None:
    if reasoning.budget_tokens is not None:
        if reasoning.budget_tokens == 0:
            return {"type": "disabled"}
        return {"type": "enabled", "budget_tokens": reasoning.budget_tokens}
    if reasoning.adaptive:
        return {"type": "adaptive"}
    if reasoning.effort is None:
        return None
    if reasoning.effort == "none":
        return {"type": "disabled"}
    budget = max(MIN_THINKING_BUDGET, int(max_tokens * EFFORT_BUDGET_SHARE[reasoning.effort]))
    if budget >= max_tokens:
        raise NativeFeatureUnsupportedError(
            f"Anthropic thinks with at least {MIN_THINKING_BUDGET} tokens, which must stay below "
            f"max_tokens ({max_tokens}, after any policy or catalog ceiling); raise max_tokens "
            "or that ceiling, or leave out the reasoning effort",
            param="max_tokens",
        )
    return {"type": "enabled", "budget_tokens": budget}


def _output_format(fmt: ResponseFormat) -> JSONObject | None:
    if fmt.type != "json_schema":
        return None  # "text" is the default; json_object was refused above
    if fmt.json_schema is None:
        raise InvalidRequestError(
            "response_format json_schema has no schema", param="response_format"
        )
    return {"type": "json_schema", "schema": fmt.json_schema}


def _merge_extensions(body: JSONObject, extensions: dict[str, Any]) -> None:
    for key, value in extensions.items():
        current = body.get(key)
        if current is None:
            body[key] = value
        elif key == "output_config" and isinstance(value, dict):
            body[key] = {**value, **current}  # e.g. the client's effort beside gw's format
        elif key == "thinking" and isinstance(value, dict) and isinstance(current, dict):
            body[key] = {**current, **value}  # e.g. the client's display beside gw's type
