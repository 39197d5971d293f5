"""Conversation messages, one tagged struct per role."""

from __future__ import annotations

from collections.abc import Sequence

from gw.ir.base import IRStruct
from gw.ir.content import CacheMark, ContentPart, NativeBlock, TextPart, ThinkingPart


class ToolCall(IRStruct, frozen=True, kw_only=True):
    """A call the model asked for; ``arguments`` is the JSON text exactly as produced."""

    id: str
    name: str
    arguments: str
    cache: CacheMark | None = None


class SystemMessage(IRStruct, tag="system", frozen=True, kw_only=True):
    content: tuple[TextPart, ...]
    name: str | None = None


class UserMessage(IRStruct, tag="user", frozen=True, kw_only=True):
    content: tuple[ContentPart, ...]
    name: str | None = None


class AssistantMessage(IRStruct, tag="assistant", frozen=True, kw_only=True):
    """What the assistant said; ``ThinkingPart`` blocks come first, as they were produced.
    ``NativeBlock`` s (server tool calls and results, encrypted reasoning items) sit in
    ``content`` where they came, and go back only to an upstream of their format."""

    content: tuple[TextPart | ThinkingPart | NativeBlock, ...] = ()
    tool_calls: tuple[ToolCall, ...] = ()
    name: str | None = None
    # The same blocks in the client's order, only when it interleaves them (thinking or
    # text after a tool call, thinking after text: Anthropic's interleaved thinking, which
    # must go back in its order); otherwise empty.
    blocks: tuple[TextPart | ThinkingPart | NativeBlock | ToolCall, ...] = ()


def assistant_from_blocks(
    blocks: Sequence[TextPart | ThinkingPart | NativeBlock | ToolCall],
) -> AssistantMessage:
    """The assistant turn of ``blocks`` in the order produced: grouped, with ``blocks`` kept
    when that order is not the grouped one (thinking, then text, then tool calls)."""
    ranks = [_GROUP_RANK[type(block)] for block in blocks]
    return AssistantMessage(
        content=tuple(block for block in blocks if not isinstance(block, ToolCall)),
        tool_calls=tuple(block for block in blocks if isinstance(block, ToolCall)),
        blocks=tuple(blocks) if ranks != sorted(ranks) else (),
    )


_GROUP_RANK: dict[type, int] = {ThinkingPart: 0, NativeBlock: 1, TextPart: 1, ToolCall: 2}


class ToolMessage(IRStruct, tag="tool", frozen=True, kw_only=True):
    """The result of one tool call, sent back by the client."""

    tool_call_id: str
    content: tuple[ContentPart, ...]
    is_error: bool = False
    cache: CacheMark | None = None


Message = SystemMessage | UserMessage | AssistantMessage | ToolMessage
