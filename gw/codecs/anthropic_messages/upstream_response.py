"""An Anthropic ``Message`` body -> IR ``ChatResponse``.

``text`` blocks are joined, ``thinking`` / ``redacted_thinking`` blocks become
``ChatResponse.thinking`` with their signatures, ``tool_use`` blocks become tool calls with
compact JSON arguments; ``ChatResponse.blocks`` keeps them all in the order they came.
Every block the IR does not model (server tool calls and results: ``server_tool_use``,
``web_search_tool_result``, ``mcp_tool_use``, ...; any type newer than this codec; text with
``citations``) is kept verbatim as ``NativeBlock("anthropic", block)`` in ``blocks``, in
its place, for an Anthropic client; cited text also counts in ``text``, so a client of
another format still reads the answer.

Usage: Anthropic reports uncached, cache-read and cache-write input tokens apart; the IR's
``input_tokens`` is their sum (see ``gw.ir.usage``).
"""

from __future__ import annotations

from typing import Any

import msgspec

from gw.codecs.anthropic_messages.upstream_errors import error_from_payload
from gw.errors import PersistentUpstreamError
from gw.ir import (
    ChatResponse,
    FinishReason,
    NativeBlock,
    TextPart,
    ThinkingPart,
    ToolCall,
    Usage,
)

# Anthropic stop_reason -> IR. ``pause_turn`` (a server tool paused a long turn; the caller
# must send the answer back to continue it) is ``pause``, which an Anthropic client gets
# back as it was. Unknown and null values read as "stop".
FINISH_REASONS: dict[str, FinishReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
    "pause_turn": "pause",
}


def finish_reason(value: str | None) -> FinishReason:
    return FINISH_REASONS.get(value or "end_turn", "stop")


class _OutputDetailsIn(msgspec.Struct):
    thinking_tokens: int | None = None


class UsageIn(msgspec.Struct):
    """``usage`` of a Message, ``message_start`` or ``message_delta`` (all fields optional:
    a ``message_delta`` may carry only ``output_tokens``)."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_creation_input_tokens: int | None = None
    cache_read_input_tokens: int | None = None
    output_tokens_details: _OutputDetailsIn | None = None

    def updated(self, later: UsageIn) -> UsageIn:
        """These counts, overwritten by the ones ``later`` carries (Anthropic's are cumulative)."""
        return UsageIn(
            input_tokens=_first(later.input_tokens, self.input_tokens),
            output_tokens=_first(later.output_tokens, self.output_tokens),
            cache_creation_input_tokens=_first(
                later.cache_creation_input_tokens, self.cache_creation_input_tokens
            ),
            cache_read_input_tokens=_first(
                later.cache_read_input_tokens, self.cache_read_input_tokens
            ),
            output_tokens_details=later.output_tokens_details or self.output_tokens_details,
        )

    def to_ir(self) -> Usage:
        cache_read = self.cache_read_input_tokens or 0
        cache_write = self.cache_creation_input_tokens or 0
        details = self.output_tokens_details
        return Usage(
            input_tokens=(self.input_tokens or 0) + cache_read + cache_write,
            output_tokens=self.output_tokens or 0,
            cached_input_tokens=cache_read,
            cache_write_tokens=cache_write,
            reasoning_tokens=(details.thinking_tokens if details else None) or 0,
        )


def _first(value: int | None, fallback: int | None) -> int | None:
    return fallback if value is None else value


class _BlockIn(msgspec.Struct):
    type: str
    text: str | None = None
    thinking: str | None = None
    signature: str | None = None
    data: str | None = None
    id: str | None = None
    name: str | None = None
    input: Any = None
    citations: list[Any] | None = None


class _MessageIn(msgspec.Struct):
    type: str = "message"
    id: str = ""
    model: str = ""
    content: list[_BlockIn] | None = None
    stop_reason: str | None = None
    stop_sequence: str | None = None
    usage: UsageIn | None = None
    error: object | None = None


class _RawMessageIn(msgspec.Struct):
    content: list[dict[str, Any]]


# Block types the IR models; a text block with citations is kept verbatim too.
MODELED_BLOCKS = frozenset({"text", "thinking", "redacted_thinking", "tool_use"})
_DECODER = msgspec.json.Decoder(_MessageIn)
_RAW_DECODER = msgspec.json.Decoder(_RawMessageIn)
_ARGUMENTS = msgspec.json.Encoder()


def malformed(reason: str) -> PersistentUpstreamError:
    """The error for an upstream body gw cannot read; ``reason`` must not quote the body."""
    return PersistentUpstreamError(f"upstream sent a malformed message: {reason}", blame="upstream")


def tool_arguments(value: object) -> str:
    """A tool_use ``input`` as compact JSON text (keys in the order Anthropic sent)."""
    return _ARGUMENTS.encode({} if value is None else value).decode()


def decode_upstream_response(body: bytes) -> ChatResponse:
    """Parse a non-streaming answer; raise ``UpstreamError`` (or the mapped error) on failure."""
    try:
        message = _DECODER.decode(body)
    except msgspec.ValidationError as exc:
        raise malformed(str(exc)) from None
    except msgspec.DecodeError:
        raise malformed("not JSON") from None
    if message.type == "error":
        raise error_from_payload(message.error)
    if message.content is None:
        raise malformed("no content")
    content = message.content
    parts: list[TextPart | ThinkingPart | ToolCall | NativeBlock | None]
    if any(block.type not in MODELED_BLOCKS or block.citations for block in content):
        # Rare: decoded again, untyped, to keep these blocks as they came.
        raw = _RAW_DECODER.decode(body).content
        parts = [_native_or_part(block, raw[i]) for i, block in enumerate(content)]
    else:
        parts = [_part(block) for block in content]
    blocks = [part for part in parts if part is not None]
    texts = [text for part in blocks if (text := _text(part))]
    return ChatResponse(
        id=message.id,
        model=message.model,
        text="".join(texts) if texts else None,
        thinking=tuple(part for part in blocks if isinstance(part, ThinkingPart)),
        tool_calls=tuple(part for part in blocks if isinstance(part, ToolCall)),
        blocks=tuple(blocks),
        finish_reason=finish_reason(message.stop_reason),
        stop_sequence=message.stop_sequence if message.stop_reason == "stop_sequence" else None,
        usage=None if message.usage is None else message.usage.to_ir(),
    )


def _text(part: TextPart | ThinkingPart | ToolCall | NativeBlock) -> str | None:
    if isinstance(part, TextPart):
        return part.text
    if isinstance(part, NativeBlock) and part.data.get("type") == "text":
        text = part.data.get("text")
        return text if isinstance(text, str) else None
    return None


def _native_or_part(
    block: _BlockIn, raw: dict[str, Any]
) -> TextPart | ThinkingPart | ToolCall | NativeBlock | None:
    if block.type not in MODELED_BLOCKS or block.citations:
        return NativeBlock(format="anthropic", data=raw)
    return _part(block)


def _part(block: _BlockIn) -> TextPart | ThinkingPart | ToolCall | None:
    """One content block in the IR; None for the blocks it has no place for, and for empty
    text (Anthropic sends some; clients could not send them back: Anthropic refuses them)."""
    if block.type == "text":
        return TextPart(text=block.text) if block.text else None
    if block.type == "thinking":
        return ThinkingPart(text=block.thinking or "", signature=block.signature)
    if block.type == "redacted_thinking":
        return ThinkingPart(redacted=block.data or "")
    if block.type == "tool_use":
        if not block.id or not block.name:
            raise malformed("a tool_use block without id or name")
        return ToolCall(id=block.id, name=block.name, arguments=tool_arguments(block.input))
    return None
