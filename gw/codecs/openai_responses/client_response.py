"""IR answers as OpenAI ``response`` objects: the whole body of a non-streamed answer, and
the ``response`` that a stream's ``response.created`` / ``response.completed`` events carry.

The object echoes the request as OpenAI does (``tools``, ``tool_choice``, ``text``,
``reasoning``, ``max_output_tokens``, ...: rebuilt from the IR, plus the keys kept in
``extensions["openai_responses"]`` such as ``metadata``, ``store`` and
``previous_response_id``), so SDKs that read them back find them. Output items, ids:
``msg_`` / ``rs_`` / ``fc_`` + gw's request id and the item's position; a Responses
upstream's own items (``NativeBlock``) keep theirs.
"""

from __future__ import annotations

from typing import Any

import msgspec

from gw.codecs.openai_responses.namespaces import declared, split_name
from gw.ir import (
    ChatRequest,
    ChatResponse,
    FinishReason,
    NativeBlock,
    NativeFormat,
    SystemMessage,
    TextPart,
    ThinkingPart,
    ToolCall,
    Usage,
)

FORMAT: NativeFormat = "openai_responses"
_ENCODER = msgspec.json.Encoder()
# Keys of extensions["openai_responses"] echoed in the response object.
_ECHOED = ("metadata", "previous_response_id", "store", "truncation", "service_tier",
           "prompt_cache_key", "safety_identifier", "background", "top_logprobs",
           "max_tool_calls")  # fmt: skip
# IR finish -> (status, incomplete_details.reason).
_ENDINGS: dict[FinishReason, tuple[str, str | None]] = {
    "stop": ("completed", None),
    "tool_calls": ("completed", None),
    "length": ("incomplete", "max_output_tokens"),
    "content_filter": ("incomplete", "content_filter"),
    "error": ("failed", None),
    # A provider paused a long turn (Anthropic's pause_turn): the answer so far is whole.
    "pause": ("completed", None),
}

JSONObject = dict[str, Any]


def item_id(prefix: str, response_id: str, index: int) -> str:
    """An output item's id: its kind's prefix, the response's id and its position."""
    return f"{prefix}_{response_id.partition('_')[2] or response_id}_{index}"


def usage_object(usage: Usage) -> JSONObject:
    return {
        "input_tokens": usage.input_tokens,
        "input_tokens_details": {
            "cached_tokens": usage.cached_input_tokens,
            "cache_write_tokens": usage.cache_write_tokens,
        },
        "output_tokens": usage.output_tokens,
        "output_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
        "total_tokens": usage.total_tokens,
    }


def ending(reason: FinishReason) -> tuple[str, str | None]:
    """The response ``status`` and ``incomplete_details.reason`` for an IR finish."""
    return _ENDINGS[reason]


def response_object(
    request: ChatRequest,
    *,
    response_id: str,
    created_at: int,
    model: str,
    status: str,
    output: list[JSONObject],
    usage: Usage | None = None,
    incomplete_reason: str | None = None,
    error: JSONObject | None = None,
) -> JSONObject:
    """The ``response`` object, with the request's settings echoed."""
    body: JSONObject = {
        "id": response_id,
        "object": "response",
        "created_at": created_at,
        "status": status,
        "error": error,
        "incomplete_details": (
            None if incomplete_reason is None else {"reason": incomplete_reason}
        ),
        "instructions": _instructions(request),
        "max_output_tokens": request.max_tokens,
        "model": model,
        "output": output,
        "parallel_tool_calls": request.parallel_tool_calls is not False,
        "reasoning": _reasoning(request),
        "temperature": request.sampling.temperature,
        "text": _text(request),
        "tool_choice": _tool_choice(request),
        "tools": _tools(request),
        "top_p": request.sampling.top_p,
        "usage": None if usage is None else usage_object(usage),
        "user": request.user,
    }
    kept = request.extensions.get(FORMAT, {})
    for key in _ECHOED:
        body[key] = kept.get(key)
    if body["metadata"] is None:
        body["metadata"] = {}
    return body


def output_items(
    response: ChatResponse, response_id: str, namespaces: frozenset[str] = frozenset()
) -> list[JSONObject]:
    """The answer's output items, in the order the model produced them when known;
    ``namespaces``: the request's (a call to a joined name goes back split)."""
    blocks: tuple[TextPart | ThinkingPart | NativeBlock | ToolCall, ...]
    if response.blocks:
        blocks = response.blocks
    else:
        text = (TextPart(text=response.text),) if response.text else ()
        blocks = (*response.thinking, *text, *response.tool_calls)
    items: list[JSONObject] = []
    for position, block in enumerate(blocks):
        index = len(items)
        if isinstance(block, ThinkingPart) and _reasoning_item_at(blocks, position + 1):
            continue  # the item after it carries this summary in its own form
        if isinstance(block, TextPart):
            items.append(message_item(item_id("msg", response_id, index), block.text))
        elif isinstance(block, ThinkingPart):
            items.append(reasoning_item(item_id("rs", response_id, index), block.text))
        elif isinstance(block, ToolCall):
            items.append(function_call_item(item_id("fc", response_id, index), block, namespaces))
        elif block.format == FORMAT:
            items.append(block.data)
    if response.refusal:
        items.append(
            message_item(item_id("msg", response_id, len(items)), response.refusal, refusal=True)
        )
    return items


def _reasoning_item_at(blocks: tuple[object, ...], position: int) -> bool:
    """Whether ``blocks[position]`` is a Responses reasoning item (a Responses upstream's
    answer puts one right after the summary it carries)."""
    block = blocks[position] if position < len(blocks) else None
    return (
        isinstance(block, NativeBlock)
        and block.format == FORMAT
        and block.data.get("type") == "reasoning"
    )


def message_item(
    item: str, text: str, *, refusal: bool = False, status: str = "completed"
) -> JSONObject:
    return {
        "id": item,
        "type": "message",
        "status": status,
        "role": "assistant",
        "content": [refusal_part(text) if refusal else text_part(text)] if text or refusal else [],
    }


def text_part(text: str) -> JSONObject:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def refusal_part(text: str) -> JSONObject:
    return {"type": "refusal", "refusal": text}


def reasoning_item(item: str, summary: str) -> JSONObject:
    parts = [{"type": "summary_text", "text": summary}] if summary else []
    return {"id": item, "type": "reasoning", "summary": parts}


def function_call_item(
    item: str,
    call: ToolCall,
    namespaces: frozenset[str] = frozenset(),
    *,
    status: str = "completed",
) -> JSONObject:
    namespace, name = split_name(call.name, namespaces)
    body: JSONObject = {
        "id": item,
        "type": "function_call",
        "status": status,
        "call_id": call.id,
        "name": name,
        "arguments": call.arguments,
    }
    if namespace is not None:
        body["namespace"] = namespace
    return body


def encode_responses_response(
    response: ChatResponse, request: ChatRequest, *, response_id: str, created_at: int
) -> bytes:
    """The body of a non-streamed answer."""
    status, reason = ending(response.finish_reason)
    body = response_object(
        request,
        response_id=response_id,
        created_at=created_at,
        model=response.model or request.model,
        status=status,
        output=output_items(response, response_id, declared(request)),
        usage=response.usage,
        incomplete_reason=reason,
    )
    body["output_text"] = response.text or ""
    return _ENCODER.encode(body)


def _instructions(request: ChatRequest) -> str | None:
    first = request.messages[0] if request.messages else None
    if isinstance(first, SystemMessage):
        return "".join(part.text for part in first.content)
    return None


def _reasoning(request: ChatRequest) -> JSONObject:
    reasoning = request.reasoning
    if reasoning is None:
        return {"effort": None, "summary": None}
    return {"effort": reasoning.effort, "summary": reasoning.summary}


def _text(request: ChatRequest) -> JSONObject:
    fmt = request.response_format
    text: JSONObject = dict(request.extensions.get(FORMAT, {}).get("text") or {})
    if fmt is None:
        text["format"] = {"type": "text"}
    elif fmt.type != "json_schema":
        text["format"] = {"type": fmt.type}
    else:
        text["format"] = {
            "type": "json_schema",
            "name": fmt.name,
            "schema": fmt.json_schema,
            "strict": fmt.strict,
            "description": fmt.description,
        }
    return text


def _tool_choice(request: ChatRequest) -> Any:
    choice = request.tool_choice
    if choice is None:
        return request.extensions.get(FORMAT, {}).get("tool_choice", "auto")
    if choice.mode == "tool":
        return {"type": "function", "name": choice.name}
    return choice.mode


def _tools(request: ChatRequest) -> list[JSONObject]:
    """The tools as the client sent them: a namespace's functions inside it, once."""
    namespaces = declared(request)
    tools: list[JSONObject] = [
        {
            "type": "function",
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.parameters,
            "strict": tool.strict,
        }
        for tool in request.tools
        if split_name(tool.name, namespaces)[0] is None
    ]
    tools.extend(tool.data for tool in request.native_tools if tool.format == FORMAT)
    return tools
