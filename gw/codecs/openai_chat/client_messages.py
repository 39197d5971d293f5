"""OpenAI chat ``messages`` -> IR messages, strictly.

Roles: system, developer (becomes system: the IR has one instruction role), user,
assistant, tool. The legacy ``function`` role is rejected. A content part's
``cache_control``, which clients built for OpenAI-compatible gateways add to cache a prompt
sent to Claude, becomes the part's ``CacheMark``, as in the Anthropic codec. Other keys of
a message or a part that the IR has no place for (``refusal`` on a past assistant turn) are
ignored rather than rejected, so clients built for lenient OpenAI-compatible servers keep
working.
"""

from __future__ import annotations

from collections.abc import Callable

import msgspec

from gw.codecs.cache_marks import decode_cache_mark
from gw.codecs.fields import (
    JSONObject,
    as_list,
    as_object,
    as_str,
    invalid,
    optional_str,
    required,
)
from gw.errors import ClientError, InvalidRequestError, NativeFeatureUnsupportedError
from gw.ir import (
    AssistantMessage,
    ContentPart,
    ImagePart,
    Message,
    SystemMessage,
    TextPart,
    ToolCall,
    ToolMessage,
    UserMessage,
)

_ROLES = "one of system, developer, user, assistant, tool"
# Part types OpenAI defines that the IR cannot carry: refused as unsupported, not invalid.
_UNSUPPORTED_PARTS = frozenset({"input_audio", "file", "refusal"})


def decode_messages(value: object) -> tuple[Message, ...]:
    """Decode the ``messages`` array; it must be non-empty."""
    items = as_list(value, "messages")
    if not items:
        raise InvalidRequestError("`messages` must contain at least one message", param="messages")
    return tuple(_decode_message(item, f"messages[{i}]") for i, item in enumerate(items))


def _decode_message(value: object, param: str) -> Message:
    obj = as_object(value, param)
    role = as_str(required(obj, "role", f"{param}.role"), f"{param}.role")
    decoder = _DECODERS.get(role)
    if decoder is None:
        if role == "function":
            raise InvalidRequestError(
                f"`{param}.role`: the legacy `function` role is not supported; "
                "send tool results with role `tool` and `tool_call_id`",
                param=f"{param}.role",
            )
        raise invalid(f"{param}.role", _ROLES)
    return decoder(obj, param)


def _decode_system(obj: JSONObject, param: str) -> Message:
    content = _text_content(required(obj, "content", f"{param}.content"), f"{param}.content")
    return SystemMessage(content=content, name=optional_str(obj, "name", f"{param}.name"))


def _decode_user(obj: JSONObject, param: str) -> Message:
    raw = required(obj, "content", f"{param}.content")
    content: tuple[ContentPart, ...]
    if isinstance(raw, str):
        content = (TextPart(text=raw),) if raw else ()
    else:
        parts = as_list(raw, f"{param}.content")
        content = tuple(_user_part(p, f"{param}.content[{i}]") for i, p in enumerate(parts))
    return UserMessage(content=content, name=optional_str(obj, "name", f"{param}.name"))


def _decode_assistant(obj: JSONObject, param: str) -> Message:
    if obj.get("function_call") is not None:
        raise InvalidRequestError(
            f"`{param}.function_call` is the legacy form; send `tool_calls` instead",
            param=f"{param}.function_call",
        )
    if obj.get("audio") is not None:
        raise NativeFeatureUnsupportedError(
            f"`{param}.audio`: audio turns are not supported", param=f"{param}.audio"
        )
    raw = obj.get("content")
    content = () if raw is None else _text_content(raw, f"{param}.content")
    calls_raw = obj.get("tool_calls")
    calls: tuple[ToolCall, ...] = ()
    if calls_raw is not None:
        items = as_list(calls_raw, f"{param}.tool_calls")
        calls = tuple(_tool_call(c, f"{param}.tool_calls[{i}]") for i, c in enumerate(items))
    if raw is None and calls_raw is None:
        raise InvalidRequestError(
            f"`{param}.content` is required unless `tool_calls` is given",
            param=f"{param}.content",
        )
    return AssistantMessage(
        content=content, tool_calls=calls, name=optional_str(obj, "name", f"{param}.name")
    )


def _decode_tool(obj: JSONObject, param: str) -> Message:
    call_id = as_str(
        required(obj, "tool_call_id", f"{param}.tool_call_id"), f"{param}.tool_call_id"
    )
    content = _text_content(required(obj, "content", f"{param}.content"), f"{param}.content")
    return ToolMessage(tool_call_id=call_id, content=content)


_DECODERS: dict[str, Callable[[JSONObject, str], Message]] = {
    "system": _decode_system,
    "developer": _decode_system,
    "user": _decode_user,
    "assistant": _decode_assistant,
    "tool": _decode_tool,
}


def _text_content(value: object, param: str) -> tuple[TextPart, ...]:
    """A string or an array of text parts; an empty string is no part at all."""
    if isinstance(value, str):
        return (TextPart(text=value),) if value else ()
    parts = as_list(value, param)
    return tuple(_text_part(part, f"{param}[{i}]") for i, part in enumerate(parts))


def _text_part(value: object, param: str) -> TextPart:
    obj = as_object(value, param)
    kind = as_str(required(obj, "type", f"{param}.type"), f"{param}.type")
    if kind != "text":
        raise _bad_part_type(kind, f"{param}.type", "`text`")
    return _text_of(obj, param)


def _text_of(obj: JSONObject, param: str) -> TextPart:
    text = as_str(required(obj, "text", f"{param}.text"), f"{param}.text")
    return TextPart(text=text, cache=decode_cache_mark(obj, param))


def _user_part(value: object, param: str) -> ContentPart:
    obj = as_object(value, param)
    kind = as_str(required(obj, "type", f"{param}.type"), f"{param}.type")
    if kind == "text":
        return _text_of(obj, param)
    if kind == "image_url":
        image = _image_part(required(obj, "image_url", f"{param}.image_url"), f"{param}.image_url")
        cache = decode_cache_mark(obj, param)
        return image if cache is None else msgspec.structs.replace(image, cache=cache)
    raise _bad_part_type(kind, f"{param}.type", "`text` or `image_url`")


def _bad_part_type(kind: str, param: str, expected: str) -> ClientError:
    if kind in _UNSUPPORTED_PARTS:
        return NativeFeatureUnsupportedError(
            f"`{param}`: content parts of type `{kind}` are not supported here", param=param
        )
    return invalid(param, expected)


def _image_part(value: object, param: str) -> ImagePart:
    obj = as_object(value, param)
    url = as_str(required(obj, "url", f"{param}.url"), f"{param}.url")
    detail = optional_str(obj, "detail", f"{param}.detail")
    if url.startswith(("https://", "http://")):
        return ImagePart(url=url, detail=detail)
    header, comma, payload = url.partition(",")
    if url.startswith("data:") and comma and header.endswith(";base64") and payload:
        media_type = header.removeprefix("data:").removesuffix(";base64") or None
        return ImagePart(data=payload, media_type=media_type, detail=detail)
    raise invalid(f"{param}.url", "an http(s) URL or a base64 data URL (data:image/png;base64,...)")


def _tool_call(value: object, param: str) -> ToolCall:
    obj = as_object(value, param)
    if obj.get("type", "function") not in ("function", None):
        raise NativeFeatureUnsupportedError(
            f"`{param}.type`: only `function` tool calls are supported", param=f"{param}.type"
        )
    function = as_object(required(obj, "function", f"{param}.function"), f"{param}.function")
    return ToolCall(
        id=as_str(required(obj, "id", f"{param}.id"), f"{param}.id"),
        name=as_str(required(function, "name", f"{param}.function.name"), f"{param}.function.name"),
        arguments=as_str(
            required(function, "arguments", f"{param}.function.arguments"),
            f"{param}.function.arguments",
        ),
    )
