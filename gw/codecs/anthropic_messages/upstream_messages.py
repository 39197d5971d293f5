"""IR messages -> Anthropic's top-level ``system`` and its alternating ``messages``.

Anthropic has no system role inside the conversation and wants user and assistant turns
to alternate, so:

- every ``SystemMessage``'s text goes, in order, to the top-level ``system`` (a string when
  it is one piece); a system message in mid-conversation is hoisted with the others;
- consecutive messages of one role merge into one turn. ``ToolMessage``s are user-role
  ``tool_result`` blocks: results and the user message after them share one user turn,
  results first (Anthropic wants them first); in an assistant turn, thinking blocks
  come first, as the model produced them, unless the turn interleaves them with text and
  tool calls (``AssistantMessage.blocks``), which is kept in its order;
- a turn that is one text block is sent as a plain string, the common shape, unless the
  block carries a cache mark: every ``CacheMark`` goes out as the block's ``cache_control``.

Dropped because Anthropic has no place for them: a message's ``name``, ``ImagePart.detail``,
empty text blocks beside other blocks (Anthropic refuses empty text blocks), and
``ThinkingPart``s without a signature (Anthropic verifies every thinking block it is sent;
unsigned reasoning comes from another provider and cannot be passed back).
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from gw.codecs.cache_marks import encode_cache_mark
from gw.errors import InvalidRequestError, NativeFeatureUnsupportedError
from gw.ir import (
    AssistantMessage,
    CacheMark,
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
)

JSONObject = dict[str, Any]
Role = Literal["user", "assistant"]

# Leading base64 characters of the image formats Anthropic takes, for data without a type.
_MAGIC = (
    ("iVBOR", "image/png"),
    ("/9j/", "image/jpeg"),
    ("R0lGOD", "image/gif"),
    ("UklGR", "image/webp"),
)
_DEFAULT_MEDIA_TYPE = "image/png"
_FIRST_IN_TURN: dict[Role, frozenset[str]] = {
    "user": frozenset({"tool_result"}),
    "assistant": frozenset({"thinking", "redacted_thinking"}),
}
_OBJECT = msgspec.json.Decoder(dict[str, Any])


def lossy_notes(messages: tuple[Message, ...]) -> list[str]:
    """What ``encode_conversation`` drops or moves, for the trace (see the module docstring)."""
    notes: list[str] = []
    seen_other = False
    for position, message in enumerate(messages):
        where = f"messages[{position}]"
        if getattr(message, "name", None) is not None:
            notes.append(f"{where}.name: not sent (Anthropic has no message names)")
        if isinstance(message, SystemMessage) and seen_other:
            notes.append(f"{where}: system text moved to the top-level system prompt")
        seen_other = seen_other or not isinstance(message, SystemMessage)
        for part in getattr(message, "content", ()):
            if isinstance(part, ImagePart) and part.detail is not None:
                notes.append(f"{where}: image detail not sent (Anthropic has none)")
            if isinstance(part, ThinkingPart) and part.signature is None and not part.redacted:
                notes.append(f"{where}: unsigned thinking not sent (Anthropic needs signatures)")
    return notes


def encode_conversation(
    messages: tuple[Message, ...],
) -> tuple[str | list[JSONObject] | None, list[JSONObject]]:
    """``(system, messages)`` for the request body; ``system`` is None when there is none."""
    system: list[TextPart] = []
    turns: list[tuple[Role, list[JSONObject], bool]] = []  # role, blocks, keep their order
    for message in messages:
        if isinstance(message, SystemMessage):
            system.extend(part for part in message.content if part.text)
            continue
        role, blocks = _blocks(message)
        ordered = isinstance(message, AssistantMessage) and bool(message.blocks)
        if turns and turns[-1][0] == role:
            turns[-1][1].extend(blocks)
            turns[-1] = (role, turns[-1][1], turns[-1][2] or ordered)
        else:
            turns.append((role, blocks, ordered))
    return _system(system), [_turn(*turn) for turn in turns]


def _system(parts: list[TextPart]) -> str | list[JSONObject] | None:
    if not parts:
        return None
    if len(parts) == 1 and parts[0].cache is None:
        return parts[0].text
    return [_part(part) for part in parts]


def _turn(role: Role, blocks: list[JSONObject], keep_order: bool) -> JSONObject:
    if not keep_order:
        first = _FIRST_IN_TURN[role]
        blocks = [b for b in blocks if b["type"] in first] + [
            b for b in blocks if b["type"] not in first
        ]
    kept = [b for b in blocks if b["type"] != "text" or b["text"]]
    if not kept:  # nothing but empty text: send it as it is, and let Anthropic judge
        return {"role": role, "content": ""}
    if len(kept) == 1 and kept[0]["type"] == "text" and "cache_control" not in kept[0]:
        return {"role": role, "content": kept[0]["text"]}
    return {"role": role, "content": kept}


def _blocks(message: UserMessage | AssistantMessage | ToolMessage) -> tuple[Role, list[JSONObject]]:
    match message:
        case UserMessage(content=content):
            return "user", [_part(part) for part in content]
        case ToolMessage():
            return "user", [_tool_result(message)]
        case AssistantMessage(content=content, tool_calls=calls, blocks=ordered):
            blocks: list[JSONObject] = []
            for part in ordered or (*content, *calls):
                if isinstance(part, TextPart):
                    blocks.append(_part(part))
                elif isinstance(part, ToolCall):
                    blocks.append(_tool_use(part))
                elif isinstance(part, NativeBlock):
                    if part.format == "anthropic":
                        blocks.append(part.data)
                else:
                    thinking = _thinking(part)
                    if thinking is not None:
                        blocks.append(thinking)
            return "assistant", blocks


def _part(part: ContentPart) -> JSONObject:
    if isinstance(part, TextPart) and part.native is not None and part.native.format == "anthropic":
        return part.native.data  # its citations too, as the client sent it
    if isinstance(part, TextPart):
        return _marked({"type": "text", "text": part.text}, part.cache)
    if isinstance(part, FilePart):
        return _marked(_document(part), part.cache)
    return _marked({"type": "image", "source": _image_source(part)}, part.cache)


def _document(part: FilePart) -> JSONObject:
    """A ``document`` block: a PDF or plain text, inline, by URL or by Files API id."""
    source: JSONObject
    if part.file_id is not None:
        source = {"type": "file", "file_id": part.file_id}
    elif part.url is not None and not part.url.startswith("data:"):
        source = {"type": "url", "url": part.url}
    else:
        media_type, data = (
            _data_url(part.url) if part.url is not None else (part.media_type, part.data or "")
        )
        source = {"type": "base64", "media_type": media_type or "application/pdf", "data": data}
    block: JSONObject = {"type": "document", "source": source}
    if part.filename:
        block["title"] = part.filename
    return block


def _marked(block: JSONObject, mark: CacheMark | None) -> JSONObject:
    if mark is not None:
        block["cache_control"] = encode_cache_mark(mark)
    return block


def _image_source(part: ImagePart) -> JSONObject:
    if part.url is not None and part.url.startswith("data:"):
        media_type, data = _data_url(part.url)
        return _base64_source(data, media_type)
    if part.url is not None:
        return {"type": "url", "url": part.url}
    return _base64_source(part.data or "", part.media_type)


def _base64_source(data: str, media_type: str | None) -> JSONObject:
    kind = media_type or next(
        (kind for magic, kind in _MAGIC if data.startswith(magic)), _DEFAULT_MEDIA_TYPE
    )
    return {"type": "base64", "media_type": kind, "data": data}


def _data_url(url: str) -> tuple[str | None, str]:
    """``data:image/png;base64,AAAA`` -> ``("image/png", "AAAA")``."""
    header, comma, data = url[len("data:") :].partition(",")
    media_type, *params = header.split(";")
    if not comma or "base64" not in params:
        raise InvalidRequestError(
            "an image data: URL must be base64-encoded (data:<type>;base64,<data>)"
        )
    return media_type or None, data


def _tool_result(message: ToolMessage) -> JSONObject:
    block: JSONObject = {"type": "tool_result", "tool_use_id": message.tool_call_id}
    parts = message.content
    if len(parts) == 1 and isinstance(parts[0], TextPart) and parts[0].cache is None:
        block["content"] = parts[0].text
    elif parts:
        block["content"] = [_part(part) for part in parts if not _empty_text(part)]
    if message.is_error:
        block["is_error"] = True
    return _marked(block, message.cache)


def _empty_text(part: ContentPart) -> bool:
    return isinstance(part, TextPart) and not part.text


def _thinking(part: ThinkingPart) -> JSONObject | None:
    if part.redacted is not None:
        return {"type": "redacted_thinking", "data": part.redacted}
    if part.signature is None:
        return None
    return {"type": "thinking", "thinking": part.text, "signature": part.signature}


def _tool_use(call: ToolCall) -> JSONObject:
    """A tool call; its arguments travel verbatim, once checked to be one JSON object."""
    text = call.arguments.strip() or "{}"  # OpenAI clients send "" for a call without input
    try:
        _OBJECT.decode(text)
    except (msgspec.DecodeError, msgspec.ValidationError):
        raise NativeFeatureUnsupportedError(
            f"the arguments of tool call {call.id!r} are not a JSON object, and Anthropic "
            "takes tool input only as an object; route this conversation to an OpenAI-format "
            "provider or fix the arguments"
        ) from None
    block = {"type": "tool_use", "id": call.id, "name": call.name, "input": msgspec.Raw(text)}
    return _marked(block, call.cache)
