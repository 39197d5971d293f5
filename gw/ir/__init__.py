"""Canonical intermediate representation: every wire format translates to and from this."""

from gw.ir.content import CacheMark, ContentPart, ImagePart, TextPart, ThinkingPart
from gw.ir.embeddings import EmbeddingInput, EmbeddingRequest, EmbeddingResponse
from gw.ir.events import (
    ErrorEvent,
    Finish,
    FinishReason,
    StreamEvent,
    StreamStart,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    UsageEvent,
)
from gw.ir.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
    assistant_from_blocks,
)
from gw.ir.request import (
    ChatRequest,
    Reasoning,
    ResponseFormat,
    Sampling,
    ToolChoice,
    ToolDefinition,
)
from gw.ir.response import ChatResponse
from gw.ir.usage import Usage

__all__ = [
    "AssistantMessage",
    "CacheMark",
    "ChatRequest",
    "ChatResponse",
    "ContentPart",
    "EmbeddingInput",
    "EmbeddingRequest",
    "EmbeddingResponse",
    "ErrorEvent",
    "Finish",
    "FinishReason",
    "ImagePart",
    "Message",
    "Reasoning",
    "ResponseFormat",
    "Sampling",
    "StreamEvent",
    "StreamStart",
    "SystemMessage",
    "TextDelta",
    "TextPart",
    "ThinkingDelta",
    "ThinkingPart",
    "ToolCall",
    "ToolCallDelta",
    "ToolChoice",
    "ToolDefinition",
    "ToolMessage",
    "Usage",
    "UsageEvent",
    "UserMessage",
    "assistant_from_blocks",
]
