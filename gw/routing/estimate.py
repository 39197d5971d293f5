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

Embeddings inputs: a text counts 4 characters a token (rounded up per input), a token
array counts exactly its length; there is no framing.
"""

from __future__ import annotations

import math

import msgspec

from gw.ir.content import ImagePart, TextPart
from gw.ir.embeddings import EmbeddingInput, EmbeddingRequest
from gw.ir.messages import AssistantMessage
from gw.ir.request import ChatRequest

CHARS_PER_TOKEN = 4
MESSAGE_OVERHEAD_TOKENS = 4
IMAGE_TOKENS = 765
LOW_DETAIL_IMAGE_TOKENS = 85


def estimate_input_tokens(request: ChatRequest) -> int:
    """Roughly how many tokens ``request`` sends upstream (see the module docstring)."""
    chars = 0
    images = 0
    for message in request.messages:
        for part in message.content:
            if isinstance(part, TextPart):
                chars += len(part.text)
            elif isinstance(part, ImagePart):  # only user messages hold images
                images += LOW_DETAIL_IMAGE_TOKENS if part.detail == "low" else IMAGE_TOKENS
        if isinstance(message, AssistantMessage):
            for call in message.tool_calls:
                chars += len(call.name) + len(call.arguments)
    for tool in request.tools:
        chars += len(msgspec.json.encode(tool))
    schema = request.response_format
    if schema is not None and schema.type == "json_schema" and schema.json_schema is not None:
        chars += len(msgspec.json.encode(schema.json_schema))
    framing = MESSAGE_OVERHEAD_TOKENS * len(request.messages)
    return math.ceil(chars / CHARS_PER_TOKEN) + framing + images


def embedding_input_tokens(item: EmbeddingInput) -> int:
    """Roughly how many tokens one embeddings input is (exactly, for a token array)."""
    if isinstance(item, tuple):
        return len(item)
    return -(-len(item) // CHARS_PER_TOKEN)


def estimate_embedding_tokens(request: EmbeddingRequest) -> int:
    """Roughly how many tokens all of ``request``'s inputs are together."""
    return sum(map(embedding_input_tokens, request.inputs))
