"""An Anthropic Messages SSE stream -> IR stream events, incrementally.

The stream is ``message_start``, then per content block ``content_block_start``, deltas and
``content_block_stop``, then ``message_delta`` (stop reason, cumulative usage) and
``message_stop``; ``ping`` may come anywhere and ``event: error`` ends a failed stream.
Events are told apart by the JSON ``type`` (equal to the SSE event name); unknown types are
skipped, as Anthropic's versioning policy asks.

Mapping: ``message_start`` -> ``StreamStart`` + ``UsageEvent``; text -> ``TextDelta``;
thinking -> ``ThinkingDelta`` (text, then the ``signature_delta`` that closes the block);
``redacted_thinking`` -> one ``ThinkingDelta(redacted=...)``; ``tool_use`` -> ``ToolCallDelta``
with the call's own 0-based index (id and name first, then the ``partial_json`` fragments
verbatim); ``message_delta`` -> ``Finish`` + ``UsageEvent``.

Blocks the IR does not model (``server_tool_use``, ``web_search_tool_result``,
``mcp_tool_use``, any type newer than this codec) become one ``NativeEvent`` each, once
complete: a result block arrives whole in ``content_block_start``; a server tool call's
``input_json_delta`` fragments are joined into its ``input``. A text block's
``citations_delta`` becomes a ``NativeEvent`` holding that delta, in place among the
block's ``TextDelta`` s: the text still reaches every client, the citation only an
Anthropic one (which writes it into the open text block).
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from gw.codecs.anthropic_messages.upstream_errors import error_from_payload
from gw.codecs.anthropic_messages.upstream_response import UsageIn, finish_reason, malformed
from gw.codecs.sse import SSEMessage
from gw.codecs.sse_decoder import SSEStreamDecoder
from gw.errors import UpstreamError
from gw.ir import (
    Finish,
    NativeBlock,
    NativeEvent,
    StreamEvent,
    StreamStart,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    UsageEvent,
)

BlockKind = Literal["text", "thinking", "tool_use", "native"]
_AFTER_START = frozenset(
    {
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    }
)
_BLOCK_KINDS: dict[str, BlockKind] = {
    "text": "text",
    "thinking": "thinking",
    "redacted_thinking": "thinking",
    "tool_use": "tool_use",
}


class _MessageStart(msgspec.Struct):
    id: str = ""
    model: str = ""
    usage: UsageIn | None = None


class _Block(msgspec.Struct):
    type: str
    text: str | None = None
    thinking: str | None = None
    signature: str | None = None
    data: str | None = None
    id: str | None = None
    name: str | None = None


class _Delta(msgspec.Struct):
    type: str | None = None
    text: str | None = None
    thinking: str | None = None
    signature: str | None = None
    partial_json: str | None = None
    citation: dict[str, Any] | None = None
    stop_reason: str | None = None
    stop_sequence: str | None = None


class _Event(msgspec.Struct):
    type: str
    message: _MessageStart | None = None
    index: int | None = None
    content_block: _Block | None = None
    delta: _Delta | None = None
    usage: UsageIn | None = None
    error: object | None = None


class _RawStart(msgspec.Struct):
    content_block: dict[str, Any]


_DECODER = msgspec.json.Decoder(_Event)
_RAW_START = msgspec.json.Decoder(_RawStart)
_INPUT = msgspec.json.Decoder(dict[str, Any])


class _ToolBlock:
    """A tool_use block in flight: its IR index, and whether any argument text came."""

    __slots__ = ("index", "sent_arguments")

    def __init__(self, index: int) -> None:
        self.index = index
        self.sent_arguments = False


class _NativeBlock:
    """A block the IR does not model, in flight: as started, and its input fragments."""

    __slots__ = ("data", "fragments")

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data
        self.fragments: list[str] = []

    def complete(self) -> NativeBlock:
        if self.fragments:
            try:
                self.data["input"] = _INPUT.decode("".join(self.fragments))
            except (msgspec.DecodeError, msgspec.ValidationError):
                raise malformed("a server tool's input is not a JSON object") from None
        return NativeBlock(format="anthropic", data=self.data)


class UpstreamStreamDecoder(SSEStreamDecoder):
    """Feed the raw response body as it arrives; call ``close()`` at EOF.

    ``feed`` raises the mapped ``GatewayError`` for an ``error`` event and ``UpstreamError``
    for an event that is not Anthropic's. Events decoded in the same ``feed`` call before the
    failure are returned first; the error is raised by the next ``feed`` or ``close``.
    ``done`` turns true at ``message_stop``.
    """

    def __init__(self) -> None:
        super().__init__()
        self._started = False
        self._finished = False
        self._usage = UsageIn()
        self._blocks: dict[int, BlockKind] = {}
        self._tools: dict[int, _ToolBlock] = {}
        self._native: dict[int, _NativeBlock] = {}
        self._next_tool_index = 0

    def _take_message(self, message: SSEMessage, events: list[StreamEvent]) -> None:
        self._take(message.data, message.event, events)

    def _check_end(self) -> None:
        """End of body: accept it only after ``message_stop``."""
        if not self.done:
            raise UpstreamError("upstream stream ended before message_stop", blame="upstream")

    def _take(self, data: str, name: str | None, events: list[StreamEvent]) -> None:
        try:
            event = _DECODER.decode(data)
        except msgspec.ValidationError as exc:
            raise malformed(str(exc)) from None
        except msgspec.DecodeError:
            raise malformed("a stream event is not JSON") from None
        if name == "error" or event.type == "error":
            raise error_from_payload(event.error)
        if event.type == "message_start":
            self._start(event, events)
            return
        if event.type not in _AFTER_START:
            return  # ping, and event types newer than this codec
        if not self._started:
            raise malformed(f"{event.type} before message_start")
        match event.type:
            case "content_block_start":
                self._block_start(event, data, events)
            case "content_block_delta":
                self._block_delta(event, events)
            case "content_block_stop":
                self._block_stop(event, events)
            case "message_delta":
                self._message_delta(event, events)
            case "message_stop":
                self.done = True

    def _start(self, event: _Event, events: list[StreamEvent]) -> None:
        if self._started:
            raise malformed("a second message_start")
        message = event.message or _MessageStart()
        self._started = True
        events.append(StreamStart(id=message.id, model=message.model))
        if message.usage is not None:
            self._usage = message.usage
            events.append(UsageEvent(usage=self._usage.to_ir()))

    def _block_start(self, event: _Event, data: str, events: list[StreamEvent]) -> None:
        block, index = event.content_block, event.index
        if block is None or index is None:
            raise malformed("content_block_start without index or content_block")
        kind = _BLOCK_KINDS.get(block.type, "native")
        self._blocks[index] = kind
        if kind == "native":  # rare: decoded again, untyped, to keep the block as it came
            self._native[index] = _NativeBlock(_RAW_START.decode(data).content_block)
            return
        if block.type == "text" and block.text:
            events.append(TextDelta(text=block.text))
        elif block.type == "thinking" and (block.thinking or block.signature):
            events.append(ThinkingDelta(text=block.thinking or "", signature=block.signature))
        elif block.type == "redacted_thinking":
            events.append(ThinkingDelta(redacted=block.data or ""))
        elif block.type == "tool_use":
            if not block.id or not block.name:
                raise malformed("a tool_use block without id or name")
            tool = self._tools[index] = _ToolBlock(self._next_tool_index)
            self._next_tool_index += 1
            events.append(ToolCallDelta(index=tool.index, id=block.id, name=block.name))

    def _block_delta(self, event: _Event, events: list[StreamEvent]) -> None:
        delta = event.delta
        if delta is None or event.index is None:
            raise malformed("content_block_delta without index or delta")
        kind = self._blocks.get(event.index)
        if kind is None:
            raise malformed("a delta for a content block that was not started")
        match delta.type:
            case "text_delta" if kind == "text" and delta.text:
                events.append(TextDelta(text=delta.text))
            case "thinking_delta" if kind == "thinking" and delta.thinking:
                events.append(ThinkingDelta(text=delta.thinking))
            case "signature_delta" if kind == "thinking" and delta.signature:
                events.append(ThinkingDelta(signature=delta.signature))
            case "input_json_delta" if kind == "tool_use" and delta.partial_json:
                tool = self._tools[event.index]
                tool.sent_arguments = True
                events.append(ToolCallDelta(index=tool.index, arguments=delta.partial_json))
            case "input_json_delta" if kind == "native" and delta.partial_json:
                self._native[event.index].fragments.append(delta.partial_json)
            case "citations_delta" if kind == "text" and delta.citation is not None:
                citation = {"type": "citations_delta", "citation": delta.citation}
                events.append(NativeEvent(block=NativeBlock(format="anthropic", data=citation)))

    def _block_stop(self, event: _Event, events: list[StreamEvent]) -> None:
        if event.index is None:
            return
        native = self._native.pop(event.index, None)
        if native is not None:
            events.append(NativeEvent(block=native.complete()))
            return
        tool = self._tools.pop(event.index, None)
        if tool is not None and not tool.sent_arguments:
            # A call without input streams no fragment (or an empty one); its arguments are
            # still a JSON object, as in the non-streaming answer.
            events.append(ToolCallDelta(index=tool.index, arguments="{}"))

    def _message_delta(self, event: _Event, events: list[StreamEvent]) -> None:
        delta = event.delta or _Delta()
        if delta.stop_reason is not None and not self._finished:
            self._finished = True
            stop_sequence = delta.stop_sequence if delta.stop_reason == "stop_sequence" else None
            events.append(
                Finish(reason=finish_reason(delta.stop_reason), stop_sequence=stop_sequence)
            )
        if event.usage is not None:
            self._usage = self._usage.updated(event.usage)
            events.append(UsageEvent(usage=self._usage.to_ir()))
