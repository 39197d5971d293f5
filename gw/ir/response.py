"""A complete (non-streaming) chat answer in canonical form."""

from __future__ import annotations

from gw.ir.base import IRStruct
from gw.ir.content import NativeBlock, TextPart, ThinkingPart
from gw.ir.events import FinishReason
from gw.ir.messages import ToolCall
from gw.ir.usage import Usage


class ChatResponse(IRStruct, frozen=True, kw_only=True):
    id: str
    model: str
    text: str | None = None
    # What the model said instead of answering (OpenAI's ``refusal``, structured outputs);
    # formats without such a field show it as text.
    refusal: str | None = None
    thinking: tuple[ThinkingPart, ...] = ()
    tool_calls: tuple[ToolCall, ...] = ()
    # Every block in the order the model produced them, when the upstream's format keeps
    # one (Anthropic: thinking, text, a tool call, more thinking, more text...). ``text``,
    # ``thinking`` and ``tool_calls`` hold the same answer grouped; a client format with
    # ordered blocks (Anthropic) sends these instead.
    # ``NativeBlock`` s (server tool calls and results, Responses items the IR does not
    # model) appear only here, in order; a client format that cannot carry them leaves
    # them out.
    blocks: tuple[TextPart | ThinkingPart | NativeBlock | ToolCall, ...] = ()
    finish_reason: FinishReason = "stop"
    stop_sequence: str | None = None
    usage: Usage | None = None
    created: int = 0
