"""IR messages -> a Responses request's ``instructions`` and ``input`` items.

The mapping is the one client_items.py reads, the other way:

- the first message, when it is a ``SystemMessage``, is ``instructions`` (its text parts
  joined by blank lines); a later one is a ``developer`` message item, in place;
- ``UserMessage`` -> a ``user`` message of ``input_text`` / ``input_image`` /
  ``input_file`` parts;
- an ``AssistantMessage``, in the order its blocks were produced: text -> an ``assistant``
  message (its text as a string); ``ToolCall`` -> a ``function_call`` item (its id is the
  ``call_id``); a ``NativeBlock`` of this format (a reasoning item with its
  ``encrypted_content``, a ``web_search_call``, ...) -> the item as it came. Thinking
  blocks (Anthropic's) and other formats' blocks are left out (upstream_request's notes);
- ``ToolMessage`` -> a ``function_call_output`` (a string, or parts when it holds an image
  or a file).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from gw.codecs.openai_responses.namespaces import split_name
from gw.errors import NativeFeatureUnsupportedError
from gw.ir import (
    AssistantMessage,
    ContentPart,
    FilePart,
    ImagePart,
    Message,
    NativeBlock,
    NativeFormat,
    SystemMessage,
    TextPart,
    ThinkingPart,
    ToolCall,
    ToolMessage,
    UserMessage,
)

FORMAT: NativeFormat = "openai_responses"
# Leading base64 characters of common image formats, for data that came without a type.
_MAGIC = (("iVBOR", "image/png"), ("/9j/", "image/jpeg"), ("R0lGOD", "image/gif"))
_DEFAULT_IMAGE_TYPE = "image/png"
_DEFAULT_FILE_TYPE = "application/pdf"

JSONObject = dict[str, Any]
Block = TextPart | ThinkingPart | NativeBlock | ToolCall


def encode_input(
    messages: Sequence[Message], namespaces: frozenset[str] = frozenset()
) -> tuple[str | None, list[JSONObject]]:
    """``(instructions, input items)`` for ``messages``; ``namespaces``: the request's
    (a call to a joined name goes back as name and namespace, namespaces.py)."""
    instructions = None
    if messages and isinstance(messages[0], SystemMessage):
        instructions = "\n\n".join(part.text for part in messages[0].content)
        messages = messages[1:]
    items: list[JSONObject] = []
    for message in messages:
        match message:
            case SystemMessage(content=parts):
                items.append(_message("developer", [_text_part(part) for part in parts]))
            case UserMessage(content=parts):
                items.append(_message("user", [input_part(part) for part in parts]))
            case AssistantMessage():
                items.extend(_assistant_items(message, namespaces))
            case ToolMessage(tool_call_id=call_id, content=parts):
                items.append(
                    {"type": "function_call_output", "call_id": call_id, "output": _output(parts)}
                )
    return instructions, items


def assistant_blocks(message: AssistantMessage) -> tuple[Block, ...]:
    """The turn's blocks in the order produced."""
    return message.blocks or (*message.content, *message.tool_calls)


def _assistant_items(message: AssistantMessage, namespaces: frozenset[str]) -> Iterable[JSONObject]:
    texts: list[str] = []
    for block in assistant_blocks(message):
        if isinstance(block, TextPart):
            texts.append(block.text)
            continue
        if texts:  # consecutive text blocks make one message item
            yield _said("".join(texts))
            texts = []
        if isinstance(block, ToolCall):
            namespace, name = split_name(block.name, namespaces)
            call = {"type": "function_call", "call_id": block.id, "name": name}
            if namespace is not None:
                call["namespace"] = namespace
            yield {**call, "arguments": block.arguments}
        elif isinstance(block, NativeBlock) and block.format == FORMAT:
            yield block.data
    if texts:
        yield _said("".join(texts))


def _said(text: str) -> JSONObject:
    """An earlier answer's text: a message with string content, which the API reads as
    ``output_text`` (a list would need the output item's ``id`` and ``status``, and
    ``input_text`` parts are refused for the assistant)."""
    return {"type": "message", "role": "assistant", "content": text}


def _message(role: str, content: list[JSONObject]) -> JSONObject:
    return {"type": "message", "role": role, "content": content}


def _text_part(part: TextPart) -> JSONObject:
    return {"type": "input_text", "text": part.text}


def input_part(part: ContentPart) -> JSONObject:
    """A user's (or a tool result's) part as an ``input_*`` part."""
    if isinstance(part, TextPart):
        return _text_part(part)
    if isinstance(part, ImagePart):
        return {
            "type": "input_image",
            "image_url": _image_url(part),
            "detail": part.detail or "auto",
        }
    return _file(part)


def _image_url(part: ImagePart) -> str:
    if part.url is not None:
        return part.url
    data = part.data or ""
    media_type = part.media_type or next(
        (kind for magic, kind in _MAGIC if data.startswith(magic)), _DEFAULT_IMAGE_TYPE
    )
    return f"data:{media_type};base64,{data}"


def _file(part: FilePart) -> JSONObject:
    """``input_file``: by ``file_id``, by URL (``file_url``), or inline (``file_data``)."""
    out: JSONObject = {"type": "input_file"}
    if part.file_id is not None:
        out["file_id"] = part.file_id
    elif part.url is not None and part.url.startswith("data:"):
        out["file_data"] = part.url
    elif part.url is not None:
        out["file_url"] = part.url
    elif part.data is not None:
        out["file_data"] = f"data:{part.media_type or _DEFAULT_FILE_TYPE};base64,{part.data}"
    else:
        raise NativeFeatureUnsupportedError(
            "a file part has no data, URL or file id; send the file inline", param="input_file"
        )
    if part.filename is not None:
        out["filename"] = part.filename
    return out


def _output(parts: tuple[ContentPart, ...]) -> str | list[JSONObject]:
    """A tool result: its text, or its parts when it holds more than text."""
    if all(isinstance(part, TextPart) for part in parts):
        return "".join(part.text for part in parts if isinstance(part, TextPart))
    return [input_part(part) for part in parts]
