"""A cheap, deterministic estimate of a request's input tokens, for routing only.

This is an estimate, not a count: gw runs no tokenizer on the hot path. It is used to
skip targets whose context window the request would obviously overflow and to project
cost before a call; the upstream's reported usage is what gets billed and recorded.

The rules, rounded up once over the whole request:

- text (message text, tool-call names and arguments): about 4 characters per token;
- each message: 4 tokens of framing (role, separators);
- tool definitions, and a ``json_schema`` response format: their JSON size / 4;
- each image: 765 tokens (what a high-detail 1024x1024 image costs on OpenAI), or 85
  when ``detail`` is ``"low"``; the image's real size is not inspected.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import msgspec

from gw.ir.content import ImagePart, TextPart
from gw.ir.messages import AssistantMessage, Message, SystemMessage, ToolMessage, UserMessage
from gw.ir.request import ChatRequest

CHARS_PER_TOKEN = 4
MESSAGE_OVERHEAD_TOKENS = 4
IMAGE_TOKENS = 765
LOW_DETAIL_IMAGE_TOKENS = 85


def estimate_input_tokens(request: ChatRequest) -> int:
    """Roughly how many tokens ``request`` sends upstream (see the module docstring)."""
    chars = sum(len(text) for message in request.messages for text in _texts(message))
    chars += sum(len(msgspec.json.encode(tool)) for tool in request.tools)
    schema = request.response_format
    if schema is not None and schema.type == "json_schema" and schema.json_schema is not None:
        chars += len(msgspec.json.encode(schema.json_schema))
    images = sum(_image_tokens(part) for part in _images(request.messages))
    framing = MESSAGE_OVERHEAD_TOKENS * len(request.messages)
    return math.ceil(chars / CHARS_PER_TOKEN) + framing + images


def _texts(message: Message) -> Iterator[str]:
    match message:
        case SystemMessage() | ToolMessage():
            yield from (part.text for part in message.content)
        case UserMessage():
            yield from (part.text for part in message.content if isinstance(part, TextPart))
        case AssistantMessage():
            yield from (part.text for part in message.content)
            for call in message.tool_calls:
                yield call.name
                yield call.arguments


def _images(messages: tuple[Message, ...]) -> Iterator[ImagePart]:
    for message in messages:
        if isinstance(message, UserMessage):
            yield from (part for part in message.content if isinstance(part, ImagePart))


def _image_tokens(image: ImagePart) -> int:
    return LOW_DETAIL_IMAGE_TOKENS if image.detail == "low" else IMAGE_TOKENS
