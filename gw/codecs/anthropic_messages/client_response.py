"""IR answers as the Anthropic ``Message`` object, field for field as the real API sends it.

Content order: the blocks as the model produced them when the upstream kept an order
(``ChatResponse.blocks``: an Anthropic upstream); otherwise ``thinking`` /
``redacted_thinking`` blocks as produced, then one ``text`` block when there is text, then
``tool_use`` blocks. A ``tool_use`` block's ``input`` is the
call's arguments parsed as a JSON object; empty arguments (what OpenAI-shaped upstreams send
for a tool without parameters) become ``{}``, and arguments that are not a JSON object raise
``UpstreamError``: Anthropic's ``input`` is always an object and guessing a shape would
hand the client a call it never asked for.

Usage: Anthropic reports ``input_tokens`` apart from the cache reads and writes, the IR
counts them all in ``input_tokens``; unknown usage is reported as zeros (``usage`` is
required in a Message).
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from gw.errors import UpstreamError
from gw.ir import (
    ChatResponse,
    FinishReason,
    NativeBlock,
    TextPart,
    ThinkingPart,
    ToolCall,
    Usage,
)

# IR finish reason -> Anthropic stop_reason. "stop" becomes "stop_sequence" when the stop
# string that ended the answer is known. Anthropic has no "error"; an answer cut short by an
# upstream failure reports "end_turn", the closest value its SDK accepts.
STOP_REASONS: dict[FinishReason, str] = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "content_filter": "refusal",
    "error": "end_turn",
    "pause": "pause_turn",
}


class TextBlockOut(msgspec.Struct, tag_field="type", tag="text"):
    text: str


class ThinkingBlockOut(msgspec.Struct, tag_field="type", tag="thinking"):
    thinking: str
    signature: str


class RedactedThinkingBlockOut(msgspec.Struct, tag_field="type", tag="redacted_thinking"):
    data: str


class ToolUseBlockOut(msgspec.Struct, tag_field="type", tag="tool_use"):
    id: str
    name: str
    input: dict[str, Any]


# msgspec.Raw: a block Anthropic sent that the IR keeps verbatim (server tools' blocks).
BlockOut = (
    TextBlockOut | ThinkingBlockOut | RedactedThinkingBlockOut | ToolUseBlockOut | msgspec.Raw
)


class UsageOut(msgspec.Struct, kw_only=True):
    input_tokens: int
    cache_creation_input_tokens: int
    cache_read_input_tokens: int
    output_tokens: int


class _MessageOut(msgspec.Struct, kw_only=True):
    id: str
    type: Literal["message"] = "message"
    role: Literal["assistant"] = "assistant"
    model: str
    content: list[BlockOut]
    stop_reason: str
    stop_sequence: str | None
    usage: UsageOut


_ENCODER = msgspec.json.Encoder()
_ARGUMENTS = msgspec.json.Decoder(dict[str, Any])
_NO_USAGE = Usage()


def stop_reason(reason: FinishReason, stop_sequence: str | None) -> tuple[str, str | None]:
    """Anthropic's ``stop_reason`` and ``stop_sequence`` for an IR finish."""
    if reason == "stop" and stop_sequence is not None:
        return "stop_sequence", stop_sequence
    return STOP_REASONS[reason], None


def usage_out(usage: Usage) -> UsageOut:
    """Anthropic's usage: ``input_tokens`` excludes the cache reads and writes."""
    uncached = usage.input_tokens - usage.cached_input_tokens - usage.cache_write_tokens
    return UsageOut(
        input_tokens=max(uncached, 0),
        cache_creation_input_tokens=usage.cache_write_tokens,
        cache_read_input_tokens=usage.cached_input_tokens,
        output_tokens=usage.output_tokens,
    )


def thinking_block_out(part: ThinkingPart) -> ThinkingBlockOut | RedactedThinkingBlockOut:
    if part.redacted is not None:
        return RedactedThinkingBlockOut(data=part.redacted)
    # The SDK's ThinkingBlock requires a signature; reasoning from a non-Anthropic
    # upstream has none, and "" is what the API itself starts a streamed block with.
    return ThinkingBlockOut(thinking=part.text, signature=part.signature or "")


def tool_input(arguments: str) -> dict[str, Any]:
    """A call's arguments as Anthropic's ``input`` object (see the module docstring)."""
    if not arguments.strip():
        return {}
    try:
        return _ARGUMENTS.decode(arguments)
    except (msgspec.DecodeError, RecursionError):
        raise UpstreamError(
            "the upstream returned tool call arguments that are not a JSON object"
        ) from None


def check_messages_response(response: ChatResponse) -> None:
    """Raise ``UpstreamError`` if ``encode_messages_response`` cannot express ``response``
    (tool call arguments that are not a JSON object, e.g. cut short by a token limit)."""
    for call in response.tool_calls:
        tool_input(call.arguments)


def _tool_use_out(call: ToolCall) -> ToolUseBlockOut:
    return ToolUseBlockOut(id=call.id, name=call.name, input=tool_input(call.arguments))


def _block_out(block: TextPart | ThinkingPart | NativeBlock | ToolCall) -> BlockOut | None:
    """``block`` as Messages writes it; None for another format's native block."""
    if isinstance(block, TextPart):
        return TextBlockOut(text=block.text)
    if isinstance(block, ThinkingPart):
        return thinking_block_out(block)
    if isinstance(block, NativeBlock):
        return msgspec.Raw(_ENCODER.encode(block.data)) if block.format == "anthropic" else None
    return _tool_use_out(block)


def _grouped_content(response: ChatResponse) -> list[BlockOut]:
    content: list[BlockOut] = [thinking_block_out(part) for part in response.thinking]
    text = response.text or response.refusal  # Messages has no refusal field: it is text
    if text:
        content.append(TextBlockOut(text=text))
    content.extend(_tool_use_out(call) for call in response.tool_calls)
    return content


def encode_messages_response(response: ChatResponse, *, message_id: str, model: str) -> bytes:
    """The ``message`` body; ``model`` is the upstream model that answered."""
    ordered = [out for block in response.blocks if (out := _block_out(block)) is not None]
    content = ordered or _grouped_content(response)
    reason, sequence = stop_reason(response.finish_reason, response.stop_sequence)
    body = _MessageOut(
        id=message_id,
        model=model,
        content=content,
        stop_reason=reason,
        stop_sequence=sequence,
        usage=usage_out(response.usage or _NO_USAGE),
    )
    return _ENCODER.encode(body)
