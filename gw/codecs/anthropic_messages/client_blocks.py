"""Anthropic content blocks -> IR parts, one decoder per block type, strictly.

Blocks the IR carries: ``text``, ``image`` (base64 or URL source), ``tool_use``,
``tool_result`` (text and image content), ``thinking`` and ``redacted_thinking``. In a
user message, every other type Anthropic defines (``document``, ``search_result``,
``container_upload``, ...) and any type gw has never heard of is refused with
``NativeFeatureUnsupportedError`` naming it: dropping a block would change what the model
is asked. (An assistant message keeps such blocks verbatim: see client_messages.)

``cache_control`` (a prompt-cache breakpoint) becomes the part's ``CacheMark`` on text,
image, tool_use and tool_result blocks, and on text and image blocks inside a tool result.
Keys of a block the IR has no place for are ignored when they do not change the meaning
(``citations`` when null or empty; ``caller`` when ``direct``) and refused when they do
(citations given, a server-tool ``caller``, image ``transformations``).
"""

from __future__ import annotations

import msgspec

from gw.codecs.cache_marks import decode_cache_mark
from gw.codecs.fields import (
    JSONObject,
    as_bool,
    as_list,
    as_object,
    as_str,
    invalid,
    is_type_name,
    required,
)
from gw.errors import InvalidRequestError, NativeFeatureUnsupportedError
from gw.ir import (
    ContentPart,
    ImagePart,
    NativeBlock,
    TextPart,
    ThinkingPart,
    ToolCall,
    ToolMessage,
)

# Media types Anthropic accepts for a base64 image source.
IMAGE_MEDIA_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})

_ARGUMENTS = msgspec.json.Encoder()


def block_type(obj: JSONObject, param: str) -> str:
    return as_str(required(obj, "type", f"{param}.type"), f"{param}.type")


def unsupported_block(kind: str, param: str) -> NativeFeatureUnsupportedError:
    """The error for a block type the IR cannot carry (raise it)."""
    return NativeFeatureUnsupportedError(
        f"`{param}.type`: "
        + (f"`{kind}` blocks are" if is_type_name(kind) else "blocks of an unknown type are")
        + " not supported by gw",
        param=f"{param}.type",
    )


def misplaced_block(kind: str, param: str, role: str) -> InvalidRequestError:
    """The error for a known block in a role that cannot hold it (raise it)."""
    return InvalidRequestError(
        f"`{param}.type`: `{kind}` blocks are not allowed in {role} messages",
        param=f"{param}.type",
    )


def text_block(obj: JSONObject, param: str, *, cited: bool = False) -> TextPart:
    """A text block; ``cited``: an assistant's, whose ``citations`` are kept with it for
    Anthropic upstreams (``TextPart.native``); elsewhere citations are refused."""
    text = as_str(required(obj, "text", f"{param}.text"), f"{param}.text")
    if not text:
        raise invalid(f"{param}.text", "a non-empty string")
    citations = obj.get("citations")
    native = None
    if citations is not None and as_list(citations, f"{param}.citations"):
        if not cited:
            raise NativeFeatureUnsupportedError(
                f"`{param}.citations`: citations are not supported by gw",
                param=f"{param}.citations",
            )
        native = NativeBlock(format="anthropic", data=obj)
    return TextPart(text=text, cache=decode_cache_mark(obj, param), native=native)


def image_block(obj: JSONObject, param: str) -> ImagePart:
    if obj.get("transformations") is not None:
        raise NativeFeatureUnsupportedError(
            f"`{param}.transformations`: image transformations are not supported by gw",
            param=f"{param}.transformations",
        )
    source_param = f"{param}.source"
    source = as_object(required(obj, "source", source_param), source_param)
    kind = as_str(required(source, "type", f"{source_param}.type"), f"{source_param}.type")
    if kind == "base64":
        media_type = as_str(
            required(source, "media_type", f"{source_param}.media_type"),
            f"{source_param}.media_type",
        )
        if media_type not in IMAGE_MEDIA_TYPES:
            raise invalid(
                f"{source_param}.media_type", "one of image/jpeg, image/png, image/gif, image/webp"
            )
        data = as_str(required(source, "data", f"{source_param}.data"), f"{source_param}.data")
        if not data:
            raise invalid(f"{source_param}.data", "non-empty base64 data")
        return ImagePart(data=data, media_type=media_type, cache=decode_cache_mark(obj, param))
    if kind == "url":
        url = as_str(required(source, "url", f"{source_param}.url"), f"{source_param}.url")
        if not url.startswith(("https://", "http://")):
            raise invalid(f"{source_param}.url", "an http(s) URL")
        return ImagePart(url=url, cache=decode_cache_mark(obj, param))
    if kind == "file":
        raise NativeFeatureUnsupportedError(
            f"`{source_param}.type`: `file` sources (Files API) are not supported by gw",
            param=f"{source_param}.type",
        )
    raise invalid(f"{source_param}.type", "`base64` or `url`")


def tool_use_block(obj: JSONObject, param: str) -> ToolCall:
    caller = obj.get("caller")
    if caller is not None and as_object(caller, f"{param}.caller").get("type") != "direct":
        raise NativeFeatureUnsupportedError(
            f"`{param}.caller`: tool calls made by server tools are not supported by gw",
            param=f"{param}.caller",
        )
    tool_input = as_object(required(obj, "input", f"{param}.input"), f"{param}.input")
    return ToolCall(
        id=as_str(required(obj, "id", f"{param}.id"), f"{param}.id"),
        name=as_str(required(obj, "name", f"{param}.name"), f"{param}.name"),
        # Compact JSON, keys in the client's order: what OpenAI-shaped upstreams expect.
        arguments=_ARGUMENTS.encode(tool_input).decode(),
        cache=decode_cache_mark(obj, param),
    )


def thinking_block(obj: JSONObject, param: str) -> ThinkingPart:
    return ThinkingPart(
        text=as_str(required(obj, "thinking", f"{param}.thinking"), f"{param}.thinking"),
        signature=as_str(required(obj, "signature", f"{param}.signature"), f"{param}.signature"),
    )


def redacted_thinking_block(obj: JSONObject, param: str) -> ThinkingPart:
    return ThinkingPart(
        redacted=as_str(required(obj, "data", f"{param}.data"), f"{param}.data"),
    )


def tool_result_block(obj: JSONObject, param: str) -> ToolMessage:
    call_id = as_str(required(obj, "tool_use_id", f"{param}.tool_use_id"), f"{param}.tool_use_id")
    is_error = obj.get("is_error")
    return ToolMessage(
        tool_call_id=call_id,
        content=_tool_result_content(obj.get("content"), f"{param}.content"),
        is_error=False if is_error is None else as_bool(is_error, f"{param}.is_error"),
        cache=decode_cache_mark(obj, param),
    )


def _tool_result_content(value: object, param: str) -> tuple[ContentPart, ...]:
    """Absent, a string, or a list of text and image blocks."""
    if value is None:
        return ()
    if isinstance(value, str):
        return (TextPart(text=value),) if value else ()
    parts: list[ContentPart] = []
    for i, item in enumerate(as_list(value, param)):
        item_param = f"{param}[{i}]"
        obj = as_object(item, item_param)
        kind = block_type(obj, item_param)
        if kind == "text":
            text = as_str(required(obj, "text", f"{item_param}.text"), f"{item_param}.text")
            parts.append(TextPart(text=text, cache=decode_cache_mark(obj, item_param)))
        elif kind == "image":
            parts.append(image_block(obj, item_param))
        else:
            raise unsupported_block(kind, item_param)
    return tuple(parts)
