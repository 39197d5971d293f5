"""Stream events: what an upstream stream becomes, and what a client stream is made from.

A well-formed stream is ``StreamStart``, any number of ``TextDelta`` / ``ToolCallDelta``,
then ``Finish``, with ``UsageEvent`` anywhere after the start; or it ends with one
``ErrorEvent`` once something failed after the first byte.
"""

from __future__ import annotations

from typing import Literal

from gw.ir.base import IRStruct
from gw.ir.content import NativeBlock
from gw.ir.usage import Usage

# "pause": the provider paused a long turn (Anthropic's ``pause_turn``, while its server
# tools run): the caller sends the answer back as it is to let the model go on.
FinishReason = Literal["stop", "length", "tool_calls", "content_filter", "error", "pause"]


class StreamStart(IRStruct, tag="start", frozen=True, kw_only=True):
    id: str
    model: str
    created: int = 0


class TextDelta(IRStruct, tag="text", frozen=True, kw_only=True):
    """A piece of the answer's text. ``refusal``: text the model gave instead of an answer
    (OpenAI's ``refusal``); formats without such a field show it as text."""

    text: str
    refusal: bool = False


class ThinkingDelta(IRStruct, tag="thinking", frozen=True, kw_only=True):
    """A piece of one reasoning block; a new block starts after any other event kind.

    ``signature`` (Anthropic) closes a block and must be kept with it; ``redacted`` is a
    whole encrypted block.
    """

    text: str = ""
    signature: str | None = None
    redacted: str | None = None


class ToolCallDelta(IRStruct, tag="tool_call", frozen=True, kw_only=True):
    """A fragment of the tool call at ``index``; ``id`` and ``name`` come with its first one."""

    index: int
    id: str | None = None
    name: str | None = None
    arguments: str = ""


class NativeEvent(IRStruct, tag="native", frozen=True, kw_only=True):
    """A whole block the IR does not model (``gw.ir.NativeBlock``), in stream order: sent
    once complete, so a client of the same format replays it and others leave it out."""

    block: NativeBlock


class UsageEvent(IRStruct, tag="usage", frozen=True, kw_only=True):
    usage: Usage


class Finish(IRStruct, tag="finish", frozen=True, kw_only=True):
    reason: FinishReason
    stop_sequence: str | None = None  # which of the request's stop strings ended it, if known


class ErrorEvent(IRStruct, tag="error", frozen=True, kw_only=True):
    """A failure after the stream was committed; ``code`` is a gw error code."""

    code: str
    message: str


StreamEvent = (
    StreamStart
    | TextDelta
    | ThinkingDelta
    | ToolCallDelta
    | NativeEvent
    | UsageEvent
    | Finish
    | ErrorEvent
)
