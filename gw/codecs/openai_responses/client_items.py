"""A Responses ``input`` (a string, or a list of items) -> IR messages.

Items, by ``type`` (a message may leave it out):

- ``message``: role ``user`` -> ``UserMessage``; ``system`` and ``developer`` ->
  ``SystemMessage`` (the IR has one instruction role); ``assistant`` -> its text joins
  the assistant turn. Content is a string or parts: ``input_text``, ``input_image``,
  ``input_file`` for users; ``output_text`` and ``refusal`` for the assistant.
- ``function_call`` -> a ``ToolCall`` (its ``call_id`` is the IR id);
  ``function_call_output`` -> a ``ToolMessage``.
- ``reasoning`` and every other item the model produced (``web_search_call``,
  ``custom_tool_call``, ``local_shell_call``, ``mcp_call``, ...), and the outputs the client
  sends for them (``custom_tool_call_output``, ...), are kept verbatim as
  ``NativeBlock("openai_responses")`` in the assistant turn: a Responses upstream gets them
  back in order, another format leaves them out and the attempt says so.

Consecutive assistant-side items make one assistant turn, in their order.
"""

from __future__ import annotations

from collections.abc import Callable

from gw.codecs.cache_marks import decode_cache_mark
from gw.codecs.fields import (
    JSONObject,
    as_list,
    as_object,
    as_str,
    invalid,
    is_type_name,
    optional_str,
    required,
)
from gw.codecs.openai_responses.namespaces import flat_name
from gw.errors import InvalidRequestError, NativeFeatureUnsupportedError
from gw.ir import (
    ContentPart,
    FilePart,
    ImagePart,
    Message,
    NativeBlock,
    SystemMessage,
    TextPart,
    ThinkingPart,
    ToolCall,
    ToolMessage,
    UserMessage,
    assistant_from_blocks,
)

AssistantBlock = TextPart | ThinkingPart | NativeBlock | ToolCall
_ROLES = "one of user, system, developer, assistant"


class _Conversation:
    """Messages being built; assistant-side blocks gather until another role speaks."""

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self._assistant: list[AssistantBlock] = []

    def add(self, message: Message) -> None:
        self._close_turn()
        self.messages.append(message)

    def add_assistant(self, block: AssistantBlock) -> None:
        self._assistant.append(block)

    def done(self) -> tuple[Message, ...]:
        self._close_turn()
        return tuple(self.messages)

    def _close_turn(self) -> None:
        if self._assistant:
            self.messages.append(assistant_from_blocks(self._assistant))
            self._assistant = []


def decode_input(value: object) -> tuple[Message, ...]:
    """``input``: a string (one user message) or a non-empty list of items."""
    if isinstance(value, str):
        return (UserMessage(content=(TextPart(text=value),) if value else ()),)
    items = as_list(value, "input")
    if not items:
        raise InvalidRequestError("`input` must contain at least one item", param="input")
    conversation = _Conversation()
    for i, item in enumerate(items):
        _decode_item(conversation, as_object(item, f"input[{i}]"), f"input[{i}]")
    return conversation.done()


def _decode_item(conversation: _Conversation, item: JSONObject, param: str) -> None:
    kind = item.get("type", "message")
    if not isinstance(kind, str):
        raise invalid(f"{param}.type", "a string", kind)
    if kind == "message":
        _decode_message(conversation, item, param)
    elif kind == "function_call":
        conversation.add_assistant(_function_call(item, param))
    elif kind == "function_call_output":
        conversation.add(_function_call_output(item, param))
    elif is_type_name(kind):
        conversation.add_assistant(NativeBlock(format="openai_responses", data=item))
    else:
        raise invalid(f"{param}.type", "an item type such as message or function_call")


def _decode_message(conversation: _Conversation, item: JSONObject, param: str) -> None:
    role = as_str(required(item, "role", f"{param}.role"), f"{param}.role")
    content = required(item, "content", f"{param}.content")
    if role == "user":
        conversation.add(UserMessage(content=_user_content(content, f"{param}.content")))
    elif role in ("system", "developer"):
        conversation.add(SystemMessage(content=_text_content(content, f"{param}.content")))
    elif role == "assistant":
        for part in _assistant_content(content, f"{param}.content"):
            conversation.add_assistant(part)
    else:
        raise invalid(f"{param}.role", _ROLES)


def _user_content(value: object, param: str) -> tuple[ContentPart, ...]:
    if isinstance(value, str):
        return (TextPart(text=value),) if value else ()
    parts = as_list(value, param)
    return tuple(
        _user_part(as_object(p, f"{param}[{i}]"), f"{param}[{i}]") for i, p in enumerate(parts)
    )


def _text_content(value: object, param: str) -> tuple[TextPart, ...]:
    if isinstance(value, str):
        return (TextPart(text=value),)
    parts = []
    for i, raw in enumerate(as_list(value, param)):
        part = _user_part(as_object(raw, f"{param}[{i}]"), f"{param}[{i}]")
        if not isinstance(part, TextPart):
            raise invalid(f"{param}[{i}].type", "input_text (instructions are text)")
        parts.append(part)
    return tuple(parts)


def _assistant_content(value: object, param: str) -> list[TextPart]:
    if isinstance(value, str):
        return [TextPart(text=value)]
    parts = []
    for i, raw in enumerate(as_list(value, param)):
        obj = as_object(raw, f"{param}[{i}]")
        kind = obj.get("type")
        if kind in ("output_text", "input_text"):
            parts.append(
                TextPart(
                    text=as_str(required(obj, "text", f"{param}[{i}].text"), f"{param}[{i}].text")
                )
            )
        elif kind == "refusal":
            refusal = required(obj, "refusal", f"{param}[{i}].refusal")
            parts.append(TextPart(text=as_str(refusal, f"{param}[{i}].refusal")))
        else:
            raise invalid(f"{param}[{i}].type", "output_text or refusal")
    return parts


def _user_part(obj: JSONObject, param: str) -> ContentPart:
    kind = as_str(required(obj, "type", f"{param}.type"), f"{param}.type")
    decoder = _PART_DECODERS.get(kind)
    if decoder is None:
        if kind == "input_audio":
            raise NativeFeatureUnsupportedError(
                f"`{param}.type`: audio input is not supported by gw", param=f"{param}.type"
            )
        raise invalid(f"{param}.type", "one of input_text, input_image, input_file")
    return decoder(obj, param)


def _input_text(obj: JSONObject, param: str) -> ContentPart:
    text = as_str(required(obj, "text", f"{param}.text"), f"{param}.text")
    return TextPart(text=text, cache=decode_cache_mark(obj, param))


def _input_image(obj: JSONObject, param: str) -> ContentPart:
    url = optional_str(obj, "image_url", f"{param}.image_url")
    if url is None:
        if obj.get("file_id") is not None:
            raise NativeFeatureUnsupportedError(
                f"`{param}.file_id`: images by OpenAI file id are not supported by gw; send "
                "`image_url` (an https or data: URL)",
                param=f"{param}.file_id",
            )
        raise InvalidRequestError(f"`{param}.image_url` is required", param=f"{param}.image_url")
    detail = optional_str(obj, "detail", f"{param}.detail")
    return ImagePart(url=url, detail=detail, cache=decode_cache_mark(obj, param))


def _input_file(obj: JSONObject, param: str) -> ContentPart:
    data_url = optional_str(obj, "file_data", f"{param}.file_data")
    file_id = optional_str(obj, "file_id", f"{param}.file_id")
    file_url = optional_str(obj, "file_url", f"{param}.file_url")
    if data_url is None and file_id is None and file_url is None:
        raise InvalidRequestError(
            f"`{param}` needs one of file_data, file_id or file_url", param=param
        )
    media_type, data = _data_url(data_url) if data_url is not None else (None, None)
    return FilePart(
        data=data,
        media_type=media_type,
        url=file_url,
        file_id=file_id,
        filename=optional_str(obj, "filename", f"{param}.filename"),
        cache=decode_cache_mark(obj, param),
    )


def _data_url(value: str) -> tuple[str | None, str]:
    """``data:application/pdf;base64,AAAA`` -> (``application/pdf``, ``AAAA``); bare
    base64 (which clients also send) -> (None, it)."""
    if not value.startswith("data:"):
        return None, value
    header, _, data = value[len("data:") :].partition(",")
    media_type = header.split(";", 1)[0]
    return media_type or None, data


_PART_DECODERS: dict[str, Callable[[JSONObject, str], ContentPart]] = {
    "input_text": _input_text,
    "input_image": _input_image,
    "input_file": _input_file,
}


def _function_call(item: JSONObject, param: str) -> ToolCall:
    name = as_str(required(item, "name", f"{param}.name"), f"{param}.name")
    namespace = optional_str(item, "namespace", f"{param}.namespace")
    return ToolCall(
        id=as_str(required(item, "call_id", f"{param}.call_id"), f"{param}.call_id"),
        name=name if namespace is None else flat_name(namespace, name),
        arguments=as_str(required(item, "arguments", f"{param}.arguments"), f"{param}.arguments"),
    )


def _function_call_output(item: JSONObject, param: str) -> ToolMessage:
    call_id = as_str(required(item, "call_id", f"{param}.call_id"), f"{param}.call_id")
    output = required(item, "output", f"{param}.output")
    content = (
        (TextPart(text=output),)
        if isinstance(output, str)
        else _user_content(output, f"{param}.output")
    )
    return ToolMessage(tool_call_id=call_id, content=content)
