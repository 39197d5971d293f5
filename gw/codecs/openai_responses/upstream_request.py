"""IR request -> the JSON body for ``POST {base_url}/responses`` (a ``kind: openai_responses``
upstream).

Messages become ``instructions`` and ``input`` items (upstream_items.py); function tools
and the client's provider-side tools of this format (``native_tools``: ``web_search``,
``file_search``, ...) ``tools``; the response format ``text.format``; reasoning
``reasoning: {effort, summary}``; the limit ``max_output_tokens``. What a Responses client
sent that the IR has no field for (``extensions["openai_responses"]``:
``previous_response_id``, ``include``, ``truncation``, ``metadata``, a built-in tool's
``tool_choice``, ``text.verbosity``, ...) goes back into the body as it came.

Two choices a caller should know:

- ``store`` is ``false`` unless the client sent ``store``: gw stores no prompts, so it does
  not ask OpenAI to keep them either (OpenAI's own default is ``true``).
- A function tool whose ``strict`` the client left unset is sent ``strict: false``: unset
  means loose in Chat Completions and Anthropic, while the Responses API would make an
  unset tool strict (and every optional parameter required).
"""

from __future__ import annotations

from typing import Any

import msgspec

from gw.codecs.cache_marks import cache_mark_note
from gw.codecs.foreign_fields import foreign_field_notes
from gw.codecs.openai_chat.upstream_request import reasoning_effort, reasoning_notes
from gw.codecs.openai_responses.namespaces import declared, split_name
from gw.codecs.openai_responses.upstream_items import FORMAT, assistant_blocks, encode_input
from gw.ir import (
    AssistantMessage,
    ChatRequest,
    Reasoning,
    ResponseFormat,
    ThinkingPart,
    ToolChoice,
    ToolDefinition,
    ToolMessage,
)

_ENCODER = msgspec.json.Encoder()
# Keys of extensions["openai_responses"] that never override what gw computed: routing
# (model), the conversation, streaming, the token limit (a ceiling may have clamped it),
# and background (gw runs background responses itself, and answers a stream or a body).
_PROTECTED = frozenset(
    {"model", "input", "instructions", "stream", "max_output_tokens", "background"}
)
UPSTREAM_NAME = "OpenAI Responses"

JSONObject = dict[str, Any]


def encode_upstream_request(request: ChatRequest, *, model: str, stream: bool) -> bytes:
    """The request body; see the module docstring for what goes where."""
    namespaces = declared(request)
    instructions, items = encode_input(request.messages, namespaces)
    body: JSONObject = {"model": model, "stream": stream, "store": False}
    if instructions is not None:
        body["instructions"] = instructions
    if items:
        body["input"] = items
    # A namespace's functions go inside it (the native tool), not beside it.
    tools = [_tool(tool) for tool in request.tools if not split_name(tool.name, namespaces)[0]]
    tools.extend(tool.data for tool in request.native_tools if tool.format == FORMAT)
    if tools:
        body["tools"] = tools
    if request.tool_choice is not None:
        body["tool_choice"] = _tool_choice(request.tool_choice)
    if request.parallel_tool_calls is not None:
        body["parallel_tool_calls"] = request.parallel_tool_calls
    if request.response_format is not None:
        body["text"] = {"format": _text_format(request.response_format)}
    reasoning = None if request.reasoning is None else _reasoning(request.reasoning)
    if reasoning:
        body["reasoning"] = reasoning
    if request.max_tokens is not None:
        body["max_output_tokens"] = request.max_tokens
    for key, value in (
        ("temperature", request.sampling.temperature),
        ("top_p", request.sampling.top_p),
        ("user", request.user),
    ):
        if value is not None:
            body[key] = value
    _merge_extensions(body, request.extensions.get(FORMAT, {}))
    return _ENCODER.encode(body)


def lossy_notes(request: ChatRequest) -> list[str]:
    """What ``encode_upstream_request`` leaves out because this format has no place for it."""
    sampling = request.sampling
    unsent = [
        name
        for name, value in (
            ("sampling.top_k", sampling.top_k),
            ("sampling.frequency_penalty", sampling.frequency_penalty),
            ("sampling.presence_penalty", sampling.presence_penalty),
            ("sampling.seed", sampling.seed),
        )
        if value is not None
    ]
    if request.stop:
        unsent.append("stop sequences")
    notes = (
        [f"{', '.join(unsent)}: not sent (the {UPSTREAM_NAME} format has none)"] if unsent else []
    )
    notes.extend(
        f"messages[{position}].name: not sent (the {UPSTREAM_NAME} format has no message names)"
        for position, message in enumerate(request.messages)
        if getattr(message, "name", None) is not None
    )
    if any(
        isinstance(message, AssistantMessage)
        and any(isinstance(block, ThinkingPart) for block in assistant_blocks(message))
        for message in request.messages
    ):
        notes.append(
            "earlier turns' thinking blocks: not sent (Responses takes back only its own "
            "reasoning items)"
        )
    if any(isinstance(message, ToolMessage) and message.is_error for message in request.messages):
        notes.append(
            f"tool results' is_error: not sent (the {UPSTREAM_NAME} format has no such flag)"
        )
    return (
        notes
        + reasoning_notes(request.reasoning)
        + cache_mark_note(request, UPSTREAM_NAME)
        + foreign_field_notes(request, FORMAT)
    )


def _reasoning(reasoning: Reasoning) -> JSONObject:
    out: JSONObject = {}
    effort = reasoning_effort(reasoning)
    if effort is not None:
        out["effort"] = effort
    if reasoning.summary is not None:
        out["summary"] = reasoning.summary
    return out


def _merge_extensions(body: JSONObject, extensions: JSONObject) -> None:
    for key, value in extensions.items():
        if key in _PROTECTED:
            continue
        if key == "text" and isinstance(value, dict):
            # text.verbosity and the like, beside the format gw computed.
            body["text"] = {**value, **body.get("text", {})}
        else:
            body[key] = value


def _tool(tool: ToolDefinition) -> JSONObject:
    out: JSONObject = {"type": "function", "name": tool.name}
    if tool.description is not None:
        out["description"] = tool.description
    out["parameters"] = tool.parameters
    out["strict"] = bool(tool.strict)
    return out


def _tool_choice(choice: ToolChoice) -> str | JSONObject:
    if choice.mode == "tool":
        return {"type": "function", "name": choice.name or ""}
    return choice.mode


def _text_format(fmt: ResponseFormat) -> JSONObject:
    if fmt.type != "json_schema":
        return {"type": fmt.type}
    out: JSONObject = {"type": "json_schema", "name": fmt.name or "response"}
    for key, value in (
        ("description", fmt.description),
        ("schema", fmt.json_schema),
        ("strict", fmt.strict),
    ):
        if value is not None:
            out[key] = value
    return out
