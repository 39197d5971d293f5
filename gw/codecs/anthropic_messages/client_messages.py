"""Anthropic ``system`` and ``messages`` -> IR messages, strictly.

Roles: ``user`` and ``assistant``, plus ``system`` (text only), which the Anthropic SDK also
accepts inside ``messages`` and which becomes a ``SystemMessage`` where it stands. Anthropic
has no tool role: a user message's ``tool_result`` blocks become ``ToolMessage``\\ s, in
order, followed by a ``UserMessage`` with the message's other blocks if it has any. An
assistant message's ``tool_use`` blocks become its ``tool_calls``; its text and thinking
blocks stay in order in ``content``; when it interleaves them (interleaved thinking), all
its blocks also go in ``blocks`` in their order.

An assistant message's blocks the IR does not model (server tool calls and their results:
``server_tool_use``, ``web_search_tool_result``, ``code_execution_tool_result``,
``mcp_tool_use``, ``mcp_tool_result``, ``container_upload``, ..., any type gw does not know,
and text with ``citations``) are kept verbatim as ``NativeBlock("anthropic", block)`` in
their place: an Anthropic upstream gets them back as they were, another leaves them out and
says so (``foreign_fields``).

As Anthropic requires, every message has non-empty content except a final assistant
message (a prefill), and text blocks are non-empty.
"""

from __future__ import annotations

from collections.abc import Callable

from gw.codecs.anthropic_messages.client_blocks import (
    block_type,
    image_block,
    misplaced_block,
    redacted_thinking_block,
    text_block,
    thinking_block,
    tool_result_block,
    tool_use_block,
    unsupported_block,
)
from gw.codecs.fields import (
    JSONObject,
    as_list,
    as_object,
    as_str,
    invalid,
    required,
)
from gw.errors import InvalidRequestError, NativeFeatureUnsupportedError
from gw.ir import (
    AssistantMessage,
    ContentPart,
    Message,
    NativeBlock,
    SystemMessage,
    TextPart,
    ThinkingPart,
    ToolCall,
    UserMessage,
    assistant_from_blocks,
)

_USER_ONLY = frozenset({"tool_result"})
_ASSISTANT_ONLY = frozenset({"tool_use", "thinking", "redacted_thinking"})


def decode_system(value: object) -> SystemMessage | None:
    """The top-level ``system``: a string or an array of text blocks; empty means none."""
    if value is None:
        return None
    content = _system_content(value, "system")
    return SystemMessage(content=content) if content else None


def decode_messages(value: object) -> tuple[Message, ...]:
    """Decode the ``messages`` array; it must be non-empty."""
    items = as_list(value, "messages")
    if not items:
        raise InvalidRequestError("`messages` must contain at least one message", param="messages")
    last = len(items) - 1
    messages: list[Message] = []
    for i, item in enumerate(items):
        param = f"messages[{i}]"
        obj = as_object(item, param)
        role = as_str(required(obj, "role", f"{param}.role"), f"{param}.role")
        decoder = _DECODERS.get(role)
        if decoder is None:
            raise invalid(f"{param}.role", "`user` or `assistant`")
        content = required(obj, "content", f"{param}.content")
        if not isinstance(content, str | list):
            raise invalid(f"{param}.content", "a string or an array of content blocks", content)
        if not content and not (role == "assistant" and i == last):
            raise InvalidRequestError(
                f"`{param}.content` must be non-empty (only a final assistant message may be "
                "empty)",
                param=f"{param}.content",
            )
        messages.extend(decoder(content, f"{param}.content"))
    return tuple(messages)


def _decode_user(content: object, param: str) -> list[Message]:
    if isinstance(content, str):
        return [UserMessage(content=(TextPart(text=content),))]
    results: list[Message] = []
    parts: list[ContentPart] = []
    for i, item in enumerate(as_list(content, param)):
        item_param = f"{param}[{i}]"
        obj = as_object(item, item_param)
        kind = block_type(obj, item_param)
        if kind == "text":
            parts.append(text_block(obj, item_param))
        elif kind == "image":
            parts.append(image_block(obj, item_param))
        elif kind == "tool_result":
            results.append(tool_result_block(obj, item_param))
        elif kind in _ASSISTANT_ONLY:
            raise misplaced_block(kind, item_param, "user")
        else:
            raise unsupported_block(kind, item_param)
    if parts:
        results.append(UserMessage(content=tuple(parts)))
    return results


def _decode_assistant(content: object, param: str) -> list[Message]:
    if isinstance(content, str):
        text = (TextPart(text=content),) if content else ()
        return [AssistantMessage(content=text)]
    ordered: list[TextPart | ThinkingPart | NativeBlock | ToolCall] = []
    for i, item in enumerate(as_list(content, param)):
        item_param = f"{param}[{i}]"
        obj = as_object(item, item_param)
        kind = block_type(obj, item_param)
        if kind == "text":
            ordered.append(text_block(obj, item_param, cited=True))
        elif kind == "thinking":
            ordered.append(thinking_block(obj, item_param))
        elif kind == "redacted_thinking":
            ordered.append(redacted_thinking_block(obj, item_param))
        elif kind == "tool_use":
            ordered.append(tool_use_block(obj, item_param))
        elif kind == "image":
            raise NativeFeatureUnsupportedError(
                f"`{item_param}.type`: images in assistant messages are not supported by gw",
                param=f"{item_param}.type",
            )
        elif kind in _USER_ONLY:
            raise misplaced_block(kind, item_param, "assistant")
        else:
            ordered.append(NativeBlock(format="anthropic", data=obj))
    return [assistant_from_blocks(ordered)]


def _decode_system(content: object, param: str) -> list[Message]:
    return [SystemMessage(content=_system_content(content, param))]


_DECODERS: dict[str, Callable[[object, str], list[Message]]] = {
    "user": _decode_user,
    "assistant": _decode_assistant,
    "system": _decode_system,
}


def _system_content(value: object, param: str) -> tuple[TextPart, ...]:
    if isinstance(value, str):
        return (TextPart(text=value),) if value else ()
    blocks: list[TextPart] = []
    for i, item in enumerate(as_list(value, param)):
        item_param = f"{param}[{i}]"
        obj: JSONObject = as_object(item, item_param)
        kind = block_type(obj, item_param)
        if kind != "text":
            raise invalid(f"{item_param}.type", "`text`")
        blocks.append(text_block(obj, item_param))
    return tuple(blocks)
